"""The semantic scoring kernel with passages against card vectors alone, paired.

What a query costs once the session is loaded, without generating a vault: random
unit vectors for ``--cards`` cards and ``--per-card`` passages each, scored by
``semantic_scores`` (card vectors, float32) and ``best_passage_scores`` (best passage:
the int8 first pass, then the float32 rows of the cards that can reach the cut read
back from an SQLite file as the reader does, ``Float32Rows``), each followed by the
same top-``window`` cut (``rank_indices``), the query vector given to both. The arms
are timed alternately, query by query, so the machine's load falls on both alike (the
ratio is the figure; absolute times carry the load); the first pass alone is timed in
the same rounds. ``bench_passages`` measures the same end to end on a generated vault
(session load and RSS included).

    python -m benchmarks.bench_passage_kernel [--cards 100000] [--per-card 7]
                                              [--queries 24] [--repeats 3] [--work DIR]
                                              [--against OLD_CHECKOUT]

``--work`` keeps the SQLite file of passage vectors between runs (it is rebuilt when
absent or of another size); the vectors themselves are regenerated (seeded).

``--against DIR`` times an older checkout's passage scoring (its
``hqltui/core/passage_scores.py`` and ``ranking.py``, on this checkout's index and
codes) alternately with this one's in the same process, query by query, and reports
the paired ratio: timings of separate processes differ by up to 15 % on one machine
(where each puts its arrays), far more than the changes compared.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from benchmarks.bench_passages import BUDGET_RATIO, rss_mb
from benchmarks.generate import random_unit_vectors
from benchmarks.report import median, write_report

DIMS = 384
WINDOW = 50  # [search] window's default: the cut every semantic column is exact at
STEP = 65536  # rows generated (and written) per step


def passage_index(cards: int, per_card: int, matrix: np.ndarray, work: Path):  # noqa: ANN201
    """A ``PassageIndex`` of random unit passages, card-contiguous, held as the reader holds
    them (int8), their float32 rows in ``work/chunk-CARDS-PER.sqlite``."""
    from hqltui.core.int8_codes import Codes, held_codes, two_planes
    from hqltui.core.passage_index import Float32Rows, PassageIndex
    from producer.passages import DEFAULT_RECIPE

    n = cards * per_card
    codes, fine = np.empty((n, DIMS), dtype=np.int8), np.empty((n, DIMS), dtype=np.int8)
    scale, fine_scale = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)
    errors = np.empty(n, dtype=np.float64)
    error = length = fine_error = fine_length = 0.0
    path = work / f"chunk-{cards}-{per_card}.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("CREATE TABLE IF NOT EXISTS chunk (embedding BLOB NOT NULL)")
    write = conn.execute("SELECT count(*) FROM chunk").fetchone()[0] != n
    if write:
        conn.execute("DELETE FROM chunk")
    for a in range(0, n, STEP):
        rows = random_unit_vectors(min(STEP, n - a), DIMS, seed=10 + a)
        c, s, e, m, c2, s2, e2, m2 = two_planes(rows)
        part = slice(a, a + rows.shape[0])
        codes[part], scale[part], fine[part], fine_scale[part] = c, s, c2, s2
        errors[part] = e
        error, length = max(error, float(e.max())), max(length, float(m.max()))
        fine_error = max(fine_error, float(e2.max()))
        fine_length = max(fine_length, float(m2.max()))
        if write:
            conn.executemany(
                "INSERT INTO chunk (rowid, embedding) VALUES (?, ?)",
                ((a + i + 1, rows[i].tobytes()) for i in range(rows.shape[0])),
            )
    conn.commit()
    card = np.repeat(np.arange(cards, dtype=np.int64), per_card)
    ordinal = np.tile(np.arange(per_card, dtype=np.int64), cards)
    bounds = np.arange(0, n + 1, per_card, dtype=np.int64)
    return PassageIndex(
        recipe=DEFAULT_RECIPE,
        digest="bench",
        vectors=Codes(codes, scale, error, length, fine, fine_scale, fine_error, fine_length,
                      errors),
        cards=held_codes(matrix, planes=2),
        card=card,
        ordinal=ordinal,
        start=ordinal * 100,
        end=ordinal * 100 + 100,
        rowid=np.arange(1, n + 1, dtype=np.int64),
        valid=np.ones(n, dtype=bool),
        bounds=bounds,
        source=Float32Rows(conn, DIMS),
        per_card_max=per_card,
    )


def timed(arm: tuple[Callable[..., Any], Callable[..., Any]], matrix: np.ndarray,
          present: np.ndarray, passages: Any, q: np.ndarray) -> float:
    """ms for one query: the scores exact at the cut, then the top-``WINDOW`` cut."""
    scoring, ranking = arm
    t = time.perf_counter()
    scores, _ = scoring(matrix, present, passages, q, WINDOW)
    ranking(scores, WINDOW)
    return (time.perf_counter() - t) * 1000


def timed_pair(this: tuple[Callable[..., Any], Callable[..., Any]],
               against: tuple[Callable[..., Any], Callable[..., Any]] | None, repeat: int,
               *args: Any) -> tuple[float, float | None]:
    """ms for one query by this checkout and, with ``against``, by the older one, the
    older going first on even repeats (each arm first half the time)."""
    old = timed(against, *args) if against is not None and repeat % 2 == 0 else None
    mine = timed(this, *args)
    if against is not None and repeat % 2 == 1:
        old = timed(against, *args)
    return mine, old


def commit_of(checkout: Path) -> str:
    """The short commit id a checkout is at (its path is never reported)."""
    found = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=False)
    return found.stdout.strip() or "unknown"


def baseline(checkout: Path) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """An older checkout's ``best_passage_scores`` and ``rank_indices``: its scoring and
    ranking modules loaded under other names, every other import this checkout's."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"baseline_{name}", checkout / "hqltui" / "core" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up by name
        spec.loader.exec_module(module)
        return module

    ranking, scoring = load("ranking"), load("passage_scores")
    scoring.refine = ranking.refine  # type: ignore[attr-defined]
    return scoring.best_passage_scores, ranking.rank_indices


