"""The app's auto-build: an edit seen by the watcher becomes F7's build, by itself.

The rule is ``hqltui.core.autobuild.decide``; this controller feeds it (the
toggle, whether an edit came since the last build, the session on screen) and
acts: it starts the incremental build through ``JobsController`` (the same job
kind as F7, so one build at a time, and the same reload when it lands), waits
out the quiet time with a timer, and says a refusal once. It also runs the file
notifications (``hqltui.core.notifications``) that make the watcher look at once.

A failed or cancelled automatic build is reported by the jobs controller (one
notification); auto-build then pauses until the next edit or F7: no retry loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from hqltui.ui.controllers.jobs import BUILD, configured_index
from hqltui.ui.messages import StatusChanged

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from hqltui.core.jobs import Job, JobEvent
    from hqltui.core.notifications import Notifications
    from hqltui.ui.controllers.jobs import JobsController
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette
    from hqltui.ui.state import ScreenState

AUTO_BUILD = "auto-build"  # the job factory's key in ``JobsController.factories``


def _auto_build(vault: Path, out: Path, limit: int, *, clock: Callable[[], float]) -> Job:
    from hqltui.core.jobs import index_build_job

    job = index_build_job(vault, out, "--changed-at-most", str(limit), clock=clock)
    job.title = "index: auto-build"
    return job


class AutoBuildController:
    def __init__(self, app: App[Any], vault: Path, jobs: JobsController,
                 state: Callable[[], ScreenState], keys: Callable[[], Keys],
                 enabled: bool | None = None,
                 watched: Callable[[], object] = lambda: None) -> None:
        from hqltui.core.autobuild import CARD_LIMIT, SETTLE

        self.app = app
        self.vault = vault
        self.jobs = jobs
        self.state = state
        self.keys = keys
        self.enabled = enabled  # None: ``[semantics] auto_build`` (or its default) decides
        self.watched = watched  # the watch baseline (``watch.signature``), None until made
        self.pending = False  # an edit was seen since the last build started
        self.paused = False  # the last automatic build failed; until the next edit or F7
        self.last_change = float("-inf")
        self.settle, self.limit = SETTLE, CARD_LIMIT
        self.clock: Callable[[], float] = time.monotonic
        self.refused: str | None = None  # the refusal shown, said once
        self.started = 0  # automatic builds started this session
        self.notifications: Notifications | None = None
        self._timer: Timer | None = None
        jobs.factories.setdefault(AUTO_BUILD, _auto_build)

    # ------------------------------------------------------------------ events

    def loaded(self) -> None:
        """A session is on screen (loaded, reloaded, or a build landed): decide."""
        self.jobs.landing = False  # its watch baseline holds the index as it is now
        self.evaluate()

    @property
    def on(self) -> bool:
        """The toggle; until set, the first session's ``[semantics] auto_build``."""
        if self.enabled is None:
            session = self.state().session
            if session is None:
                return False
            self.enabled = bool(getattr(session.config, "starts_auto_build", False))
        return self.enabled

    def changed(self) -> None:
        """The watcher saw the vault change: a build may follow once it is quiet."""
        self.pending, self.paused = True, False
        self.last_change = self.clock()

    def resumed(self) -> None:
        """F7: a failed automatic build no longer pauses auto-build."""
        self.paused = False

    def toggle(self) -> None:
        self.enabled = not self.on
        self.refused = None
        self.app.notify(f"auto-build {'on' if self.enabled else 'off'} for this session",
                        timeout=3)
        self.evaluate()

    # ---------------------------------------------------------------- deciding

    def evaluate(self) -> None:
        from hqltui.core.autobuild import decide

        state = self.state()
        session = state.session
        if session is None:
            return
        config = session.config
        error = config.errors.get("semantics") or config.errors.get("semantics.embedder")
        summary = state.summary
        refusal = getattr(getattr(summary, "refusal", None), "message", None)
        decision = decide(enabled=self.on, pending=self.pending, paused=self.paused,
                          running=self.jobs.board.running(BUILD) is not None,
                          config_error=error, summary=summary, refusal=refusal,
                          quiet_for=self.clock() - self.last_change, settle=self.settle,
                          limit=self.limit)
        if decision.action != "refuse" and self.refused is not None:
            self.refused = None  # what held it is gone (fixed, or F7 built it)
            self.app.post_message(StatusChanged())
        if decision.action == "refuse":
            self._refuse(decision.reason)
        elif decision.action == "wait" and decision.delay > 0:
            self._later(decision.delay)
        elif decision.action == "build":
            self._build(configured_index(session))

    def _later(self, delay: float) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(delay, self.evaluate, name="auto-build settle")

    def _refuse(self, reason: str) -> None:
        if reason == self.refused:
            return  # said once; the header keeps showing it is held
        self.refused = reason
        self.app.notify(f"{reason}; {self.keys().hint('jobs.build')} rebuilds it",
                        title="auto-build held", severity="warning", timeout=8)
        self.app.post_message(StatusChanged())

    def _build(self, out: Path | None) -> None:
        if out is None:
            return
        job = self.jobs.factories[AUTO_BUILD](self.vault, out, self.limit,
                                              clock=self.jobs.job_clock)
        if self.jobs.start(job, self._finished):
            self.pending, self.refused = False, None
            self.started += 1

    def _finished(self, event: JobEvent) -> None:
        if event.state != "succeeded":
            self.paused = True  # the jobs controller has shown the reason, once

    # ----------------------------------------------------------------- showing

    def status(self, palette: Palette) -> Text:
        """The header's words: ``auto-build on``/``off``, or why it holds."""
        if not self.on:
            return Text("auto-build off", style=palette.muted)
        if self.paused:
            return Text("auto-build paused", style=palette.warning)
        if self.refused is not None:
            return Text("auto-build held", style=palette.warning)
        return Text("auto-build on")

    # ----------------------------------------------------------- notifications

    def watch(self, on_change: Callable[[], None]) -> None:
        """Start the file notifications (after the first frame): ``on_change`` runs on
        the UI thread after each batch of events the scan may see, except the index
        landing from this app's own build (``own_index``)."""
        from hqltui.core.notifications import Notifications

        def failed(reason: str) -> None:
            self._from_thread(lambda: self.app.notify(
                f"file notifications unavailable ({reason}); the vault is scanned "
                "periodically instead", timeout=6))

        def changed(paths: frozenset[str]) -> None:
            self._from_thread(lambda: None if self.own_index(paths) else on_change())

        self.notifications = Notifications(self.vault, changed, failed,
                                           index=lambda: self.state().index_file)
        self.notifications.start()

    def own_index(self, paths: frozenset[str]) -> bool:
        """Is this batch only the index, renamed into place by a build this app runs (or
        ran, its reload not on screen yet), or an index the watch baseline already holds
        as it is now (a notification that came after that reload landed)? The reload
        shows it; a scan now would reload a second time and cancel the first, or look
        at the whole vault for nothing. (On the UI thread.)"""
        import os

        from hqltui.core.watch import holds

        index = self.state().index_file
        if index is None or {os.path.abspath(p) for p in paths} != {os.path.abspath(index)}:
            return False
        if self.jobs.landing or self.jobs.board.running(BUILD) is not None:
            return True
        baseline = self.watched()
        return isinstance(baseline, tuple) and holds(baseline, index)

    def _from_thread(self, call: Callable[[], object]) -> None:
        if not self.app.is_running:
            return
        try:
            self.app.call_from_thread(call)
        except RuntimeError:  # the app stopped meanwhile
            pass

    @property
    def watching(self) -> str:
        """``notifications`` or ``scan``: how edits are noticed (the help screen says)."""
        return "scan" if self.notifications is None else self.notifications.mode

    def stop(self) -> None:
        if self.notifications is not None:
            self.notifications.stop()
