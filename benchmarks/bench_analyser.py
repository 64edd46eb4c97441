"""bm25's analyser (``hqltui.bm25.v2``) against v1 (bm25 over hashbag's tokens), paired.

On one vault (the man1 vault in practice), in one process, interleaved A/B/A/B so
load drifts hit both alike:

* **term-count time**: ``TermCounts`` of every card's text by hashbag's tokens (what
  v1's bm25 counted) and by bm25's analyser (v2), ``--repeats`` times each, median;
* **bm25 query latency**: ``BM25.scores`` over the frozen queries (``--queries``), each
  query timed ``--repeats`` times, median per query, then the median over queries;
  v1's index and v2's index built once each.

Both variants run the same ``TermCounts``/``BM25`` code; only the analyser differs,
which is exactly the change. Prints the load average at start and end.

    python -m benchmarks.bench_analyser VAULT --queries benchmarks/queries/man1.toml
        [--repeats 5] [--name analyser_man1]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

from benchmarks.report import median, write_report
from hqltui.commands.evaluate import read_queries
from hqltui.core.bm25_analyser import BM25_TERMS
from hqltui.core.lexical import BM25, HASHBAG_TOKENS, TermCounts
from producer.vault import load_vault

VARIANTS = {"v1 (hashbag tokens)": HASHBAG_TOKENS, "v2 (bm25 analyser)": BM25_TERMS}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("vault", type=Path)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--name", default="analyser")
    args = p.parse_args(argv)
    texts = [c.text for c in load_vault(args.vault).cards]
    queries = [q.text for q in read_queries(args.queries)]
    start_load = load()
    print(f"load average at start: {start_load}; {len(texts)} cards, {len(queries)} queries")
    count_s: dict[str, list[float]] = {v: [] for v in VARIANTS}
    built: dict[str, BM25] = {}
    for _ in range(args.repeats):
        for name, analyser in VARIANTS.items():
            gc.collect()
            t = time.perf_counter()
            counts = TermCounts(texts, analyser)
            count_s[name].append(time.perf_counter() - t)
            built.setdefault(name, BM25(counts))
    per_query: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for text in queries:
        runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for _ in range(args.repeats):
            for name, index in built.items():
                t = time.perf_counter()
                index.scores(text)
                runs[name].append((time.perf_counter() - t) * 1000.0)
        for name in VARIANTS:
            per_query[name].append(median(runs[name]))
    end_load = load()
    print(f"load average at end: {end_load}")
    base = list(VARIANTS)[0]
    rows = []
    for name in VARIANTS:
        c, q = median(count_s[name]), median(per_query[name])
        rows.append([name, round(c, 3), round(c / median(count_s[base]), 3), round(q, 3),
                     round(q / median(per_query[base]), 3), len(built[name].vocab)])
        print(rows[-1])
    write_report(args.name, f"bm25 analyser v1 vs v2 on {args.vault.name}",
                 ["variant", "term counts s (median)", "x v1", "bm25 query ms (median)", "x v1",
                  "vocabulary"], rows,
                 [f"{len(texts)} cards, {len(queries)} queries from {args.queries.name}, "
                  f"{args.repeats} interleaved repeats",
                  f"load average at start {start_load}, at end {end_load}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
