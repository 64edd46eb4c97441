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

POKE_STEP = 0.05  # seconds between two looks for a file notification while resting


def _start_graph_load() -> None:
    """Load the local model's ONNX graph beside the vault (docs/runtime.md), in a
    thread of its own. The modules both threads need are imported here first, on
    the load thread: two threads importing one module tree at once is what once
    made a first live query fail."""
    try:
        import hqltui.core.semantic as semantic
        import producer.embedders.local  # noqa: F401 - see above
        import producer.embedders.onnx_graph  # noqa: F401
    except ImportError:  # only a head start: the load itself reports what is missing
        return
    threading.Thread(target=semantic.warm_live_model, name="graph-load", daemon=True).start()


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
    keeper: Any = None  # ``hqltui.mcp.keeper.Keeper`` with --auto-build
    notifications: Any = None  # ``hqltui.core.notifications.Notifications``, once started
    _ready: threading.Event = field(default_factory=threading.Event)
    _poked: threading.Event = field(default_factory=threading.Event)  # a file notification
    _load_started: int = 0  # time.time_ns() when the first load began

    def start(self) -> None:
        threading.Thread(target=self._load, name="vault-load", daemon=True).start()

    def _load(self) -> None:
        try:
            _start_graph_load()
            self._load_started = time.time_ns()  # the first look's edits-since (watch)
            self.session = self.loader()
            if self.poll or self.keeper is not None:
                self._notify()  # watchfiles is imported here, on the load thread
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

    def _notify(self) -> None:
        from hqltui.core.notifications import Notifications

        def index() -> Any:
            return None if self.session is None else self.session.config.index_path

        self.notifications = Notifications(self.root, lambda _paths: self._poked.set(),
                                           lambda _reason: None, index=index)
        self.notifications.start()

    async def _rest(self, seconds: float | None) -> None:
        """Until ``seconds`` pass (None: until a notification) or a file notification
        comes: an edit is looked at at once, not at the next poll."""
        end = None if seconds is None else time.monotonic() + seconds
        while not self._poked.is_set():
            if end is not None and time.monotonic() >= end:
                return
            await anyio.sleep(POKE_STEP)
        self._poked.clear()

    @staticmethod
    def _signature(session: Any) -> object:
        from hqltui.core.watch import before_load

        return before_load(session.root)

    def changed(self) -> bool:
        """Runs in a thread: whether a file the session was read from changed."""
        return self.session is not None and self._signature(self.session) != self.signature

    def reload(self) -> None:
        """Runs in a thread: read the vault and index again; swap them together. Changes
        are told from the scan taken before the reload read a file (``watch.before_load``):
        an edit made meanwhile is then seen at the next look, never swallowed. When no
        file but the index changed since the session was read (a build landed), only the
        index is read again (``Session.with_index_reread``), as in the app."""
        from hqltui.core.watch import same_but

        on_hand = self.session
        seen = self._signature(on_hand)
        if same_but(seen, self.signature, on_hand.config.index_path):
            fresh = on_hand.with_index_reread()
        else:
            fresh = on_hand.reload()
        fresh.prepare()  # the configured lexical arm, before it answers
        self.signature = seen
        self.session = fresh
        if self.gc is not None:
            self.gc.release()  # the first snapshot's objects may be collected now

    async def watch(self) -> None:
        """The first signature is taken once the session answers (off the first search's
        path: stating every file of a large vault takes a while), with every file changed
        since the load began marked unseen (``watch.after_load``: an edit made while the
        vault was read is looked at again, not taken as read), then every ``poll``."""
        from hqltui.core.agent import Refused

        if not self.poll and self.keeper is None:
            return
        try:
            session = await self.current()
        except Refused:
            return
        if not self.poll and not await self._notified():
            return
        from hqltui.core.watch import after_load, rest_after

        start = time.monotonic()
        self.signature = await anyio.to_thread.run_sync(after_load, session.root,
                                                        self._load_started)
        cost = time.monotonic() - start
        self.watching = True
        again: float | None = None  # when the keeper asks to decide again
        while True:
            rest = rest_after(cost, self.poll) if self.poll else None  # big vaults back off
            if again is not None:
                rest = again if rest is None else min(rest, again)
            await self._rest(rest)
            start = time.monotonic()
            try:
                changed = await anyio.to_thread.run_sync(self.changed)
                cost = time.monotonic() - start
                if changed:
                    await anyio.to_thread.run_sync(self.reload)
                    if self.keeper is not None:
                        self.keeper.changed()
                self.reload_error = None
            except Exception as exc:  # noqa: BLE001 - the old session keeps answering
                self.reload_error = f"{type(exc).__name__}: {exc}"
            if self.keeper is not None:
                again = await self.keeper.step(self)

    async def _notified(self) -> bool:
        """With ``--poll 0``, auto-build rests on file notifications alone: refused
        (in ``status``) when they do not work here."""
        from hqltui.mcp.daemon import on_daemon_thread

        notifications = self.notifications
        if notifications is not None:
            await on_daemon_thread(notifications.ready.wait)
        if notifications is not None and notifications.active:
            return True
        reason = "not started" if notifications is None else notifications.reason
        self.keeper.refused = (f"--poll 0 and file notifications do not work here ({reason}): "
                               "give --poll SECONDS for auto-build")
        return False

    def watch_json(self) -> dict[str, Any]:
        """For ``status``: whether edits are being watched for, and a failed reload."""
        notifications = self.notifications
        return {"poll_seconds": self.poll or None, "watching": self.watching,
                "reload_error": self.reload_error,
                "noticed_by": ("notifications" if notifications is not None
                               and notifications.active else "scan" if self.poll else None),
                "notifications_unavailable": getattr(notifications, "reason", None),
                "auto_build": None if self.keeper is None else self.keeper.to_json()}
