"""Related cards judged by man pages' SEE ALSO lists (ground truth nobody here wrote).

Input: a folder written by ``python -m benchmarks.seealso`` (``vault/`` with
the SEE ALSO sections removed, and ``seealso.json``), with an embedding index
built on the stripped vault (``hql-semantics build --vault DIR/vault``).

For every card with at least one target in the vault (targets with the same
text as the card left out), each method ranks every other card (the card
itself and its identical-text cards excluded) and we report
recall@k = |top k ∩ targets| / min(|targets|, k), averaged over those cards,
for k = 1, 5, 10, and MRR (first target's reciprocal rank within the top 10).
The shipped row calls ``Relatedness.related`` itself; the others are the
variants tried on the way (vector alone is the baseline).
Then the time of one ``related`` call in process after the session has
loaded, for 100 cards spread over the vault (median and p90).

    python -m benchmarks.bench_related DIR [--name related_man23] [--targets FILE]

The targets parsed from this machine's pages are frozen in
``benchmarks/seealso/man23.json`` and ``man1.json`` (pass one with ``--targets``
to judge against exactly those).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.report import write_report
from hqltui.core.related import LEXICAL_WEIGHT, Relatedness
from hqltui.core.session import Session
from hqltui.core.suggestions import suggest_links

KS = (1, 5, 10)
HUB_NEIGHBOURS = 10
BLOCK = 1024


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def hubness(matrix: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Each card's mean cosine to its ``HUB_NEIGHBOURS`` nearest cards (CSLS's r)."""
    n = matrix.shape[0]
    out = np.zeros(n)
    for lo in range(0, n, BLOCK):
        block = matrix[lo:lo + BLOCK] @ matrix.T
        block[:, ~usable] = -1.0
        block[np.arange(block.shape[0]), np.arange(lo, lo + block.shape[0])] = -1.0
        top = -np.partition(-block, HUB_NEIGHBOURS, axis=1)[:, :HUB_NEIGHBOURS]
        out[lo:lo + BLOCK] = top.mean(axis=1)
    return out


def rrf(scores: np.ndarray, k: int = 60) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(scores.size)
    ranks[order] = np.arange(1, scores.size + 1)
    return 1.0 / (k + ranks)


