"""Semantic query latency with passages against card vectors alone, on a generated vault.

The vault is ``benchmarks.generate``'s (deterministic cards); its index holds
random unit vectors under the real model id and revision for every card, the
benchmark queries, and ``--per-card`` passages per card (random unit vectors
too, offsets inside each card's text), so no model runs. Measured on one
``Session``: the semantic arm's median latency (``Session.rank``, limit 20,
each query ``--repeats`` times) scoring by best passage and on card vectors
alone (``Session.card_level``), the session load, and the process's resident
memory after loading. Then (``--app-queries``, default 4) the app itself on a
120×36 pseudo-terminal (``bench_app.run_on_pty``): one start that fills its parse
cache, then one that types that many of the queries (their prefixes are stored in
the index too, so no model is loaded) and reports the app process's peak RSS and the
keystroke → three columns latency.

    python -m benchmarks.bench_passages [--cards 100000] [--per-card 7] [--repeats 3]
                                        [--work DIR]

The two arms alternate run by run (passages, cards, passages, ...), so the machine's
load falls on both alike; the median of the paired ratios is reported beside the ratio
of the medians. ``--work`` keeps the generated vault and its parse cache between runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import tempfile
import time
from pathlib import Path

from benchmarks.bench_retrieval import timed
from benchmarks.generate import generate_vault, random_unit_vectors, sample_queries
from benchmarks.report import median, write_report

LIMIT = 20
BUDGET_RATIO = 2.0  # issue 24: with passages ≤ 2× the card-level arm


def rss_mb() -> float:
    """Resident memory of this process now (Linux ``/proc``), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def generate_passage_index(root: Path, queries: list[str], per_card: int, seed: int = 1) -> Path:
    """Card vectors, query vectors and ``per_card`` passages per card, all random unit
    vectors, written through the producer's writer a card chunk at a time."""
    from producer.embedders.local import DEFAULT_MODEL_ID, local_revision
    from producer.index_format import CardRow, ChunkRow, MetaRow, ModelRow, QueryRow
    from producer.index_writer import IndexWriter
    from producer.passages import DEFAULT_RECIPE
    from producer.vault import load_vault

    vault = load_vault(root)
    out = root / ".hql" / "index.sqlite"
    out.parent.mkdir(parents=True, exist_ok=True)
    model = ModelRow(DEFAULT_MODEL_ID, local_revision(), 384)
    meta = MetaRow(vault=root.name, built_at="2026-01-01T00:00:00+00:00")
    step = 2048
    with IndexWriter(out, model, meta, DEFAULT_RECIPE) as writer:
        for a in range(0, len(vault.cards), step):
            cards = vault.cards[a : a + step]
            vectors = random_unit_vectors(len(cards) * (1 + per_card), seed=seed + a)
            writer.add_cards(
                CardRow(c.name, c.path, c.content_hash, vectors[i].tobytes())
                for i, c in enumerate(cards)
            )
            rows = []
            for i, c in enumerate(cards):
                n = len(c.text)
                for o in range(per_card):
                    start = n * o // per_card
                    end = max(n * (o + 1) // per_card, start + 1)
                    blob = vectors[len(cards) + i * per_card + o].tobytes()
                    rows.append(ChunkRow(c.name, o, start, min(end, n), blob))
            writer.add_chunks(rows)
        qv = random_unit_vectors(len(queries), seed=seed + 10**9)
        writer.add_queries(QueryRow(t, qv[j].tobytes()) for j, t in enumerate(sorted(queries)))
        writer.commit()
    return out


def typed_texts(queries: list[str]) -> list[str]:
    """The queries and every prefix the app is sent while they are typed."""
    return sorted({q[:i] for q in queries for i in range(1, len(q) + 1)})


def ensure_queries(index: Path, texts: list[str], seed: int = 7) -> int:
    """Store a random unit vector for each of ``texts`` the index lacks (a generated
    index: any vector will do); how many were added."""
    import sqlite3

    with sqlite3.connect(index) as conn:
        have = {t for (t,) in conn.execute("SELECT text FROM query")}
        missing = [t for t in texts if t not in have]
        vectors = random_unit_vectors(len(missing), seed=seed)
        conn.executemany("INSERT INTO query (text, embedding) VALUES (?, ?)",
                         ((t, vectors[i].tobytes()) for i, t in enumerate(missing)))
    return len(missing)


def app_rows(root: Path, base: Path, typed: list[str]) -> list[list[object]]:
    """The app on a pseudo-terminal: a start that fills its caches, then one that types."""
    from benchmarks.bench_app import run_on_pty

    cache = base / "app-cache"
    cache.mkdir(parents=True, exist_ok=True)
    first = run_on_pty(root, cache, timeout=1800)
    loads = os.getloadavg()
    second = run_on_pty(root, cache, typed, timeout=1800)
    shown = second.events.get("ranking-ready", (float("nan"), False))
    torch = any(t for _, t in second.events.values())
    return [
        ["app peak RSS, first start (MB)", round(first.peak_rss / 2**20, 1),
         "fills the parse cache (cold unless kept with --work)"],
        ["app peak RSS, typing (MB)", round(second.peak_rss / 2**20, 1),
         f"{len(typed)} queries typed, their prefixes stored; torch loaded: "
         f"{'yes' if torch else 'no'}"],
        ["app: vault shown, ranking ready (s)", round(shown[0], 2), "the typing run (warm)"],
        ["app: keystroke → three columns (ms, median)", round(median(second.keys_ms), 1)
         if second.keys_ms else "n/a", "the last key of each typed query, debounce included"],
        ["load average (1, 5, 15 min), app runs", " ".join(f"{x:.2f}" for x in loads), ""],
    ]


def main() -> None:
    from hqltui.core.session import Session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--per-card", type=int, default=7)
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=None, help="where the generated vault is kept")
    parser.add_argument("--app-queries", type=int, default=4,
                        help="queries typed into the app for its RSS (0: no app run)")
    args = parser.parse_args()
    base = Path(args.work or Path(tempfile.gettempdir()) / "hql-bench-passages")
    root = base / f"vault-{args.cards}-{args.per_card}"
    queries = sample_queries(args.queries)
    if not (root / "hql.toml").exists():
        generate_vault(root, args.cards)
    index = root / ".hql" / "index.sqlite"
    if not index.exists():
        generate_passage_index(root, queries, args.per_card)
    typed = queries[: args.app_queries]
    ensure_queries(index, typed_texts(typed))
    cache = base / "cache"
    warm = cache.is_dir() and any(cache.rglob("*.pickle"))
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    session = Session.load(root, cache_dir=cache)
    load_s = time.perf_counter() - start
    after = rss_mb()
    assert session.index is not None and session.index.passages is not None, session.index_refusal
    cards = session.card_level()
    passages, card_level = [], []
    loads = [os.getloadavg()]
    for text in queries:
        check = session.rank(text, "semantic", limit=LIMIT)
        assert check.ok and check.hits and check.hits[0].passage is not None, check.refusal
        for _ in range(args.repeats):
            passages.append(timed(lambda t=text, s=session: s.rank(t, "semantic", limit=LIMIT), 1))
            card_level.append(timed(lambda t=text, s=cards: s.rank(t, "semantic", limit=LIMIT), 1))
    loads.append(os.getloadavg())
    p, c = median(passages), median(card_level)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    count = session.index.passages.count
    verdict = "met" if p <= BUDGET_RATIO * c else "MISSED"
    rows = [
        ["cards", args.cards, ""],
        ["passages", count, f"{count / args.cards:.1f} per card"],
        ["index size (MB)", round(index.stat().st_size / 2**20, 1), ""],
        ["session load (s)", round(load_s, 2),
         "warm parse cache" if warm else "cold: the first load of this vault"],
        ["semantic, card vectors (ms, median)", round(c, 2), ""],
        ["semantic, best passage (ms, median)", round(p, 2),
         f"≤ {BUDGET_RATIO:g}× card vectors: {verdict} ({p / c:.2f}×)"],
        ["median of the paired ratios", round(median([a / b for a, b in zip(
            passages, card_level, strict=True)]), 2), "best passage / card vectors, run by run"],
        ["RSS after load (MB)", round(after, 1), f"+{after - before:.0f} MB for the session"],
        ["peak RSS (MB)", round(peak, 1), ""],
        [f"passage vectors held (MB, {session.index.passages.held})",
         round(session.index.passages.vectors.nbytes / 2**20, 1),
         f"+ card vectors as int8 {session.index.passages.cards.nbytes / 2**20:.1f} MB"],
        ["load average (1, 5, 15 min), start", " ".join(f"{x:.2f}" for x in loads[0]), ""],
        ["load average (1, 5, 15 min), end", " ".join(f"{x:.2f}" for x in loads[1]), ""],
    ]
    del session, cards
    gc.collect()
    if typed:
        rows += app_rows(root, base, typed)
    path = write_report(
        f"passages_{args.cards}",
        f"Semantic with passages at {args.cards} generated cards",
        ["measure", "value", "note"],
        rows,
        ["random unit vectors under the real model id and revision; limit 20; "
         f"{args.queries} queries × {args.repeats} runs, the arms alternating, median; "
         "each run is `Session.rank` (stored query vector, scores exact at the window of "
         "50, the cut, the hits)"],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
