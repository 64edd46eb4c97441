"""The local model's runtimes, side by side (docs/runtime.md).

1. **throughput** on a sample of a real man-page vault (default 1,000 pages,
   every k-th card by name): texts/s of today's ``LocalEmbedder.embed`` on
   torch float32, ONNX Runtime float32, ONNX Runtime int8 (when the graph's
   int8 variant exists) and torch bfloat16 (when the CPU has native bf16),
   interleaved round by round in one process; each with its max abs difference
   and min cosine to torch float32, and the median per-round ratio.
2. **first live query in a fresh process**: ``python -c`` importing the
   embedding module and embedding one query no index holds, interpreter start
   to vector (wall, from outside) and that process's peak RSS (``wait4``),
   onnxruntime and torch alternately, median of ``--starts``.
3. **MCP first live search** (``--mcp``): ``hql-tui mcp`` on a generated vault
   of ``--cards`` cards, spawn to first ``search`` answer, for a query the index
   stores and for one it does not (a live vector), alternately.

    python -m benchmarks.bench_runtime --vault MAN_VAULT [--pages 1000] [--repeats 2]
        [--starts 5] [--mcp --cards 10000]

Print ``uptime`` before and after: the figures are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.report import median, write_report

FIRST_QUERY = """
import sys
from producer.embedders.local import LocalEmbedder, embed_local_query
from producer.embedders import embed_query
runtime = sys.argv[1]
if runtime == "onnxruntime":
    v = embed_local_query("how do I list the files of a tar archive")
    import producer.embedders.local as local
    assert local.packaged_embedder(live=True).runtime_used == "onnxruntime"
else:
    e = LocalEmbedder.packaged(runtime="torch")
    v = embed_query(e, "how do I list the files of a tar archive")
assert v.shape == (384,)
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def sample(vault: Path, pages: int) -> list[str]:
    from producer.vault import load_vault

    cards = sorted(load_vault(vault).cards, key=lambda c: c.name)
    step = max(1, len(cards) // pages)
    return [c.text for c in cards[::step][:pages]]


def arms(float32_only: bool = False) -> dict[str, object]:
    from producer.embedders.local import LocalEmbedder, default_model_dir, native_bf16
    from producer.embedders.onnx_graph import prepare_graph

    record, _ = prepare_graph(default_model_dir())
    out: dict[str, object] = {"torch float32 (today's LocalEmbedder.embed)":
                              LocalEmbedder.packaged(runtime="torch")}
    if record.passed:
        out["onnxruntime float32"] = LocalEmbedder.packaged(runtime="onnxruntime")
    if float32_only:
        return out
    try:
        int8 = LocalEmbedder.packaged("int8", runtime="onnxruntime")
        int8.load()
        out["onnxruntime int8"] = int8
    except Exception as exc:  # noqa: BLE001 - an arm this checkout or CPU lacks
        print(f"int8 arm skipped: {exc}", flush=True)
    if native_bf16():
        out["torch bfloat16 (autocast)"] = LocalEmbedder.packaged("bfloat16", runtime="torch")
    return out


def throughput(
    texts: list[str], repeats: int, float32_only: bool = False
) -> tuple[list[list[object]], list[str]]:
    from producer.embedders import embed_texts

    embedders = arms(float32_only)
    for e in embedders.values():
        embed_texts(e, texts[:32])  # load and warm
    names = list(embedders)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    vectors: dict[str, np.ndarray] = {}
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            t = time.perf_counter()
            vectors[name] = embed_texts(embedders[name], texts)
            seconds[name].append(time.perf_counter() - t)
            print(f"round {r + 1} {name}: {len(texts) / seconds[name][-1]:.1f} texts/s",
                  flush=True)
    ref = names[0]
    rows = []
    for name in names:
        ratios = [a / b for a, b in zip(seconds[ref], seconds[name], strict=True)]
        diff = np.abs(vectors[name] - vectors[ref])
        cos = (vectors[name].astype(np.float64) * vectors[ref]).sum(axis=1)
        rows.append([name, len(texts), f"{len(texts) / median(seconds[name]):.1f}",
                     f"{median(ratios):.2f}", f"{float(cos.min()):.5f}",
                     f"{float(diff.max()):.1e}"])
    threads = {n: getattr(getattr(e, "_encoder", None), "threads", None)
               for n, e in embedders.items()}
    notes = [f"{repeats} interleaved rounds (order reversed every other round); ratio: the "
             "median of the rounds' torch-float32 seconds over the arm's; threads per arm "
             f"{threads}",
             f"runtime each arm loaded: "
             f"{ {n: getattr(e, 'runtime_used', None) for n, e in embedders.items()} }"]
    return rows, notes


def one_start(runtime: str, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds) of one fresh process embedding one query."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", FIRST_QUERY, runtime], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, f"{runtime} start failed"
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def first_query(starts: int) -> tuple[list[list[object]], list[str]]:
    from producer.embedders.local import default_model_dir
    from producer.embedders.onnx_graph import prepare_graph

    prepare_graph(default_model_dir())  # what the setup leaves
    env = dict(os.environ)
    results: dict[str, list[tuple[float, float, float]]] = {"onnxruntime": [], "torch": []}
    for runtime in results:  # one untimed start each: bytecode and file caches warm
        one_start(runtime, env)
    for i in range(starts):
        for runtime in (("onnxruntime", "torch") if i % 2 == 0 else ("torch", "onnxruntime")):
            results[runtime].append(one_start(runtime, env))
    rows = []
    for runtime, runs in results.items():
        walls, rss, cpu = ([r[i] for r in runs] for i in range(3))
        rows.append([runtime, starts, f"{median(walls):.2f}", f"{min(walls):.2f}–{max(walls):.2f}",
                     f"{median(cpu):.2f}", f"{max(rss):.0f}"])
    notes = ["a fresh `python -c` importing producer.embedders.local and embedding one query "
             "no index holds; wall from spawn to exit (interpreter start to vector), peak RSS "
             "of that process (wait4) and its CPU seconds (user+sys, which load inflates less "
             "than wall); runtimes alternate, one untimed start each first"]
    return rows, notes


