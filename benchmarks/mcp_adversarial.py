"""The MCP server against a hostile client: each case of issue 41 re-run on a real
`hql-tui mcp` child on a copy of `fixtures/birds`, one JSON line printed per case.

    python -m benchmarks.mcp_adversarial nesting ids sigint sigint_idle eof_build \\
        stdout_closed extra_arg big_query

HQL_SRC names the checkout whose code the child runs (default: this one), so one probe
measures a before and an after. Not a unit test: it takes minutes and waits on processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(os.environ.get("HQL_SRC", Path(__file__).resolve().parents[1]))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}}
BUILD = {"jsonrpc": "2.0", "id": 50, "method": "tools/call",
         "params": {"name": "build", "arguments": {}, "_meta": {"progressToken": 50}}}
STOP_BOUND = 30.0  # seconds after which a server that should have stopped is "still running"


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()[:12]


class Child:
    """`hql-tui mcp` on a fresh copy of the birds vault, the handshake done."""

    def __init__(self, *flags: str, env: dict[str, str] | None = None, edit: bool = False):
        self.tmp = Path(tempfile.mkdtemp(prefix="hql-mcp-probe-"))
        self.vault = self.tmp / "birds"
        shutil.copytree(SRC / "fixtures" / "birds", self.vault)
        if edit:  # one stale card: a build has one card to embed
            card = self.vault / "great-cormorant.hmd"
            card.write_text(card.read_text(encoding="utf-8") + "\nIt dries its wings.\n",
                            encoding="utf-8")
        self.index = self.vault / ".hql" / "index.sqlite"
        self.index_bytes = self.index.read_bytes()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "hqltui.cli", "mcp", str(self.vault), *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.tmp,
            env={**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(self.tmp / "c"),
                 **(env or {})})
        self.send(INIT)
        self.read(120)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.p.stdin is not None
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def read(self, timeout: float = 10) -> Any:
        """The next line out, or None after ``timeout`` s, or "EOF"."""
        assert self.p.stdout is not None
        ready, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.p.stdout.readline()
        return json.loads(line) if line else "EOF"

    def alive(self) -> bool:
        self.send({"jsonrpc": "2.0", "id": 999, "method": "ping"})
        answer = self.read(10)
        return isinstance(answer, dict) and answer.get("id") == 999

    def wait(self, bound: float = STOP_BOUND) -> tuple[Any, float]:
        """The exit status (or "still running") and the seconds it took."""
        start = time.monotonic()
        try:
            return self.p.wait(timeout=bound), round(time.monotonic() - start, 2)
        except subprocess.TimeoutExpired:
            return f"still running after {bound:.0f} s", bound

    def end(self) -> str:
        """Kill if need be; the stderr it wrote."""
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        assert self.p.stderr is not None
        return self.p.stderr.read().decode(errors="replace")

    def index_intact(self) -> bool:
        left = sorted(p.name for p in self.index.parent.iterdir() if not p.name.endswith(".lock"))
        return self.index.read_bytes() == self.index_bytes and left == ["index.sqlite"]


def brief(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    return {"id": answer.get("id"), "error": answer.get("error"),
            "isError": (answer.get("result") or {}).get("isError")}


def show(name: str, **found: Any) -> None:
    print(f"{name}: " + json.dumps(found, ensure_ascii=False), flush=True)


def case_nesting() -> None:
    child = Child()
    out: list[Any] = []
    for depth in (150, 300, 1000):
        params = '{"a":' * depth + "1" + "}" * depth
        for kind, line in (("array", "[" * depth + "]" * depth),
                           ("request", '{"jsonrpc":"2.0","id":3,"method":"ping","params":'
                                       + params + "}")):
            child.send(line)
            out.append([depth, kind, len(line), brief(child.read(10))])
            if not child.alive():
                out.append(["dead after", depth, kind])
                show("nesting", answers=out, stderr=child.end()[-300:])
                return
    show("nesting", answers=out, alive=True, stderr=child.end()[-300:])


def case_ids() -> None:
    child = Child()
    out: list[Any] = []
    for rid in (1.5, True, None, {"a": 1}, [1], 7, "s"):
        child.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        out.append([json.dumps(rid), brief(child.read(3))])
    for label, line in (("8, params 5", {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                         "params": 5}),
                        ('"x", method 5', {"jsonrpc": "2.0", "id": "x", "method": 5}),
                        ("no id, params 5", {"jsonrpc": "2.0", "method": "ping", "params": 5})):
        child.send(line)
        out.append([label, brief(child.read(3))])
    show("ids", answers=out, alive=child.alive())
    child.end()


def case_sigint() -> None:
    marker = Path(tempfile.mkdtemp(prefix="hql-mcp-probe-")) / "paused"
    child = Child("--allow-build", env={"HQL_SEMANTICS_TEST_PAUSE": f"embedding:{marker}"},
                  edit=True)
    child.send(BUILD)
    start = time.monotonic()
    while not marker.exists() and time.monotonic() - start < 120:
        time.sleep(0.05)
    producer = int(marker.read_text(encoding="utf-8"))
    child.p.send_signal(signal.SIGINT)
    start = time.monotonic()
    producer_gone = None
    while time.monotonic() - start < STOP_BOUND and child.p.poll() is None:
        if producer_gone is None and not Path(f"/proc/{producer}").exists():
            producer_gone = round(time.monotonic() - start, 2)
        time.sleep(0.01)
    status = child.p.poll()
    seconds = round(time.monotonic() - start, 2)
    answers = []
    while isinstance(answer := child.read(1), dict):
        if answer.get("id") == 50:
            answers.append(brief(answer))
    stderr = child.end()
    show("sigint", exit_status=status if status is not None else "still running",
         seconds=seconds, producer_exited_after=producer_gone, build_answer=answers,
         index_intact=child.index_intact(), stderr=stderr[-300:])


def case_sigint_idle(trials: int = 3) -> None:
    found = []
    for _ in range(trials):
        child = Child()
        assert child.alive()
        child.p.send_signal(signal.SIGINT)
        found.append(child.wait())
        child.end()
    show("sigint_idle", trials=found)


def case_eof_build(trials: int = 5) -> None:
    found = []
    for _ in range(trials):
        child = Child("--allow-build", edit=True)
        child.send(BUILD)
        assert child.p.stdin is not None
        child.p.stdin.close()
        status, seconds = child.wait()
        child.end()
        found.append([status, seconds, child.index_intact()])
    show("eof_build", trials=found)


def case_stdout_closed() -> None:
    child = Child()
    assert child.p.stdout is not None
    child.p.stdout.close()
    child.send({"jsonrpc": "2.0", "id": 60, "method": "ping"})
    status, seconds = child.wait(10)
    if not isinstance(status, int):  # the old server waited for stdin to close
        assert child.p.stdin is not None
        child.p.stdin.close()
        status = f"{status}; then, stdin closed: {child.wait()[0]}"
    show("stdout_closed", exit_status=status, seconds=seconds, stderr=child.end()[-300:])


def case_extra_arg() -> None:
    child = Child()
    child.send({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
                "params": {"name": "search", "arguments": {"text": "owl", "mode": "bm25",
                                                           "limit": 1, "colour": "red"}}})
    result = child.read(60)["result"]
    child.end()
    show("extra_arg", isError=result.get("isError"), text=result["content"][0]["text"][:120])


def case_big_query() -> None:
    child = Child()
    text = "owl " * 250_000  # 1 MB
    child.send({"jsonrpc": "2.0", "id": 80, "method": "tools/call",
                "params": {"name": "search", "arguments": {"text": text, "mode": "all",
                                                           "limit": 1}}})
    assert child.p.stdout is not None
    select.select([child.p.stdout], [], [], 300)
    line = child.p.stdout.readline()
    child.end()
    show("big_query", query_bytes=len(text), reply_bytes=len(line),
         isError=json.loads(line)["result"].get("isError"),
         query_copies=line.count(b"owl " * 1000) // 250)


if __name__ == "__main__":
    for case in sys.argv[1:]:
        globals()[f"case_{case}"]()
