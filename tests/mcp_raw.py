"""A real `hql-tui mcp` child on a copy of the birds vault, spoken to in raw lines (no SDK
client), as a broken or hostile client would."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.vaults import copy_vault

ROOT = Path(__file__).resolve().parents[1]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}
PATIENCE = 120.0  # seconds: a bound for a failing test, never a measure of speed


class RawServer:
    def __init__(self, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> None:
        self.vault = tmp_path / "birds"
        if not self.vault.exists():
            copy_vault("birds", self.vault)
        self.flags = flags
        self.env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
        self.cwd = tmp_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hqltui.cli", "mcp", str(self.vault), *self.flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=self.cwd, env=self.env)
        return self.process

    def send(self, line: str) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict:
        assert self.process is not None and self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], PATIENCE)
        assert ready, "no answer"
        line = self.process.stdout.readline()
        assert line, "the server closed its stdout"
        return json.loads(line)

    def ask(self, line: str) -> dict:
        self.send(line)
        return self.answer()

    def exit_status(self) -> int:
        """The server's exit status; the test fails if it has not exited within PATIENCE."""
        assert self.process is not None
        return self.process.wait(timeout=PATIENCE)

    def stderr(self) -> str:
        assert self.process is not None and self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def alive(pid: int) -> bool:
    """Whether a process (a build's producer) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def initialized(server: RawServer) -> Iterator[RawServer]:
    """Started, the handshake done; killed at the end whatever happened."""
    server.start()
    try:
        assert server.ask(json.dumps(INIT))["id"] == 1
        server.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield server
    finally:
        server.kill()
