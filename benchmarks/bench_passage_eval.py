"""Card vectors against passages (each card by its vector and its best passage) on a real vault
built with passages, per kind.

Loads the vault once and runs ``eval``'s own code (``core.evaluation.evaluate``) on
the labelled queries whose relevant pages are all in the vault, twice: scoring by
best passage, and on card vectors alone (``Session.card_level``), so both semantic
rows and both hybrid rows (the default fusion over each) come from the same index.

    python -m benchmarks.bench_passage_eval VAULT [--queries benchmarks/queries/man23.toml]
                                            [--name passages_eval_man23]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.report import write_report
from hqltui.core.evaluation import evaluate, read_queries
from hqltui.core.names import HYBRID
from hqltui.core.session import Session

QUERIES = Path(__file__).resolve().parent / "queries"
METRICS = ("hit@1", "hit@5", "mrr@10", "recall@10")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--queries", type=Path, default=QUERIES / "man23.toml")
    parser.add_argument("--name", default="passages_eval_man23")
    args = parser.parse_args()
    started = time.perf_counter()
    session = Session.load(args.vault)
    if not session.scores_passages:
        raise SystemExit(f"{args.vault}: the index holds no passages ({session.index_refusal})")
    names = set(session.names)
    labelled = read_queries(args.queries)
    kept = [q for q in labelled if all(r in names for r in q.relevant)]
    passages = evaluate(session, kept)
    cards = evaluate(session.card_level(), kept)
    lexical = session.search.lexical
    rows = []
    kinds = ["all", *sorted(passages.by_kind)]
    for kind in kinds:
        p = passages.overall if kind == "all" else passages.by_kind[kind]
        c = cards.overall if kind == "all" else cards.by_kind[kind]
        for label, tally in ((lexical, p[lexical]), ("semantic (card vectors)", c["semantic"]),
                             ("semantic (passages)", p["semantic"]),
                             ("hybrid (card vectors)", c[HYBRID]),
                             ("hybrid (passages)", p[HYBRID])):
            row = tally.row()
            rows.append([kind, label, row["queries"], *(round(row[m], 3) for m in METRICS)])
    ix = session.index.passages
    counts = np.diff(ix.bounds)
    counts = counts[counts > 0]
    index_file = Path(session.index.path)
    index_file = index_file if index_file.is_absolute() else args.vault / index_file
    notes = [
        f"{len(kept)} of {len(labelled)} labelled queries of `{args.queries.name}` (those whose "
        "relevant pages are all in the vault); query vectors stored by the build",
        f"{ix.count} passages over {counts.size} cards (mean {counts.mean():.2f}, max "
        f"{counts.max()} per card); index {index_file.stat().st_size / 2**20:.1f} MB"
        if index_file.exists() else f"{ix.count} passages",
        f"default fusion `{session.search.fusion_config().label()}` over {lexical} + semantic",
        f"{time.perf_counter() - started:.1f} s in all; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]
    path = write_report(
        args.name,
        f"Card vectors against passages: eval on {args.vault.name}, {args.queries.name}",
        ["queries", "arm", "n", *METRICS],
        rows,
        notes,
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
