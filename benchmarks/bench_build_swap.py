"""Which index answers while a long build runs? Queries through the CLI and the MCP
server during a real `hql-semantics build`, and after it lands.

``python -m benchmarks.bench_build_swap VAULT --query TEXT [--every 30] [--after 3]
[--out FILE] [-- BUILD ARGS...]`` needs VAULT to have its index already (the old one),
with TEXT stored in it (``--query TEXT`` at build time: the probes then load no model).
It starts ``hql-tui mcp VAULT`` (a raw client over stdio), then ``hql-semantics build
--vault VAULT --offline --progress jsonl BUILD ARGS`` (e.g. ``--full``), and every
``--every`` seconds runs ``hql-tui query VAULT TEXT --mode semantic --json`` and the
server's ``search``, recording which index answered (``built_at``, model, revision,
path, passage recipe) and the top hit, until ``--after`` probes after the build ended
have both answered from the new index. One JSON line per probe on stdout (and in
``--out``); the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench_build_swap", "version": "1"}}}


GIVE_UP_S = 300.0  # after the build ended: a swap later than this is reported as none


def stamp() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S")


def fields(answer: dict[str, Any]) -> dict[str, Any]:
    """Which index answered, and what it ranked first."""
    semantic = answer["arms"]["semantic"]
    retrieval = semantic["retrieval"] or {}
    passages = retrieval.get("passages") or {}
    top = semantic["hits"][0] if semantic["hits"] else None
    return {"built_at": answer["index"]["built_at"], "model": retrieval.get("model"),
            "revision": retrieval.get("revision"), "index": retrieval.get("index"),
            "passages": {k: passages[k] for k in sorted(passages) if k != "recipe"} or None,
            "top": None if top is None else [top["card"], round(top["score"], 6)]}


class Server:
    """``hql-tui mcp VAULT`` spoken to in raw JSON lines (search answers only)."""

    def __init__(self, vault: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hqltui.cli", "mcp", str(vault)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next_id = 1
        self._send(INIT)
        self._read(1)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def _read(self, request_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == request_id:
                return message

    def search(self, text: str) -> dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                    "params": {"name": "search",
                               "arguments": {"text": text, "mode": "semantic"}}})
        result = self._read(self.next_id)["result"]
        text_out = result["content"][0]["text"]
        if result.get("isError"):
            raise RuntimeError(text_out)
        return json.loads(text_out)

    def cpu_seconds(self) -> float | None:
        """The server's user + sys CPU so far (Linux ``/proc``; None elsewhere)."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def cli_query(vault: Path, text: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "hqltui.cli", "query", str(vault), text,
                           "--mode", "semantic", "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"exit {done.returncode}")
    return json.loads(done.stdout)


class Build:
    """The build in a child process; its last progress event kept as it runs."""

    def __init__(self, vault: Path, extra: list[str]) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "producer", "build", "--vault", str(vault), "--offline",
             "--progress", "jsonl", *extra], stdout=subprocess.PIPE, text=True)
        self.last: dict[str, Any] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.ended: float | None = None
        self.reader = threading.Thread(target=self._follow, daemon=True)
        self.reader.start()

    def _follow(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            self.events[event["event"]] = event
            self.last = event
        self.process.wait()
        self.ended = time.monotonic()

    def state(self) -> str:
        if self.ended is None:
            done, total = self.last.get("done"), self.last.get("total")
            return f"running {done}/{total}" if done is not None else "running"
        return f"ended (exit {self.process.returncode})"


def probe(out: list[TextIO], build: Build | None, source: str, ask: Any) -> dict[str, Any]:
    """One query; ``t`` is seconds since the build started (None: before it)."""
    row: dict[str, Any] = {
        "utc": stamp(), "source": source,
        "t": None if build is None else round(time.monotonic() - build.started, 1),
        "build": "not started" if build is None else build.state()}
    try:
        row |= fields(ask())
    except Exception as exc:  # noqa: BLE001 - a failed query is what this looks for
        row["error"] = f"{type(exc).__name__}: {exc}"
    for stream in out:
        print(json.dumps(row), file=stream, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--query", required=True)
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("--after", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args, extra = parser.parse_known_args()  # the rest is the build's: ``-- --full``
    extra = [a for a in extra if a != "--"]
    streams: list[TextIO] = [sys.stdout]
    if args.out is not None:
        streams.append(args.out.open("a", encoding="utf-8"))
    for stream in streams:
        print(json.dumps({"utc": stamp(), "load_start": os.getloadavg()}), file=stream,
              flush=True)
    server = Server(args.vault)
    probe(streams, None, "cli", lambda: cli_query(args.vault, args.query))
    before = probe(streams, None, "mcp", lambda: server.search(args.query))
    build = Build(args.vault, extra)
    after = 0
    while after < args.after:
        rows = [probe(streams, build, "cli", lambda: cli_query(args.vault, args.query)),
                probe(streams, build, "mcp", lambda: server.search(args.query))]
        if build.ended is not None:
            landed = all(r.get("built_at") not in (None, before.get("built_at")) for r in rows)
            after += 1 if landed else 0
            if build.process.returncode != 0 or time.monotonic() - build.ended > GIVE_UP_S:
                break  # a failed build, or a swap that never came: the rows say which
        time.sleep(args.every if build.ended is None else 2.0)
    server_cpu = server.cpu_seconds()
    server.close()
    final = build.events.get("final", build.last)
    for stream in streams:
        print(json.dumps({"utc": stamp(), "build_wall": round((build.ended or 0) - build.started,
                                                               1),
                          "build_final": final, "server_cpu_s": server_cpu,
                          "load_end": os.getloadavg()}), file=stream,
              flush=True)


if __name__ == "__main__":
    main()
