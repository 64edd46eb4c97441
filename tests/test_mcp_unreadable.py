"""`hql-tui mcp` answers every line, even one it cannot read: a client that sent a request
is never left waiting on its id (JSON-RPC 2.0: -32700, -32600). Raw lines on the real
server's stdin, as a broken client would send them."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}
SEARCH = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
          "params": {"name": "search", "arguments": {"text": "owl", "mode": "bm25", "limit": 1}}}


def test_every_unreadable_line_is_answered_and_the_server_goes_on(tmp_path: Path) -> None:
    vault = tmp_path / "birds"
    shutil.copytree(ROOT / "fixtures" / "birds", vault)
    server = subprocess.Popen(
        [sys.executable, "-m", "hqltui.cli", "mcp", str(vault)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(line: str) -> dict:
        server.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        ready, _, _ = select.select([server.stdout], [], [], 120)
        assert ready, f"no answer to {line!r}"
        return json.loads(server.stdout.readline())  # type: ignore[union-attr]

    try:
        assert ask(json.dumps(INIT))["id"] == 1
        ask_raw = '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
        server.stdin.write(ask_raw.encode())
        surrogate = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
                     '{"name": "search", "arguments": {"text": "\\ud800"}}}')
        answers = [ask("{not json"), ask(surrogate),
                   ask('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": 5}')]
        assert [(a["id"], a["error"]["code"]) for a in answers] == [
            (None, -32700), (7, -32600), (None, -32600)]
        assert answers[0]["error"]["message"] == "Parse error: the line is not JSON"
        found = ask(json.dumps(SEARCH))  # the server still answers
        assert found["id"] == 9 and not found["result"]["isError"]
    finally:
        server.kill()
        server.wait()
