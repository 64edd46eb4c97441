"""The semantic scoring kernel with passages against card vectors alone, paired.

What a query costs once the session is loaded, without generating a vault: random
unit vectors for ``--cards`` cards and ``--per-card`` passages each, scored by
``semantic_scores`` (card vectors) and ``best_passage_scores`` (best passage, held as
``--hold``), each followed by the same top-``window`` cut (``rank_indices``). The two
are timed alternately, query by query, so the machine's load falls on both alike
(the ratio is the figure; absolute times carry the load). Held as int16, the float32
rows of the cut are read back from an SQLite file as the reader does
(``Float32Rows``). ``bench_passages`` measures the same end to end on a generated
vault (session load and RSS included).

    python -m benchmarks.bench_passage_kernel [--cards 100000] [--per-card 7]
                                              [--hold float32|int16] [--queries 24]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from benchmarks.bench_passages import BUDGET_RATIO, rss_mb
from benchmarks.generate import random_unit_vectors
from benchmarks.report import median, write_report

DIMS = 384
WINDOW = 50  # [search] window's default: the cut every semantic column is exact at
STEP = 65536  # rows generated (and written) per step


def passage_index(cards: int, per_card: int, hold: str, work: Path):  # noqa: ANN201
    """A ``PassageIndex`` of random unit passages, card-contiguous, held as ``hold``."""
    from hqltui.core.passages import Float32Rows, PassageIndex, quantise
    from producer.passages import DEFAULT_RECIPE

    n = cards * per_card
    vectors = np.empty((n, DIMS), dtype=np.float32 if hold == "float32" else np.int16)
    scale = None if hold == "float32" else np.empty(n, dtype=np.float32)
    conn = None
    if hold == "int16":
        conn = sqlite3.connect(work / "chunk.sqlite", check_same_thread=False)
        conn.execute("CREATE TABLE chunk (embedding BLOB NOT NULL)")
    for a in range(0, n, STEP):
        rows = random_unit_vectors(min(STEP, n - a), DIMS, seed=10 + a)
        if scale is None:
            vectors[a : a + rows.shape[0]] = rows
        else:
            vectors[a : a + rows.shape[0]], scale[a : a + rows.shape[0]] = quantise(rows)
            conn.executemany(
                "INSERT INTO chunk (rowid, embedding) VALUES (?, ?)",
                ((a + i + 1, rows[i].tobytes()) for i in range(rows.shape[0])),
            )
    if conn is not None:
        conn.commit()
    card = np.repeat(np.arange(cards, dtype=np.int64), per_card)
    ordinal = np.tile(np.arange(per_card, dtype=np.int64), cards)
    bounds = np.arange(0, n + 1, per_card, dtype=np.int64)
    return PassageIndex(
        recipe=DEFAULT_RECIPE,
        digest="bench",
        vectors=vectors,
        card=card,
        ordinal=ordinal,
        start=ordinal * 100,
        end=ordinal * 100 + 100,
        rowid=np.arange(1, n + 1, dtype=np.int64),
        valid=np.ones(n, dtype=bool),
        bounds=bounds,
        source=None if conn is None else Float32Rows(conn, DIMS),
        scale=scale,
        per_card_max=per_card,
    )


def main() -> None:
    from hqltui.core.passages import best_passage_scores
    from hqltui.core.ranking import rank_indices
    from hqltui.core.semantic import semantic_scores

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--per-card", type=int, default=7)
    parser.add_argument("--hold", choices=["float32", "int16"], default="int16")
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    before = rss_mb()
    with tempfile.TemporaryDirectory(prefix="hql-kernel-") as tmp:
        start = time.perf_counter()
        matrix = random_unit_vectors(args.cards, DIMS, seed=1)
        index = SimpleNamespace(matrix=matrix, present=np.ones(args.cards, dtype=bool))
        passages = passage_index(args.cards, args.per_card, args.hold, Path(tmp))
        setup_s = time.perf_counter() - start
        held = rss_mb()
        queries = random_unit_vectors(args.queries, DIMS, seed=99)
        card_ms, pass_ms = [], []
        for q in queries:
            for _ in range(args.repeats):
                t = time.perf_counter()
                rank_indices(semantic_scores(index, q, WINDOW), WINDOW)
                card_ms.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                scores, _ = best_passage_scores(matrix, index.present, passages, q, WINDOW)
                rank_indices(scores, WINDOW)
                pass_ms.append((time.perf_counter() - t) * 1000)
        if passages.source is not None:
            passages.source.close()
    c, p = median(card_ms), median(pass_ms)
    verdict = "met" if p <= BUDGET_RATIO * c else "MISSED"
    count = passages.count
    rows = [
        ["cards", args.cards, ""],
        ["passages", count, f"{args.per_card} per card"],
        [f"passage vectors held (MB, {args.hold})", round(passages.vectors.nbytes / 2**20, 1),
         f"+ scales {0 if passages.scale is None else passages.scale.nbytes / 2**20:.1f} MB"],
        ["card vectors (MB, float32)", round(matrix.nbytes / 2**20, 1), ""],
        ["RSS with both held (MB)", round(held, 1), f"+{held - before:.0f} MB"],
        ["peak RSS (MB)", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
         "generation included"],
        ["setup (s)", round(setup_s, 1), "random vectors, and the SQLite file for int16"],
        ["card vectors + cut (ms, median)", round(c, 2), ""],
        ["best passage + cut (ms, median)", round(p, 2),
         f"≤ {BUDGET_RATIO:g}× card vectors: {verdict} ({p / c:.2f}×)"],
        ["load average (1, 5, 15 min)", " ".join(f"{x:.2f}" for x in os.getloadavg()), ""],
    ]
    path = write_report(
        f"passage_kernel_{args.cards}_{args.hold}",
        f"Scoring kernel: best passage against card vectors, {args.cards} cards × "
        f"{args.per_card} passages ({args.hold} held)",
        ["measure", "value", "note"],
        rows,
        [f"random unit vectors (384 dims); {args.queries} queries × {args.repeats} runs, the "
         "two arms alternating; each run = scores exact at the cut + the top-50 cut",
         "exact best-passage scoring reads per-card × the card vectors (int16 rows cost "
         "about what float32 rows do: the conversion, not memory, bounds them)"],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