def mcp_first_search(cards: int, starts: int, work: Path) -> tuple[list[list[object]], list[str]]:
    import shutil

    import anyio
    from mcp import ClientSession, stdio_client

    from benchmarks import bench_mcp
    from benchmarks.generate import sample_queries
    from producer.embedders.local import default_model_dir
    from producer.embedders.onnx_graph import prepare_graph

    stored = sample_queries(4)
    root = bench_mcp.prepared(cards, work, stored)
    cache = work / "cache"
    record, _ = prepare_graph(default_model_dir())  # the graph, beside the server's caches
    target = cache / "hql-tui" / "onnx" / record.key
    if not target.exists():
        shutil.copytree(record.directory, target)
    live_text = "how do I list the files of a tar archive"

    async def once(text: str) -> tuple[float, str]:
        start = time.perf_counter()
        async with stdio_client(bench_mcp.params(root, cache)) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search", {"text": text, "limit": bench_mcp.LIMIT})
            wall = time.perf_counter() - start
        import json

        payload = json.loads(result.content[0].text)
        sources = {a["query_vector_source"] for a in payload["arms"]["hybrid"]["retrieval"]["arms"]}
        runtime = payload["arms"]["hybrid"]["retrieval"].get("runtime")
        return wall, f"{sorted(s for s in sources if s)} {runtime or ''}".strip()

    anyio.run(once, stored[0])  # untimed: writes the parse and term caches
    walls: dict[str, list[float]] = {"stored vector": [], "live vector": []}
    seen: dict[str, str] = {}
    for i in range(starts):
        pair = (("stored vector", stored[0]), ("live vector", live_text))
        for name, text in pair if i % 2 == 0 else pair[::-1]:
            wall, source = anyio.run(once, text)
            walls[name].append(wall)
            seen[name] = source
    rows = [[name, cards, starts, f"{median(w):.2f}", f"{min(w):.2f}–{max(w):.2f}", seen[name]]
            for name, w in walls.items()]
    extra = median(walls["live vector"]) - median(walls["stored vector"])
    notes = [f"live minus stored (medians): {extra:+.2f} s (budget +0.6 s); warm caches, "
             "fresh server process each start, alternating"]
    return rows, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path,
                        help="a man-page vault (python -m benchmarks.manpages)")
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--float32-only", action="store_true",
                        help="throughput: torch and onnxruntime float32 only")
    parser.add_argument("--mcp", action="store_true")
    parser.add_argument("--no-first-query", action="store_true",
                        help="skip the fresh-process first query")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    print("start:", uptime(), flush=True)
    loads = [uptime()]
    if args.vault:
        texts = sample(args.vault, args.pages)
        rows, notes = throughput(texts, args.repeats, args.float32_only)
        loads.append(uptime())
        notes.append(f"load before/after: {loads[-2]} / {loads[-1]}")
        name = "runtime_throughput_float32" if args.float32_only else "runtime_throughput"
        print(write_report(name, f"Embedding runtimes, {len(texts)} man pages",
                           ["runtime", "texts", "texts/s", "ratio to torch fp32",
                            "min cosine", "max abs diff"], rows, notes).read_text())
    if not args.no_first_query:
        rows, notes = first_query(args.starts)
        loads.append(uptime())
        notes.append(f"load before/after: {loads[-2]} / {loads[-1]}")
        print(write_report("runtime_first_query", "First live query vector in a fresh process",
                           ["runtime", "starts", "median wall s", "min–max wall s",
                            "median CPU s (user+sys)", "peak RSS MB"],
                           rows, notes).read_text())
    if args.mcp:
        import tempfile

        work = args.work or Path(tempfile.mkdtemp(prefix="hql-bench-runtime-"))
        rows, notes = mcp_first_search(args.cards, args.starts, work)
        loads.append(uptime())
        notes.append(f"load before/after: {loads[-2]} / {loads[-1]}")
        print(write_report("runtime_mcp", "MCP server: start to first search",
                           ["first search", "cards", "starts", "median s", "min–max s",
                            "query vector"], rows, notes).read_text())
    print("end:", uptime(), flush=True)


if __name__ == "__main__":
    main()
