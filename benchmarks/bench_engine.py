"""Engine client timings against the FAKE Hotdata server (a test stand-in, not the engine).

The fake answers SQL with DataFusion, BM25 with Tantivy and the index-served vector
shape with USearch, all in this process's threads on loopback. So these figures
measure this client plus those open parts on this machine -- not the hosted
Hotdata engine, whose network, storage and job scheduling are absent here.

For a generated vault (random unit vectors stored under the real model id) it times:
sync (Parquet build, upload, load, row re-read) and build (BM25 + vector index jobs),
then the median latency per engine query: bm25, vector (index-served, approximate),
vector --exact (full scan) and hybrid (one RRF statement).

    python -m benchmarks.bench_engine [--cards 10000] [--queries 24]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.generate import generate_index, generate_vault, sample_queries
from benchmarks.report import median, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=24)
    parser.add_argument("--keep", help="keep the generated vault in this directory")
    args = parser.parse_args()

    import hotdata

    from hqltui.core.engine import LocalCards, Options, build, search, settings_or_refuse, sync
    from hqltui.core.semantic import embed_local
    from tests.fake_hotdata import FakeHotdata
    from tests.fake_hotdata.testing import create_database

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="hql-bench-engine-"))
    try:
        root = base / f"vault-{args.cards}"
        queries = sample_queries(args.queries)
        if not (root / ".hql" / "index.sqlite").exists():
            generate_vault(root, args.cards)
            generate_index(root, queries)
        fake = FakeHotdata(job_mode="poll").start()
        try:
            with hotdata.ApiClient(fake.configuration()) as api:
                db = create_database(api)
            toml = (root / "hql.toml").read_text().split("\n[engine]")[0]
            (root / "hql.toml").write_text(
                toml + f'\n[engine]\nprovider = "hotdata"\ndatabase = "{db.id}"\n')
            env = {"HOTDATA_API_KEY": fake.api_key, "HOTDATA_WORKSPACE": fake.workspace_id,
                   "HOTDATA_API_URL": fake.url}
            options = Options(poll_interval=0.02)
            start = time.perf_counter()
            local = LocalCards.load(root, embed=embed_local)
            settings = settings_or_refuse(local, env)
            load_s = time.perf_counter() - start
            start = time.perf_counter()
            synced = sync(local, settings, options)
            sync_s = time.perf_counter() - start
            start = time.perf_counter()
            build(settings, options)
            build_s = time.perf_counter() - start
            start = time.perf_counter()
            again = sync(local, settings, options)
            resync_s = time.perf_counter() - start
            assert again.up_to_date
            timings: dict[str, list[float]] = {"bm25": [], "semantic": [], "semantic --exact": [],
                                               "hybrid": []}
            for text in queries:
                for label, mode, exact in (("bm25", "bm25", False), ("semantic", "semantic", False),
                                           ("semantic --exact", "semantic", True),
                                           ("hybrid", "hybrid", False)):
                    start = time.perf_counter()
                    answer = search(local, settings, text, mode=mode, exact=exact,
                                    options=options)
                    timings[label].append(time.perf_counter() - start)
                    assert answer.ok, (text, mode)
        finally:
            fake.stop()
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    n = args.cards
    rows = [
        [n, "read vault + local index", load_s * 1000],
        [n, f"sync (first upload, {synced.added} rows)", sync_s * 1000],
        [n, "build (bm25 + vector index jobs)", build_s * 1000],
        [n, "sync again (up to date)", resync_s * 1000],
    ]
    for label, values in timings.items():
        rows.append([n, f"query: engine {label} (median of {len(values)})",
                     median(values) * 1000])
    md = write_report(
        "engine_fake",
        "Engine client against the FAKE Hotdata server (test stand-in, not the engine)",
        ["cards", "step", "ms"],
        rows,
        notes=[
            "The fake server is a loopback test stand-in built from DataFusion, Tantivy and "
            "USearch; it is not the Hotdata engine and says nothing about hosted latency.",
            "Each query figure includes building the SQL, the HTTP round trip on loopback, "
            "the fake's planning and execution, and JSON decoding (client side: one Ranking).",
            "Vectors are random unit vectors (384 dimensions) stored under the real model id; "
            "query vectors come from the index's query table.",
            "Jobs ran in the fake's poll mode, polled every 20 ms by the client.",
        ],
    )
    print(md.read_text())


if __name__ == "__main__":
    main()