def main() -> None:
    from hqltui.core.int8_codes import query_planes
    from hqltui.core.passage_scores import best_passage_scores, first_pass
    from hqltui.core.ranking import rank_indices
    from hqltui.core.semantic import semantic_scores

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--per-card", type=int, default=7)
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=None, help="where the SQLite file is kept")
    parser.add_argument("--against", default=None,
                        help="an older checkout, timed alternately in this process")
    args = parser.parse_args()
    against = baseline(Path(args.against)) if args.against else None
    before = rss_mb()
    with tempfile.TemporaryDirectory(prefix="hql-kernel-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        matrix = random_unit_vectors(args.cards, DIMS, seed=1)
        index = SimpleNamespace(matrix=matrix, present=np.ones(args.cards, dtype=bool))
        passages = passage_index(args.cards, args.per_card, matrix, work)
        setup_s = time.perf_counter() - start
        held = rss_mb()
        queries = random_unit_vectors(args.queries, DIMS, seed=99)
        card_ms, pass_ms, first_ms, old_ms = [], [], [], []
        loads = [os.getloadavg()]
        for q in queries:
            for repeat in range(args.repeats):
                t = time.perf_counter()
                rank_indices(semantic_scores(index, q, WINDOW), WINDOW)
                card_ms.append((time.perf_counter() - t) * 1000)
                mine, old = timed_pair((best_passage_scores, rank_indices), against, repeat,
                                       matrix, index.present, passages, q)
                pass_ms.append(mine)
                if old is not None:
                    old_ms.append(old)
                t = time.perf_counter()
                planes = query_planes(q)
                first_pass(passages, planes.codes[0], planes.scale[0])
                first_ms.append((time.perf_counter() - t) * 1000)
        loads.append(os.getloadavg())
        passages.source.close()
    c, p, f = median(card_ms), median(pass_ms), median(first_ms)
    ratios = [b / a for a, b in zip(card_ms, pass_ms, strict=True)]
    verdict = "met" if p <= BUDGET_RATIO * c else "MISSED"
    first_mb = (passages.vectors.codes.nbytes + passages.cards.codes.nbytes) / 2**20
    floor = first_mb / (matrix.nbytes / 2**20)
    count = passages.count
    rows = [
        ["cards", args.cards, ""],
        ["passages", count, f"{args.per_card} per card"],
        ["passage vectors held (MB, two int8 planes)", round(passages.vectors.nbytes / 2**20, 1),
         f"the pass over every row reads {passages.vectors.codes.nbytes / 2**20:.0f} MB"],
        ["card vectors (MB, float32)", round(matrix.nbytes / 2**20, 1),
         f"+ {passages.cards.nbytes / 2**20:.1f} MB as int8 for the first pass"],
        ["RSS with both held (MB)", round(held, 1), f"+{held - before:.0f} MB"],
        ["peak RSS (MB)", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
         "generation included"],
        ["setup (s)", round(setup_s, 1), "random vectors, the SQLite file (cached with --work)"],
        ["card vectors + cut (ms, median)", round(c, 2), ""],
        ["best passage + cut (ms, median)", round(p, 2),
         f"≤ {BUDGET_RATIO:g}× card vectors: {verdict} ({p / c:.2f}×)"],
        ["median of the paired ratios", round(median(ratios), 2), "best passage / card vectors"],
        *([["older checkout's passage scoring + cut (ms, median)", round(median(old_ms), 2),
             "--against: timed alternately with this one, query by query"],
           ["median of the paired ratios, this ÷ older checkout",
            round(median([b / a for a, b in zip(old_ms, pass_ms, strict=True)]), 3),
            f"{len(old_ms)} pairs"]] if old_ms else []),
        ["first pass alone (ms, median)", round(f, 2),
         f"int8, first plane, every row: {f / c:.2f}× card vectors"],
        ["bytes the first pass reads ÷ the card arm's", round(floor, 2),
         f"{first_mb:.0f} MB of int8 codes against {matrix.nbytes / 2**20:.0f} MB of float32: "
         "both passes are bound by memory bandwidth, so this is the ratio's floor"],
        ["load average (1, 5, 15 min), start", " ".join(f"{x:.2f}" for x in loads[0]), ""],
        ["load average (1, 5, 15 min), end", " ".join(f"{x:.2f}" for x in loads[1]), ""],
    ]
    path = write_report(
        f"passage_kernel_{args.cards}_int8",
        f"Scoring kernel: best passage against card vectors, {args.cards} cards × "
        f"{args.per_card} passages (int8 passes, float32 at the cut)",
        ["measure", "value", "note"],
        rows,
        [f"random unit vectors (384 dims); {args.queries} queries × {args.repeats} runs, the "
         "two arms alternating; each run = scores exact at the cut + the top-50 cut, the "
         "query vector given",
         f"{os.cpu_count()} CPUs; the first pass splits over them, numpy's BLAS does too",
         *([f"--against: the checkout at commit {commit_of(Path(args.against))}"]
           if args.against else [])],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
