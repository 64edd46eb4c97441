"""`hql-tui mcp` stops when asked, and only then: Ctrl-C (SIGINT) while a build runs, the
client closing stdin as a build arrives, the client closing its end of stdout. Each time
the in-flight request is cancelled or answered, the server exits, the index is intact."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import anyio
import pytest

from tests.helpers.vaults import copy_vault
from tests.mcp_raw import PATIENCE, RawServer, alive, initialized

BUILD = {"jsonrpc": "2.0", "id": 50, "method": "tools/call",
         "params": {"name": "build", "arguments": {}, "_meta": {"progressToken": 50}}}


def edit(vault: Path) -> None:
    card = vault / "great-cormorant.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nIt also dries its wings.\n",
                    encoding="utf-8")


def left_beside(index: Path) -> list[str]:
    return sorted(p.name for p in index.parent.iterdir() if not p.name.endswith(".lock"))


def test_sigint_during_a_build_interrupts_it_answers_and_exits(tmp_path: Path) -> None:
    marker = tmp_path / "paused"
    raw = RawServer(tmp_path, "--allow-build",
                    env={"HQL_SEMANTICS_TEST_PAUSE": f"embedding:{marker}"})
    edit(raw.vault)
    index = raw.vault / ".hql" / "index.sqlite"
    before = index.read_bytes()
    with initialized(raw) as server:
        server.send(json.dumps(BUILD))
        deadline = time.monotonic() + PATIENCE
        while not marker.exists():  # the producer is embedding (paused there)
            assert time.monotonic() < deadline, "the build never reached embedding"
            time.sleep(0.05)
        assert server.process is not None
        server.process.send_signal(signal.SIGINT)
        answer = server.answer()
        while "id" not in answer:  # progress notifications first
            answer = server.answer()
        assert answer == {"jsonrpc": "2.0", "id": 50,
                          "error": {"code": -32000, "message": "Connection closed"}}
        assert server.exit_status() == 130
        assert "hql-tui mcp: stopped by SIGINT" in server.stderr()
    producer = int(marker.read_text(encoding="utf-8"))
    assert not alive(producer)
    assert index.read_bytes() == before  # nothing was written
    assert left_beside(index) == ["index.sqlite"]


def test_stdin_closed_as_a_build_arrives_the_server_exits_and_the_index_stays(
    tmp_path: Path,
) -> None:
    raw = RawServer(tmp_path, "--allow-build")
    edit(raw.vault)
    index = raw.vault / ".hql" / "index.sqlite"
    before = index.read_bytes()
    with initialized(raw) as server:
        server.send(json.dumps(BUILD))
        assert server.process is not None and server.process.stdin is not None
        server.process.stdin.close()
        assert server.exit_status() == 0
    assert index.read_bytes() == before
    assert left_beside(index) == ["index.sqlite"]


def test_a_client_that_closes_stdout_is_told_on_stderr_why_the_server_stopped(
    tmp_path: Path,
) -> None:
    with initialized(RawServer(tmp_path)) as server:
        assert server.process is not None and server.process.stdout is not None
        server.process.stdout.close()
        server.send('{"jsonrpc": "2.0", "id": 60, "method": "ping"}')
        assert server.exit_status() == 1
        assert server.stderr() == (
            "hql-tui mcp: the client closed its end of stdout (Broken pipe): answers cannot "
            "reach it, so the server stopped\n")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_build_cancelled_before_its_thread_runs_returns_at_once(
    tmp_path: Path, anyio_backend: str
) -> None:
    """The race behind a closed stdin: the call is cancelled before the worker thread
    starts the job. It must not wait for a job that never ran, nor start one."""

    from hqltui.core.session import Session
    from hqltui.mcp.served import Served
    from hqltui.mcp.server import Tools

    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    edit(vault)
    index = vault / ".hql" / "index.sqlite"
    before = index.read_bytes()
    served = Served(str(vault), lambda: Session.load(vault, cache_dir=tmp_path / "cache"),
                    poll=None)
    served.start()
    await served.current()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await Tools(served, allow_build=True).call(None, "build", {})
    assert scope.cancelled_caught
    assert index.read_bytes() == before
    assert left_beside(index) == ["index.sqlite"]
