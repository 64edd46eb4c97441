"""Blocking calls awaited on daemon threads.

anyio's worker threads are joined when the interpreter exits, so a call blocked on an
idle pipe (a read of stdin) or on a long vault load kept the server alive after it was
told to stop. On a daemon thread, a cancelled wait leaves the thread behind, and the
process exits without it. No MCP SDK import: ``hqltui.mcp.served`` uses it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel


async def on_daemon_thread(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` on a daemon thread, awaited (cancellable: the thread is left behind).
    anyio's worker threads are joined at exit; a read or write blocked on a pipe must not
    keep the process alive."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append((True, call(*args)))
        except BaseException as exc:  # noqa: BLE001 - raised again on the loop's side
            outcome.append((False, exc))
        with suppress(Exception):  # the loop has ended: nobody waits for this
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, name="hql-daemon-call", daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
