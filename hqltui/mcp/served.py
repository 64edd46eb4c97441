"""The one session an MCP server answers from: loaded once, in a thread started before
the SDK is imported (so the two overlap), and swapped whole when a file it was read
from changes (``hqltui.core.watch.signature``, polled as the app polls).

No MCP SDK import here, nor any of the core's at module level: the command starts the
load thread (which imports the core) before the main thread imports the SDK.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from hqltui.mcp.daemon import on_daemon_thread
from hqltui.mcp.gcpause import GcPause


@dataclass
class Served:
    """The session every call answers from: loaded once (in a thread started before the
    SDK is imported, so the two overlap), swapped whole on a reload."""

    root: str
    loader: Callable[[], Any]
    poll: float | None = 2.0
    session: Any = None
    error: BaseException | None = None
    signature: object = None
    watching: bool = False  # the first signature is taken: edits from now on reload
    reload_error: str | None = None
    gc: GcPause | None = None  # told when the load has ended, and when a reload replaced it
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._load, name="vault-load", daemon=True).start()

    def _load(self) -> None:
        try:
            self.session = self.loader()
        except BaseException as exc:  # noqa: BLE001 - reported by every call, never raised
            self.error = exc
        finally:
            if self.gc is not None:
                self.gc.done()
            self._ready.set()

    async def current(self) -> Any:
        if not self._ready.is_set():  # a stop while the vault loads does not wait for it
            await on_daemon_thread(self._ready.wait)
        if self.session is None:
            from hqltui.core.agent import Refused

            exc = self.error
            raise Refused(f"the vault `{self.root}` cannot be loaded: {type(exc).__name__}: {exc}",
                          "fix the vault, then restart the server")
        return self.session

    @staticmethod
    def _signature(session: Any) -> object:
        from hqltui.core.watch import signature

        index = session.config.index_path
        return signature(session.root, [index] if index else [])

    def changed(self) -> bool:
        """Runs in a thread: whether a file the session was read from changed."""
        return self.session is not None and self._signature(self.session) != self.signature

    def reload(self) -> None:
        """Runs in a thread: read the vault and index again; swap them together."""
        fresh = self.session.reload()
        fresh.prepare()  # the configured lexical arm, before it answers
        self.signature = self._signature(fresh)
        self.session = fresh
        if self.gc is not None:
            self.gc.release()  # the first snapshot's objects may be collected now

    async def watch(self) -> None:
        """The first signature is taken once the session answers (off the first search's
        path: stating every file of a large vault takes a while), then every ``poll``."""
        from hqltui.core.agent import Refused

        if not self.poll:
            return
        try:
            session = await self.current()
        except Refused:
            return
        from hqltui.core.watch import rest_after

        start = time.monotonic()
        self.signature = await anyio.to_thread.run_sync(self._signature, session)
        cost = time.monotonic() - start
        self.watching = True
        while True:
            await anyio.sleep(rest_after(cost, self.poll))  # a huge vault's scans back off
            start = time.monotonic()
            try:
                changed = await anyio.to_thread.run_sync(self.changed)
                cost = time.monotonic() - start
                if changed:
                    await anyio.to_thread.run_sync(self.reload)
                self.reload_error = None
            except Exception as exc:  # noqa: BLE001 - the old session keeps answering
                self.reload_error = f"{type(exc).__name__}: {exc}"

    def watch_json(self) -> dict[str, Any]:
        """For ``status``: whether edits are being watched for, and a failed reload."""
        return {"poll_seconds": self.poll or None, "watching": self.watching,
                "reload_error": self.reload_error}
