"""`tune` held out: on each corpus's frozen sets, tune on alternate queries, judge the winner
on the others (and the other way round), and time the run.

For each vault the frozen queries are split by position (even / odd); ``tune``
(the default grid) picks a winner on one half, and the winner's MRR@10 on the
other half is compared with the better arm there, per kind (``eval``'s metrics,
one ``Session``). The issue's bar: ≥ 0.97 × the better arm on each kind. Also
times a warm ``tune`` over all of a corpus's queries (arm scores once per query,
then arithmetic). Writes ``results/tune.{json,md}`` and prints both halves' tables.

    python -m benchmarks.bench_tune --man1 VAULT --man23 VAULT
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_report
from hqltui.commands.tune import table
from hqltui.core.evaluation import DEPTH, read_queries, reciprocal_rank
from hqltui.core.session import Session
from hqltui.core.tune import tune

QUERIES = Path(__file__).resolve().parent / "queries"
BAR = 0.97


def judge(session: Session, queries: list[Any], config: Any) -> dict[str, dict[str, float]]:
    """Per kind: the config's MRR@10, the better arm's, and their ratio, on ``queries``."""
    lexical = session.search.lexical
    sums: dict[str, dict[str, float]] = {}
    for q in queries:
        windows = session.arm_windows(q.text, lexical=lexical, limit=DEPTH)
        got = sums.setdefault(q.kind, {"n": 0, "fused": 0.0, "lexical": 0.0, "semantic": 0.0})
        got["n"] += 1
        for arm, scored in windows.items():
            key = "lexical" if arm == lexical else "semantic"
            got[key] += reciprocal_rank(session.ranking_of(scored, DEPTH).names(), q.relevant)
        fused = session.fuse(q.text, list(windows.values()), DEPTH, config)
        got["fused"] += reciprocal_rank(fused.names(), q.relevant)
    out = {}
    for kind, s in sums.items():
        better = max(s["lexical"], s["semantic"]) / s["n"]
        mine = s["fused"] / s["n"]
        out[kind] = {"n": s["n"], "mrr": mine, "better": better,
                     "ratio": mine / better if better else 1.0}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--man1", type=Path, required=True)
    parser.add_argument("--man23", type=Path, required=True)
    parser.add_argument("--grid", default="default")
    args = parser.parse_args()
    rows: list[list[Any]] = []
    notes: list[str] = []
    for corpus, vault in (("man1", args.man1), ("man23", args.man23)):
        session = Session.load(vault)
        queries = read_queries(QUERIES / f"{corpus}.toml")
        tune(session, queries[:8] + queries[-8:], grid="small")  # warm: model, caches
        started = time.perf_counter()
        whole = tune(session, queries, grid=args.grid)
        seconds = time.perf_counter() - started
        notes.append(f"{corpus}: warm tune of all {len(queries)} queries over {whole.total} "
                     f"configurations took {seconds:.1f} s (winner "
                     f"`{whole.best.config.label() if whole.best else '-'}`)")
        halves = {"even": queries[0::2], "odd": queries[1::2]}
        for name, train in halves.items():
            test = halves["odd" if name == "even" else "even"]
            result = tune(session, train, grid=args.grid)
            assert result.best is not None
            print(f"\n{corpus}: tuned on the {name} half ({len(train)} queries)")
            print("\n".join(table(result, 10)))
            scores = judge(session, test, result.best.config)
            for kind, s in sorted(scores.items()):
                rows.append([corpus, f"tuned on {name}, judged on the other", kind, s["n"],
                             f"`{result.best.config.label()}`", s["better"], s["mrr"],
                             f"{s['ratio']:.2f}", "ok" if s["ratio"] >= BAR else "below"])
    notes.append(f"bar: the winner's MRR@{DEPTH} on the half it did not see ≥ {BAR} × the "
                 "better arm there, per kind; the machine's 2 CPUs are shared, so timings "
                 "carry its load")
    md = write_report("tune", "tune: winners judged on the half they did not see",
                      ["corpus", "split", "kind", "n", "winner", "better arm", "winner mrr@10",
                       "ratio", "verdict"], rows, notes)
    print()
    print(md.read_text())


if __name__ == "__main__":
    main()
