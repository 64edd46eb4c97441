"""Per-query latency of each retrieval arm, and warm Session load, at 10k and 100k cards.

Vaults come from ``benchmarks.generate`` (deterministic cards; an index of
random unit vectors stored under the real model id and revision, holding the
benchmark queries, so no model runs). For each size:

* ``Session`` load, cold (empty parse cache) once, then warm (the parse cache
  from the cold run serves unchanged files): vault + ``hql.toml`` + index +
  lexical structures, as the app does it;
* per query (>= 20 queries, each timed ``--repeats`` times, median taken):
  ``hashbag``, ``bm25``, ``semantic`` (``Session.rank``, limit 20) and
  ``hybrid`` (``Session.query``: both arms, then the fusion);
* beside them, in the same run, a contiguous float32 ``M @ q`` over the same
  matrix the semantic arm scores.

    python -m benchmarks.bench_retrieval [--sizes 10000,100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.generate import generate_index, generate_vault, sample_queries
from benchmarks.report import median, write_report
from hqltui.core.session import Session

LIMIT = 20
BUDGETS_MS = {"hashbag": 50.0, "bm25": 50.0}
LOAD_BUDGET_S = {10_000: 2.0, 100_000: 20.0}  # warm


def prepared(n: int, base: Path, queries: list[str]) -> Path:
    root = base / f"vault-{n}"
    if not (root / "hql.toml").exists():
        generate_vault(root, n)
    if not (root / ".hql" / "index.sqlite").exists():
        generate_index(root, queries)
    return root


def timed(fn, repeats: int) -> float:
    """Median milliseconds of ``repeats`` calls."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000.0)
    return median(runs)


def bench_size(n: int, base: Path, queries: list[str], repeats: int) -> dict[str, float]:
    root = prepared(n, base, queries)
    cache_dir = Path(tempfile.mkdtemp(prefix="hql-bench-cache-"))
    try:
        gc.collect()
        start = time.perf_counter()
        session = Session.load(root, cache_dir=cache_dir)
        cold = time.perf_counter() - start
        del session
        gc.collect()
        warm_runs = []
        for _ in range(2):
            start = time.perf_counter()
            session = Session.load(root, cache_dir=cache_dir)
            warm_runs.append(time.perf_counter() - start)
            if len(warm_runs) < 2:
                del session
                gc.collect()
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    assert session.index is not None, session.index_refusal
    assert len(session.names) == n
    matrix = session.index.matrix
    assert matrix.dtype == np.float32 and matrix.flags["C_CONTIGUOUS"]

    arms = ("M@q", "hashbag", "bm25", "semantic", "hybrid")
    per_arm: dict[str, list[float]] = {a: [] for a in arms}
    for text in queries:
        check = session.rank(text, "semantic", limit=LIMIT)
        assert check.ok and check.retrieval.query_vector_source == "index", check.refusal
        q = np.frombuffer(session.index.queries[text], dtype="<f4").astype(np.float32)
        per_arm["M@q"].append(timed(lambda q=q: matrix @ q, repeats))
        for arm in ("hashbag", "bm25", "semantic"):
            per_arm[arm].append(
                timed(lambda arm=arm, t=text: session.rank(t, arm, limit=LIMIT), repeats)
            )
        per_arm["hybrid"].append(
            timed(lambda t=text: session.query(t, limit=LIMIT).hybrid, repeats)
        )
    result = {arm: median(values) for arm, values in per_arm.items()}
    result["load_cold_s"] = cold
    result["load_warm_s"] = median(warm_runs)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=None, help="where generated vaults are kept")
    args = parser.parse_args()
    base = Path(args.work or Path(tempfile.gettempdir()) / "hql-bench-retrieval")
    queries = sample_queries(args.queries)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        r = bench_size(n, base, queries, args.repeats)
        verdicts = []
        if n == 100_000:
            verdicts.append(
                f"semantic ≤ 2× M@q {'met' if r['semantic'] <= 2 * r['M@q'] else 'MISSED'}"
            )
            for arm, budget in BUDGETS_MS.items():
                verdicts.append(f"{arm} ≤ {budget:g} ms {'met' if r[arm] <= budget else 'MISSED'}")
            arms_sum = r["bm25"] + r["semantic"] + 10.0
            verdicts.append(
                f"hybrid ≤ bm25 + semantic + 10 ms {'met' if r['hybrid'] <= arms_sum else 'MISSED'}"
            )
        if n in LOAD_BUDGET_S:
            b = LOAD_BUDGET_S[n]
            verdicts.append(f"warm load ≤ {b:g} s {'met' if r['load_warm_s'] <= b else 'MISSED'}")
        rows.append(
            [
                n,
                r["M@q"],
                r["hashbag"],
                r["bm25"],
                r["semantic"],
                r["hybrid"],
                r["load_cold_s"],
                r["load_warm_s"],
                "; ".join(verdicts) or "no budget",
            ]
        )
        print(rows[-1], flush=True)
    md = write_report(
        "retrieval",
        "Retrieval: median per-query latency per arm, and Session load",
        [
            "cards",
            "M@q ms",
            "hashbag ms",
            "bm25 ms",
            "semantic ms",
            "hybrid ms",
            "load cold s",
            "load warm s",
            "budgets",
        ],
        rows,
        [
            f"{args.queries} queries of 2-3 vocabulary words, each timed {args.repeats}× "
            "(median), then the median over queries; limit 20, [search] defaults "
            "(bm25 fused, window 50, k 60)",
            "M@q: a contiguous float32 matrix-vector product over the same (cards × 384) "
            "matrix the semantic arm scores, in the same run",
            "semantic: query vector from the index's query table; scores refined in float64 "
            "at the cut; hybrid = Session.query (bm25 + semantic + fusion)",
            "load = vault (parse cache) + hql.toml + index + lexical structures; "
            "cold = empty parse cache, warm = the cache the cold load wrote",
        ],
    )
    print(md.read_text())


if __name__ == "__main__":
    main()
