"""The engine workers, apart from the local query worker, so a slow engine never
holds up local re-ranking; and the engine jobs (sync + build, verify).

* ``engine-query``: one exclusive worker per query the app starts (the app's own
  debounce applies); each carries the app's generation number and an answer is
  shown only when it is newer than the one on screen;
* ``engine-check``: an engine verify (rows and indexes against the vault) whose
  stale / missing / orphan counts go in the header; run when the row is turned
  on, when the vault reloads and after an engine job.

The row (``hqltui.ui.widgets.engine.EngineRow``) only draws the ``EngineState``
this controller holds. ``hotdata`` and ``pyarrow`` are imported in the workers only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from hqltui.ui.messages import (
    EngineAnswered,
    EngineChecked,
    EngineMessage,
    EngineUnavailable,
    StatusChanged,
)
from hqltui.ui.state import EngineState

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App

    from hqltui.core.engine import EngineAnswer, Options, VerifyReport
    from hqltui.core.jobs import Job
    from hqltui.core.session import Answer, Session
    from hqltui.ui.controllers.jobs import JobsController
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette
    from hqltui.ui.widgets.engine import EngineRow


class EngineController:
    def __init__(self, app: App[Any], row: Callable[[], EngineRow],
                 look: Callable[[], tuple[Palette, Keys, str | None]],
                 options: Callable[[], dict[str, Any]]) -> None:
        self.app = app
        self.row = row  # the widget that draws the state
        self.look = look  # the palette, the active keys and the selected card, to draw with
        self.options = options  # extra engine Options (tests: a frozen clock, faults)
        self.state = EngineState()
        # Set on unmount: ends any engine wait (a Retry-After, a poll) in the workers at
        # once, so quitting never waits it out. Each query also has its own event, set
        # when a newer query supersedes it.
        self._stop = threading.Event()
        self._query_cancel: threading.Event | None = None

    def _set(self, **changes: Any) -> None:
        self.state = replace(self.state, **changes)
        from hqltui.ui import engine_views  # drawn only once the row is turned on

        palette, keys, selected = self.look()
        self.row().draw(self.state, engine_views.row(self.state, palette, keys), selected)

    def _engine_options(self, cancel: threading.Event | None = None) -> Options:
        from hqltui.core.engine import Options

        extra = dict(self.options() or {})
        extra["cancel"] = cancel if cancel is not None else self._stop
        return Options(**extra)

    def stop(self) -> None:
        self._stop.set()
        if self._query_cancel is not None:
            self._query_cancel.set()

    def _run(self, work: Callable[[], None], name: str, group: str) -> None:
        self.app.run_worker(work, name=name, description=name,  # never repr() the session
                            group=group, exclusive=True, thread=True, exit_on_error=False)

    # -------------------------------------------------------------------- query

    def toggle(self, session: Session | None, generation: int, text: str) -> bool:
        self._set(active=not self.state.active)
        if self.state.active:
            self.check(session)
            self.start_query(session, generation, text, submitted=False)
        return self.state.active

    def start_query(self, session: Session | None, generation: int, text: str,
                    submitted: bool) -> None:
        """Called each time the app starts a local query (already debounced)."""
        if not self.state.active or session is None:
            return
        generation = max(self.state.generation, generation)
        if not text.strip():
            self.state = replace(self.state, generation=generation)
            self._show(generation)
            return
        if self._query_cancel is not None:
            self._query_cancel.set()  # the older query's answer would never be shown
        cancel = self._query_cancel = threading.Event()
        if self._stop.is_set():
            cancel.set()
        # What is on screen is marked out of date until this answer comes.
        self._set(generation=generation)
        self._run(partial(self._ask, session, generation, text, submitted, cancel),
                  f"engine query {generation}", "engine-query")

    def _ask(self, session: Session, generation: int, text: str, submitted: bool,
             cancel: threading.Event) -> None:
        """Runs in a thread: the engine's three arms, and the local bm25 answer to compare."""
        from hqltui.core.engine import (
            EngineCancelled,
            EngineFailure,
            EngineRefused,
            LocalCards,
            search,
            settings_or_refuse,
        )

        try:
            local = LocalCards.from_session(session)
            settings = settings_or_refuse(local)
            answer = search(local, settings, text, live=submitted,
                            options=self._engine_options(cancel))
        except EngineCancelled:
            return  # superseded by a newer query, or the app is closing: nothing to show
        except EngineRefused as exc:
            self.app.post_message(EngineUnavailable(generation, "refusal", exc.refusal.message,
                                                    exc.refusal.fix))
            return
        except EngineFailure as exc:
            self.app.post_message(EngineUnavailable(generation, "failure", str(exc), None))
            return
        reference = session.query(text, lexical="bm25", live=submitted)
        self.app.post_message(EngineAnswered(generation, text, answer, reference))

    def receive(self, message: EngineMessage) -> None:
        """A worker's message: an answer, why there is none, or a check's report."""
        if isinstance(message, EngineAnswered):
            self._show(message.generation, message.answer, message.reference)
        elif isinstance(message, EngineUnavailable):
            self._show(message.generation,
                       unavailable=(message.kind, message.message, message.fix))
        else:
            self.set_report(message.report, message.kind, message.message, message.fix)

    def _show(self, generation: int, answer: EngineAnswer | None = None,
              reference: Answer | None = None,
              unavailable: tuple[str, str, str | None] | None = None) -> None:
        """An engine answer (or why there is none), unless the screen holds a newer one."""
        if generation < self.state.shown_generation:
            return  # an older answer than the one on screen: never shown
        self._set(shown_generation=generation, answer=answer, reference=reference,
                  unavailable=unavailable)

    # -------------------------------------------------------------------- check

    def check(self, session: Session | None) -> None:
        """Run an engine verify in the background; its counts go in the header."""
        if not self.state.active or session is None:
            return
        self.state = replace(self.state, checking=True)
        self._run(partial(self._verify, session), "engine check", "engine-check")

    def _verify(self, session: Session) -> None:
        from hqltui.core.engine import (
            EngineCancelled,
            EngineFailure,
            EngineRefused,
            LocalCards,
            settings_or_refuse,
            verify,
        )

        try:
            local = LocalCards.from_session(session)
            settings = settings_or_refuse(local)
            report = verify(local, settings, self._engine_options())
        except EngineCancelled:
            return  # the app is closing
        except EngineRefused as exc:
            self.app.post_message(EngineChecked(None, "refusal", exc.refusal.message,
                                                exc.refusal.fix))
            return
        except EngineFailure as exc:
            self.app.post_message(EngineChecked(None, "failure", str(exc)))
            return
        self.app.post_message(EngineChecked(report))

    def set_report(self, report: VerifyReport | None, kind: str = "", message: str = "",
                   fix: str | None = None) -> None:
        """A verify report from the check or from an engine verify job."""
        self._set(checking=False, report=report,
                  check_line=(kind, message, fix) if report is None else None)
        self.app.post_message(StatusChanged())

    # --------------------------------------------------------------------- jobs

    def start_job(self, kind: str, session: Session | None, vault: Path, jobs: JobsController,
                  now: Callable[[], tuple[Session | None, int, str]]) -> None:
        """``sync`` (engine: sync + build) or ``verify`` (engine: verify) in the jobs panel;
        ``now()`` is the session, generation and query when it finishes."""
        from hqltui.core.engine.jobs import engine_sync_build_job, engine_verify_job
        from hqltui.core.engine.local import LocalCards

        if session is None:
            self.app.notify("the vault is still loading", severity="warning", timeout=2)
            return
        factory = engine_sync_build_job if kind == "sync" else engine_verify_job
        job = factory(vault, local=lambda: LocalCards.from_session(session),
                      clock=jobs.job_clock, engine_options=dict(self.options() or {}))
        jobs.start(job, lambda _event: self.job_finished(job, *now()))

    def job_finished(self, job: Job, session: Session | None, generation: int,
                     text: str) -> None:
        """What a finished engine job changes: a verify's report goes straight into the
        header counts; otherwise the row checks the engine again; then it asks again."""
        report = getattr(job, "report", None)
        if report is not None:
            self.set_report(report)
        elif self.state.active:
            self.check(session)
        if self.state.active:
            self.start_query(session, generation, text, submitted=False)
