"""``hql-tui mcp VAULT --auto-build``: the served index kept up with the vault's edits.

The same rule as the app's (``hqltui.core.autobuild.decide``), asked after each
look at the vault (``Served.watch``): an edit seen, the vault quiet for the
settle time, a bounded incremental build through the producer
(``--changed-at-most``: the only writer of the index), then a reload. A
refusal or a failed build is reported by ``status`` (``reload.auto_build``),
never retried until the next edit. Off unless asked: it writes to the vault.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread


@dataclass
class Keeper:
    root: str
    pending: bool = False  # an edit was seen since the last build started
    paused: bool = False  # the last build failed; until the next edit
    last_change: float = float("-inf")
    refused: str | None = None
    builds: int = 0
    last_build: dict[str, Any] | None = None

    def changed(self) -> None:
        self.pending, self.paused = True, False
        self.last_change = time.monotonic()

    async def step(self, served: Any) -> float | None:
        """Decide (and build, then reload); the seconds after which to ask again, or
        None to wait for the next edit."""
        from hqltui.core.autobuild import CARD_LIMIT, decide

        session = served.session
        if session is None:
            return None
        config = session.config
        summary = session.index_summary()
        refusal = None if summary.refusal is None else summary.refusal.message
        decision = decide(enabled=True, pending=self.pending, paused=self.paused,
                          running=False, summary=summary, refusal=refusal,
                          config_error=config.errors.get("semantics")
                          or config.errors.get("semantics.embedder"),
                          quiet_for=time.monotonic() - self.last_change)
        self.refused = decision.reason if decision.action == "refuse" else None
        if decision.action == "wait":
            return decision.delay or None
        if decision.action != "build" or config.index_path is None:
            return None
        self.pending, self.refused = False, None
        self.builds += 1
        final = await self._run(config.index_path, CARD_LIMIT)
        self.last_build = {"state": final.state, "message": final.message,
                           "result": final.result}
        if final.state == "succeeded":
            await anyio.to_thread.run_sync(served.reload)
        else:
            self.paused = True
        return 0.0 if self.pending else None

    async def _run(self, out: Any, limit: int) -> Any:
        """The producer's bounded build; a server told to stop cancels it (the old index
        stays as it was)."""
        from hqltui.core.jobs import index_build_job

        job = index_build_job(self.root, out, "--changed-at-most", str(limit))
        ended = threading.Event()

        def run() -> Any:
            try:
                return job.run(lambda _event: None)
            finally:
                ended.set()

        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            job.cancel()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(ended.wait)
            raise

    def to_json(self) -> dict[str, Any]:
        state = "paused" if self.paused else "held" if self.refused else "on"
        return {"state": state, "refused": self.refused, "builds": self.builds,
                "pending": self.pending, "last_build": self.last_build}
