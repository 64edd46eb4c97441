"""The passage scoring kernel on a real index, against card vectors alone, paired.

``bench_passage_kernel`` scores random unit vectors, whose scores crowd around zero
(the worst case for the count of cards above zero, which must be exact); this scores
an index built from real text with the stored query vectors of labelled query sets
(built with ``hql-semantics build --passages --query=TEXT ...``). Each query: the card
arm (``semantic_scores``) and the passage arm (``best_passage_scores``), each followed
by the same top-``window`` cut, alternating query by query; and how many cards and
passage rows the second pass scored, on average.

    python -m benchmarks.bench_passage_real --vault VAULT QUERIES.toml [...] [--repeats 5]

For a paired A/B with an older checkout, ``--against DIR`` times that checkout's
passage scoring alternately with this one's in this process (``bench_passage_kernel``
says how and why); an older checkout may also run this file as a script, with that
checkout first on the path (``PYTHONPATH=OLD python benchmarks/bench_passage_real.py``:
its ``hqltui`` scores, its ``benchmarks/results`` gets the report).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.report import median, write_report

WINDOW = 50


def main() -> None:
    from hqltui.core import passage_scores
    from hqltui.core.evaluation import read_queries
    from hqltui.core.ranking import rank_indices
    from hqltui.core.semantic import query_vector, semantic_scores
    from hqltui.core.session import Session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True)
    parser.add_argument("queries", nargs="+", help="labelled query sets (TOML)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--name", default=None, help="the report's name (default: the vault's)")
    parser.add_argument("--against", default=None,
                        help="an older checkout, timed alternately in this process")
    args = parser.parse_args()
    from benchmarks.bench_passage_kernel import baseline, commit_of, timed_pair

    against = baseline(Path(args.against)) if args.against else None
    root = Path(args.vault)
    session = Session.load(root)
    ix = session.index
    if ix is None or ix.passages is None:
        raise SystemExit(f"{root}: no semantic index with passages")
    passages = ix.passages
    vectors = []
    for query in (q for path in args.queries for q in read_queries(Path(path))):
        qv = query_vector(ix, session.vault, session.config, query.text)
        if qv.vector is not None:
            vectors.append(qv.vector)
    if not vectors:
        raise SystemExit("no stored query vector for these queries (build with --query=TEXT)")

    scored = {"cards": 0, "rows": 0}
    plain = passage_scores.fine_dots

    def counted(held, rows, q):  # noqa: ANN001, ANN202
        scored["cards" if held is passages.cards else "rows"] += rows.size
        return plain(held, rows, q)

    passage_scores.fine_dots = counted
    for v in vectors:
        passage_scores.best_passage_scores(ix.matrix, ix.present, passages, v, WINDOW)
    passage_scores.fine_dots = plain
    pass2 = (scored["cards"] / len(vectors), scored["rows"] / len(vectors))

    card_ms, pass_ms, ratios, old_ms = [], [], [], []
    this = (passage_scores.best_passage_scores, rank_indices)
    loads = [os.getloadavg()]
    for repeat in range(args.repeats):
        for v in vectors:
            t = time.perf_counter()
            rank_indices(semantic_scores(ix, v, WINDOW), WINDOW)
            card = (time.perf_counter() - t) * 1e3
            passage, old = timed_pair(this, against, repeat, ix.matrix, ix.present, passages, v)
            if old is not None:
                old_ms.append(old)
            card_ms.append(card)
            pass_ms.append(passage)
            ratios.append(passage / card)
    loads.append(os.getloadavg())
    cards = int(ix.present.sum())
    rows = [
        ["cards with a vector", cards, ""],
        ["passages", passages.count, f"{passages.count / max(cards, 1):.1f} per card"],
        ["queries", len(vectors), f"stored vectors; {args.repeats} runs each"],
        ["card vectors + cut (ms, median)", round(median(card_ms), 3), ""],
        ["passages + cut (ms, median)", round(median(pass_ms), 3), ""],
        ["median of the paired ratios", round(median(ratios), 3), "passages / card vectors"],
        *([["older checkout's passages + cut (ms, median)", round(median(old_ms), 3),
            f"--against: commit {commit_of(Path(args.against))}, timed alternately"],
           ["median of the paired ratios, this ÷ older checkout",
            round(median([b / a for a, b in zip(old_ms, pass_ms, strict=True)]), 3),
            f"{len(old_ms)} pairs"]] if old_ms else []),
        ["cards the second pass scored (mean)", round(pass2[0]), ""],
        ["passage rows the second pass scored (mean)", round(pass2[1]), ""],
        ["load average (1, 5, 15 min), start", " ".join(f"{x:.2f}" for x in loads[0]), ""],
        ["load average (1, 5, 15 min), end", " ".join(f"{x:.2f}" for x in loads[1]), ""],
    ]
    name = args.name or root.name
    path = write_report(
        f"passage_kernel_real_{name}",
        f"Scoring kernel on a real index ({name}): passages against card vectors",
        ["measure", "value", "note"],
        rows,
        [f"query vectors stored in the index for {', '.join(Path(q).name for q in args.queries)}"
         "; each run = scores exact at the cut + the top-50 cut, the two arms alternating"],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
