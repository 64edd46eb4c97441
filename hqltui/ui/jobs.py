"""The app's jobs: start, follow, cancel; what a finished job changes.

``JobsMixin`` goes before ``App`` in the app's bases. It owns a ``JobBoard``
(one job of each kind at a time) and runs every job in a thread worker of
the ``jobs`` group, never exclusive, so neither a query (``query`` group) nor
another job cancels it. Events reach the UI through a ``Coalescer`` as
``JobUpdate`` messages and are drawn by the ``JobsPanel`` (``#jobs``).

API for other jobs (engine jobs, ...):

* ``start_job(job, on_finished=None) -> bool`` — any ``hqltui.core.jobs.Job``
  (``run(emit)`` blocking, ``cancel()``, ``kind``, ``title``); ``False`` with a
  notification when a job of its kind already runs. ``on_finished(event)`` is
  called on the UI thread with the final event.
* ``post_message(JobUpdate(event))`` from any thread, or ``show_job_event(event)``
  on the UI thread, draws events of a stream the app does not run itself.
* ``running_jobs()`` lists the jobs still running; ``jobs_status()`` is the
  header's text for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding

from hqltui.core.jobs import Job, JobBoard, JobEvent, index_build_job, index_verify_job
from hqltui.ui.screens.confirm import ConfirmScreen
from hqltui.ui.widgets.jobs import Coalescer, JobsPanel, JobUpdate
from producer.terminal import shown

JOB_BINDINGS = [
    Binding("f7", "build_index", "build", tooltip="build index", id="jobs.build"),
    Binding("f8", "verify_index", "verify", tooltip="verify index", id="jobs.verify"),
    Binding("f10", "toggle_jobs", "jobs", show=False, tooltip="jobs panel", id="jobs.panel"),
    Binding("ctrl+g", "cancel_jobs", "cancel", tooltip="cancel job", id="jobs.cancel"),
]

BUILD = "index-build"
VERIFY = "index-verify"
DEFAULT_INDEX = ".hql/index.sqlite"

JobFactory = Callable[..., Job]


def _build(vault: Path, out: Path, *, clock: Callable[[], float]) -> Job:
    return index_build_job(vault, out, clock=clock)


def _verify(vault: Path, index: Path, *, clock: Callable[[], float]) -> Job:
    return index_verify_job(vault, index, clock=clock)


class JobsMixin:
    """Job actions for ``HqlApp``; expects ``session``, ``vault_path``, ``clock``, ``main``."""

    job_interval = 0.1  # seconds between two progress repaints of one job

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.job_board = JobBoard()
        self.jobs: dict[int, Job] = {}
        self._job_done: dict[int, Callable[[JobEvent], Any] | None] = {}
        self.last_job_events: dict[str, JobEvent] = {}
        self._failed_shown: set[str] = set()  # kinds whose last job failed or was cancelled
        # Tests swap these: a fake producer, a fixed clock for the coalescer.
        self.job_factories: dict[str, JobFactory] = {BUILD: _build, VERIFY: _verify}
        self.job_throttle_clock: Callable[[], float] = time.monotonic

    # ------------------------------------------------------------------ running

    def job_clock(self) -> float:
        """Elapsed times follow the app's clock (fixed in snapshot tests)."""
        return float(self.clock().timestamp())  # type: ignore[attr-defined]

    def start_job(self, job: Job, on_finished: Callable[[JobEvent], Any] | None = None) -> bool:
        app: Any = self
        refused = self.job_board.claim(job)
        if refused is not None:
            app.notify(refused, severity="warning", timeout=3)
            return False
        self.jobs[job.job_id] = job
        self._job_done[job.job_id] = on_finished
        emit = Coalescer(lambda event: app.post_message(JobUpdate(event)), self.job_interval,
                         self.job_throttle_clock)
        app.run_worker(
            partial(job.run, emit),
            name=job.title,
            description=job.title,  # never repr() the job: its command may be long
            group="jobs",
            exclusive=False,
            thread=True,
            exit_on_error=False,
        )
        self.show_job_event(job.snapshot())
        app.refresh_bindings()
        return True

    def running_jobs(self) -> list[Job]:
        return list(self.jobs.values())

    def on_job_update(self, message: JobUpdate) -> None:
        self.show_job_event(message.event)

    def show_job_event(self, event: JobEvent) -> None:
        app: Any = self
        self.last_job_events[event.kind] = event
        try:
            panel = app.main.query_one("#jobs", JobsPanel)
        except Exception:  # the main screen is gone (shutting down)
            return
        panel.show_event(event)
        if event.finished and event.job_id in self.jobs:
            job = self.jobs.pop(event.job_id)
            self.job_board.release(job)
            self._job_finished(event)
            done = self._job_done.pop(event.job_id, None)
            if done is not None:
                done(event)
            app.refresh_bindings()
        if app.session is not None:
            app._show_status()

    def _job_finished(self, event: JobEvent) -> None:
        app: Any = self
        if event.state == "succeeded":
            app.notify(event.message or "done", title=event.title, timeout=4)
        elif event.state == "cancelled":
            app.notify(event.message or "cancelled", title=event.title, severity="warning",
                       timeout=4)
        else:
            app.notify(event.message or "failed", title=f"{event.title} failed",
                       severity="error", timeout=8)
        if event.kind == BUILD and event.state == "succeeded":
            self._failed_shown.discard(VERIFY)  # a new index: an old verify verdict is moot
            app._load_session("build")  # badges, header and rankings follow the new index
        if event.state in ("failed", "cancelled"):
            self._failed_shown.add(event.kind)
        else:
            self._failed_shown.discard(event.kind)

    def jobs_status(self) -> Text:
        """The header's words for running jobs, or for an index job that just failed."""
        app: Any = self
        palette = app.palette
        out = Text()
        for job in self.running_jobs():
            event = self.last_job_events.get(job.kind)
            out.append(" · ")
            if event is not None and event.determinate:
                out.append(f"{job.title} {event.done}/{event.total}", style=palette.accent)
            else:
                out.append(f"{job.title}…", style=palette.accent)
        for kind in sorted(self._failed_shown):
            event = self.last_job_events.get(kind)
            if event is not None and event.finished and self.job_board.running(kind) is None:
                out.append(" · ")
                style = palette.error if event.state == "failed" else palette.warning
                out.append(f"{event.title}: {event.state}", style=style)
        return out

    def with_jobs_status(self, header: Text) -> Text:
        """``header`` with ``jobs_status()`` after its second part (``vault · N cards``),
        so it stays on screen when the line is too long for the terminal."""
        jobs = self.jobs_status()
        if not jobs:
            return header
        plain = header.plain
        first = plain.find(" · ")
        cut = plain.find(" · ", first + 3) if first >= 0 else -1
        if cut < 0:
            return Text.assemble(header, jobs)
        return Text.assemble(header[:cut], jobs, header[cut:])

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "build_index" and self.job_board.running(BUILD) is not None:
            return None  # shown disabled in the footer while a build runs
        if action == "cancel_jobs" and not self.jobs:
            return False  # in the footer only while a job runs
        return super().check_action(action, parameters)  # type: ignore[misc, no-any-return]

    def _configured_index(self) -> Path | None:
        app: Any = self
        config = getattr(app.session, "config", None)
        path = getattr(config, "index_path", None)
        return Path(path) if path is not None else None

    def action_build_index(self) -> None:
        app: Any = self
        if app.session is None:
            app.notify(app.session_missing(), severity="warning", timeout=3)
            return
        running = self.job_board.running(BUILD)
        if running is not None:
            app.notify(f"{running.title} is already running", severity="warning", timeout=3)
            return
        config = app.session.config
        if "semantics" in config.errors:
            app.notify(config.errors["semantics"], title="hql.toml is refused",
                       severity="error", timeout=8)
            return
        out = self._configured_index()
        if out is None:
            app.push_screen(self._configure_question(), self._configure_answered)
            return
        from producer.index import aside_path, is_sqlite_file

        try:
            foreign = out.is_file() and is_sqlite_file(out) is False
        except OSError:
            foreign = False  # the build itself says why the file cannot be read
        if foreign:
            aside = aside_path(out, app.clock())
            app.push_screen(self._aside_question(out, aside), partial(self._aside_answered,
                                                                       out, aside))
            return
        self._start_build(out)

    def _aside_question(self, out: Path, aside: Path) -> ConfirmScreen:
        """A file that is not an index sits where the index goes: never overwritten,
        only moved aside once the user says so."""
        app: Any = self
        body = Text()
        body.append(shown(str(out)), style="bold")
        body.append(" exists and is not an SQLite index, so a build will not overwrite it.\n\n")
        body.append("Rename it to ")
        body.append(shown(aside.name), style=app.palette.accent)
        body.append(" (kept beside it, nothing deleted), then build the index?")
        return ConfirmScreen("Move the unreadable file aside?", body, yes="rename and build",
                             no="cancel")

    def _aside_answered(self, out: Path, aside: Path, yes: bool | None) -> None:
        app: Any = self
        if not yes:
            app.notify(f"{shown(str(out))}: left as it is; no build", timeout=3)
            return
        try:
            if aside.exists():
                raise FileExistsError(f"{aside} already exists")
            out.rename(aside)
        except OSError as exc:
            app.notify(f"{shown(str(out))}: not moved ({shown(str(exc))})",
                       severity="error", timeout=8)
            return
        app.notify(f"moved aside: {shown(aside.name)}", timeout=4)
        self._start_build(out)

    def _configure_question(self) -> ConfirmScreen:
        app: Any = self
        p = app.palette
        body = Text()
        has_file = (app.vault_path / "hql.toml").is_file()
        body.append("This vault's hql.toml names no semantic index.\n\n" if has_file
                    else "This vault has no hql.toml, so no semantic index is named.\n\n")
        body.append("Write ")
        body.append(f'[semantics] index = "{DEFAULT_INDEX}"', style=p.accent)
        body.append(" into ")
        body.append(str(app.vault_path / "hql.toml"), style="bold")
        body.append(" (the rest of the file stays as it is), then build the index there?")
        return ConfirmScreen("Configure the index?", body, yes="write and build", no="cancel")

    def _configure_answered(self, yes: bool | None) -> None:
        app: Any = self
        if not yes:
            app.notify("nothing written; the index is not configured", timeout=3)
            return
        from hqltui.core.configure import configure_default_index
        from producer.config import ConfigError

        try:
            file = configure_default_index(app.vault_path)
        except (ConfigError, OSError) as exc:
            app.notify(str(exc), title="hql.toml not changed", severity="error", timeout=8)
            return
        app.notify(f"{file.name}: [semantics] index = \"{DEFAULT_INDEX}\"", timeout=4)
        self._start_build(app.vault_path / DEFAULT_INDEX)

    def _start_build(self, out: Path) -> None:
        app: Any = self
        job = self.job_factories[BUILD](app.vault_path, out, clock=self.job_clock)
        self.start_job(job)

    def action_verify_index(self) -> None:
        app: Any = self
        if app.session is None:
            app.notify(app.session_missing(), severity="warning", timeout=3)
            return
        index = self._configured_index()
        if index is None:
            app.notify("no [semantics] index in hql.toml: F7 configures and builds one",
                       severity="warning", timeout=4)
            return
        job = self.job_factories[VERIFY](app.vault_path, index, clock=self.job_clock)
        self.start_job(job)

    def action_cancel_jobs(self) -> None:
        app: Any = self
        jobs = self.running_jobs()
        if not jobs:
            app.notify("no job is running", timeout=2)
            return
        for job in jobs:
            job.cancel()
        app.notify(f"cancelling {', '.join(job.title for job in jobs)}…", timeout=2)

    def action_toggle_jobs(self) -> None:
        app: Any = self
        app.main.query_one("#jobs", JobsPanel).toggle()

    def on_unmount(self) -> None:
        # A thread worker cannot be interrupted: stop the subprocess so the app can exit.
        for job in self.running_jobs():
            job.cancel()