def measure(cases: list[tuple[int, set[int]]], score: Callable[[int], np.ndarray],
            same: np.ndarray) -> dict[str, float]:
    recall = {k: [] for k in KS}
    reciprocal = []
    for at, relevant in cases:
        scores = np.asarray(score(at), dtype=np.float64).copy()
        scores[same == same[at]] = -np.inf  # the card itself and identical texts
        top = np.lexsort((np.arange(scores.size), -scores))[:max(KS)].tolist()
        for k in KS:
            recall[k].append(len(set(top[:k]) & relevant) / min(len(relevant), k))
        reciprocal.append(next((1 / r for r, i in enumerate(top, 1) if i in relevant), 0.0))
    return {**{f"recall@{k}": float(np.mean(v)) for k, v in recall.items()},
            "mrr@10": float(np.mean(reciprocal))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="a folder written by benchmarks.seealso")
    parser.add_argument("--name", default="related_man23")
    parser.add_argument("--timed", type=int, default=100, help="cards timed in process")
    parser.add_argument("--targets", type=Path, help="default: DIR/seealso.json")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the timings (e.g. on an index of random unit vectors)")
    args = parser.parse_args()
    started = time.perf_counter()
    at_start = load_average()
    print("load average at start:", at_start, flush=True)
    session = Session.load(args.dir / "vault")
    ix = session.index
    if ix is None:
        raise SystemExit(f"{args.dir}: {session.index_refusal}")
    relatedness = Relatedness(session)
    t0 = time.perf_counter()
    relatedness.prepare()
    prepare_s = time.perf_counter() - t0
    terms = relatedness.card_terms
    pos = relatedness.positions
    same = relatedness.hashes
    usable = ix.present & ~ix.excluded
    targets = json.loads((args.targets or args.dir / "seealso.json").read_text())
    cases = []
    for card, listed in sorted(targets.items()):
        at = pos.get(card)
        if at is None or not usable[at]:
            continue
        relevant = {pos[t] for t in listed if t in pos and same[pos[t]] != same[at]}
        if relevant:
            cases.append((at, relevant))
    m = ix.matrix
    unusable = ~usable

    def vector(at: int) -> np.ndarray:
        out = (m @ m[at]).astype(np.float64)
        out[unusable] = -np.inf
        return out

    lexical_rows: dict[tuple[int, int], np.ndarray] = {}

    def lexical(at: int, count: int = relatedness.terms) -> np.ndarray:
        key = (at, count)
        if key not in lexical_rows:
            lexical_rows[key] = terms.row(at, count)
        return lexical_rows[key]

    hub = hubness(m, usable) if not args.timing_only else None
    every = 10**9
    methods: list[tuple[str, Callable[[int], np.ndarray]]] = [
        ("card vectors alone (baseline)", vector),
        ("lexical alone (bm25 term cosine, top 64 terms)", lexical),
        ("lexical alone (all terms)", lambda at: lexical(at, every)),
        ("vectors, hubness-corrected (CSLS, r over 10, γ 0.5)", lambda at: vector(at) - 0.5 * hub),
        ("RRF(vectors, lexical top 64), k 60", lambda at: rrf(vector(at)) + rrf(lexical(at))),
    ]
    for beta in (0.5, 1.0, 2.0, 3.0):
        methods.append((f"vectors + {beta:g} × lexical (top 64)",
                        lambda at, b=beta: vector(at) + b * lexical(at)))
    methods.append((f"vectors + {LEXICAL_WEIGHT:g} × lexical (all terms)",
                    lambda at: vector(at) + LEXICAL_WEIGHT * lexical(at, every)))
    methods.append((f"CSLS vectors + {LEXICAL_WEIGHT:g} × lexical (top 64)",
                    lambda at: vector(at) - 0.5 * hub + LEXICAL_WEIGHT * lexical(at)))

    def shipped(at: int) -> np.ndarray:
        answer = relatedness.related(session.names[at], limit=max(KS))
        out = np.full(len(session.names), -np.inf)
        for n in answer.neighbours:
            out[pos[n.card]] = -n.rank
        return out

    methods.append((f"**shipped: `related` ({relatedness.provenance().method})**", shipped))
    if args.timing_only:
        methods = []
    rows = []
    baseline = None
    for label, score in methods:
        got = measure(cases, score, same)
        baseline = got["recall@10"] if baseline is None else baseline
        rows.append([label, *(round(got[f"recall@{k}"], 3) for k in KS), round(got["mrr@10"], 3),
                     f"{got['recall@10'] - baseline:+.3f}"])
        print(rows[-1], flush=True)
    usable_positions = np.flatnonzero(usable)
    n_random = usable_positions.size - 1
    random10 = float(np.mean([min(10, n_random) / n_random * len(r) / min(len(r), 10)
                              for _, r in cases]))
    if not args.timing_only:
        rows.append(["random (expected)", "", "", round(random10, 3), "", ""])
    # Time: one related() call in process, after the session (and the structures) loaded.
    step = max(1, usable_positions.size // args.timed)
    timed = usable_positions[::step][:args.timed]
    timings = []
    timed_scorer = Relatedness(session)  # answers are kept per scorer: time fresh ones
    timed_scorer.prepare()
    cpu = time.process_time()
    for at in timed.tolist():
        t = time.perf_counter()
        timed_scorer.related(session.names[at], limit=10)
        timings.append((time.perf_counter() - t) * 1000)
    cpu_per_card = (time.process_time() - cpu) / max(1, len(timings)) * 1000
    timings.sort()
    t, cpu = time.perf_counter(), time.process_time()
    suggestions = suggest_links(relatedness, 200)
    suggest_s, suggest_cpu = time.perf_counter() - t, time.process_time() - cpu
    median = timings[len(timings) // 2]
    p90 = timings[int(len(timings) * 0.9)]
    notes = [
        f"{len(session.names)} cards; {len(cases)} with at least one SEE ALSO target in the "
        f"vault ({sum(len(r) for _, r in cases)} targets); SEE ALSO removed from the text the "
        "index and the lexical weights read (`benchmarks.seealso`)",
        f"index: {ix.model}, revision {ix.revision[:19]}…, card vectors",
        f"`related` per card in process after load: median {median:.1f} ms, p90 {p90:.1f} ms "
        f"over {len(timings)} cards (process CPU {cpu_per_card:.1f} ms per card, both threads); "
        f"the structures it reads (links, hashes, term weights) "
        f"made once in {prepare_s:.2f} s",
        f"`suggest_links` (200 pairs) in process after load: {suggest_s:.1f} s wall, "
        f"{suggest_cpu:.1f} s process CPU (both threads), method "
        f"`{suggestions.provenance.method}`",
        f"{time.perf_counter() - started:.1f} s in all; load average at start {at_start}, "
        f"at end {load_average()}",
    ]
    path = write_report(
        args.name,
        f"Related cards: timings on {args.dir.name}" if args.timing_only
        else f"Related cards against SEE ALSO on {args.dir.name}",
        ["method", "recall@1", "recall@5", "recall@10", "MRR@10", "Δ recall@10"],
        rows,
        notes,
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
