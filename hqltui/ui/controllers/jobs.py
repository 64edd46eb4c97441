"""The app's jobs: start, follow, cancel; what a finished job changes.

The controller owns a ``JobBoard`` (one job of each kind at a time) and runs every
job in a thread worker of the ``jobs`` group, never exclusive, so neither a query
(``query`` group) nor another job cancels it. Events reach the UI through a
``Coalescer`` as ``JobUpdate`` messages and are drawn by the ``JobsPanel`` (``#jobs``).

API for other jobs (engine jobs, ...):

* ``start(job, on_finished=None) -> bool`` — any ``hqltui.core.jobs.Job``
  (``run(emit)`` blocking, ``cancel()``, ``kind``, ``title``); ``False`` with a
  notification when a job of its kind already runs. ``on_finished(event)`` is
  called on the UI thread with the final event.
* ``post_message(JobUpdate(event))`` from any thread, or ``show_event(event)`` on
  the UI thread, draws events of a stream the app does not run itself.
* ``running()`` lists the jobs still running; ``status()`` is the header's text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from hqltui.ui.messages import JobUpdate, StatusChanged
from hqltui.ui.widgets.jobs import Coalescer, JobsPanel
from producer.terminal import shown

if TYPE_CHECKING:
    from textual.app import App

    from hqltui.core.jobs import Job, JobBoard, JobEvent
    from hqltui.core.session import Session
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette
    from hqltui.ui.screens.confirm import ConfirmScreen
    from hqltui.ui.state import ScreenState

BUILD = "index-build"
VERIFY = "index-verify"
DEFAULT_INDEX = ".hql/index.sqlite"

JobFactory = Callable[..., "Job"]
Finished = Callable[["JobEvent"], Any]


def _build(vault: Path, out: Path, *, clock: Callable[[], float]) -> Job:
    from hqltui.core.jobs import index_build_job

    return index_build_job(vault, out, clock=clock)


def _verify(vault: Path, index: Path, *, clock: Callable[[], float]) -> Job:
    from hqltui.core.jobs import index_verify_job

    return index_verify_job(vault, index, clock=clock)


def _answer_keys(keys: Keys) -> tuple[str, str]:
    """The confirmation's yes and no keys, for its buttons."""
    return keys.hint("confirm.yes"), keys.hint("confirm.no")


def configured_index(session: Session | None) -> Path | None:
    path = getattr(getattr(session, "config", None), "index_path", None)
    return Path(path) if path is not None else None


class JobsController:
    interval = 0.1  # seconds between two progress repaints of one job

    def __init__(self, app: App[Any], vault: Path, clock: Callable[[], datetime],
                 reload: Callable[[str], None], panel: Callable[[], JobsPanel],
                 drawn: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.drawn = drawn  # told at the refresh after each event is drawn
        self.vault = vault
        self.clock = clock
        self.reload = reload  # reads the vault again (after a build)
        self.panel = panel
        self._board: JobBoard | None = None  # made when the first job starts
        self.jobs: dict[int, Job] = {}
        self._done: dict[int, Finished | None] = {}
        self.last_events: dict[str, JobEvent] = {}
        self._failed_shown: set[str] = set()  # kinds whose last job failed or was cancelled
        # Tests swap these: a fake producer, a fixed clock for the coalescer.
        self.factories: dict[str, JobFactory] = {BUILD: _build, VERIFY: _verify}
        self.throttle_clock: Callable[[], float] = time.monotonic
        self._asking_quit = False  # the quit question is on screen: quitting again quits
        # A build of this app wrote the index, and the session read after it is not on
        # screen yet: the index's own notification needs no scan (``AutoBuildController``).
        self.landing = False

    # ------------------------------------------------------------------ running

    @property
    def board(self) -> JobBoard:
        """One job of each kind at a time (``hqltui.core.jobs`` loads with the first job,
        not at start-up)."""
        if self._board is None:
            from hqltui.core.jobs import JobBoard

            self._board = JobBoard()
        return self._board

    def _running(self, kind: str) -> Job | None:
        return None if self._board is None else self._board.running(kind)

    def job_clock(self) -> float:
        """Elapsed times follow the app's clock (fixed in snapshot tests)."""
        return float(self.clock().timestamp())

    def start(self, job: Job, on_finished: Finished | None = None) -> bool:
        refused = self.board.claim(job)
        if refused is not None:
            self.app.notify(refused, severity="warning", timeout=3)
            return False
        self.jobs[job.job_id] = job
        self._done[job.job_id] = on_finished
        emit = Coalescer(lambda event: self.app.post_message(JobUpdate(event)), self.interval,
                         self.throttle_clock)
        self.app.run_worker(
            partial(job.run, emit),
            name=job.title,
            description=job.title,  # never repr() the job: its command may be long
            group="jobs",
            exclusive=False,
            thread=True,
            exit_on_error=False,
        )
        self.show_event(job.snapshot())
        self.app.refresh_bindings()
        return True

    def running(self) -> list[Job]:
        return list(self.jobs.values())

    def show_event(self, event: JobEvent) -> None:
        self.last_events[event.kind] = event
        try:
            panel = self.panel()
        except Exception:  # the main screen is gone (shutting down)
            return
        panel.show_event(event)
        if event.finished and event.job_id in self.jobs:
            job = self.jobs.pop(event.job_id)
            self.board.release(job)
            self._finished(event)
            done = self._done.pop(event.job_id, None)
            if done is not None:
                done(event)
            self.app.refresh_bindings()
        self.app.post_message(StatusChanged())
        self.app.call_after_refresh(self.drawn)

    def _finished(self, event: JobEvent) -> None:
        notify = self.app.notify
        if event.state == "succeeded":
            notify(event.message or "done", title=event.title, timeout=4)
        elif event.state == "cancelled":
            notify(event.message or "cancelled", title=event.title, severity="warning",
                   timeout=4)
        else:
            notify(event.message or "failed", title=f"{event.title} failed", severity="error",
                   timeout=8)
        if event.kind == BUILD and event.state == "succeeded":
            self._failed_shown.discard(VERIFY)  # a new index: an old verify verdict is moot
            self.landing = True
            self.reload("build")  # badges, header and rankings follow the new index
        if event.state in ("failed", "cancelled"):
            self._failed_shown.add(event.kind)
        else:
            self._failed_shown.discard(event.kind)

    def status(self, palette: Palette) -> Text:
        """The header's words for running jobs, or for an index job that just failed."""
        out = Text()
        for job in self.running():
            event = self.last_events.get(job.kind)
            out.append(" · ")
            if event is not None and event.determinate:
                out.append(f"{job.title} {event.done}/{event.total}", style=palette.accent)
            else:
                out.append(f"{job.title}…", style=palette.accent)
        for kind in sorted(self._failed_shown):
            event = self.last_events.get(kind)
            if event is not None and event.finished and self._running(kind) is None:
                out.append(" · ")
                style = palette.error if event.state == "failed" else palette.warning
                out.append(f"{event.title}: {event.state}", style=style)
        return out

    def with_status(self, header: Text, palette: Palette, first: Text | None = None) -> Text:
        """``header`` with ``status()`` after its second part (``vault · N cards``),
        so it stays on screen when the line is too long for the terminal; ``first``
        (the auto-build's words) goes before it."""
        jobs = self.status(palette)
        if first:
            jobs = Text.assemble(" · ", first, jobs)
        if not jobs:
            return header
        plain = header.plain
        lead = plain.find(" · ")
        cut = plain.find(" · ", lead + 3) if lead >= 0 else -1
        if cut < 0:
            return Text.assemble(header, jobs)
        return Text.assemble(header[:cut], jobs, header[cut:])

    def allows(self, action: str) -> bool | None:
        """``check_action`` for the job actions: None shows it disabled, False hides it."""
        if action == "build_index" and self._running(BUILD) is not None:
            return None  # shown disabled in the footer while a build runs
        if action == "cancel_jobs" and not self.jobs:
            return False  # in the footer only while a job runs
        return True

    # ------------------------------------------------------------------ actions

    def _session(self, state: ScreenState) -> Session | None:
        """The session to act on, or None with a notice saying why there is none."""
        if state.session is None:
            error = state.load_error
            self.app.notify(f"the vault cannot be opened: {error}" if error
                            else "the vault is still loading", severity="warning", timeout=3)
        return state.session

    def build(self, state: ScreenState, palette: Palette, keys: Keys) -> None:
        session = self._session(state)
        if session is None:
            return
        running = self._running(BUILD)
        if running is not None:
            self.app.notify(f"{running.title} is already running", severity="warning",
                            timeout=3)
            return
        config = session.config
        if "semantics" in config.errors:
            self.app.notify(config.errors["semantics"], title="hql.toml is refused",
                            severity="error", timeout=8)
            return
        out = configured_index(session)
        if out is None:
            self.app.push_screen(self._configure_question(palette, keys), self._configured)
            return
        from producer.index_format import aside_path, is_sqlite_file

        try:
            foreign = out.is_file() and is_sqlite_file(out) is False
        except OSError:
            foreign = False  # the build itself says why the file cannot be read
        if foreign:
            aside = aside_path(out, self.clock())
            self.app.push_screen(self._aside_question(out, aside, palette, keys),
                                 partial(self._aside_answered, out, aside))
            return
        self._start_build(out)

    def _aside_question(self, out: Path, aside: Path, p: Palette, keys: Keys) -> ConfirmScreen:
        """A file that is not an index sits where the index goes: never overwritten,
        only moved aside once the user says so."""
        from hqltui.ui.screens.confirm import ConfirmScreen

        body = Text()
        body.append(shown(str(out)), style="bold")
        body.append(" exists and is not an SQLite index, so a build will not overwrite it.\n\n")
        body.append("Rename it to ")
        body.append(shown(aside.name), style=p.accent)
        body.append(" (kept beside it, nothing deleted), then build the index?")
        return ConfirmScreen("Move the unreadable file aside?", body, yes="rename and build",
                             no="cancel", keys=_answer_keys(keys))

    def _aside_answered(self, out: Path, aside: Path, yes: bool | None) -> None:
        if not yes:
            self.app.notify(f"{shown(str(out))}: left as it is; no build", timeout=3)
            return
        from producer.index_format import move_aside

        try:
            move_aside(out, aside)
        except OSError as exc:
            self.app.notify(f"{shown(str(out))}: not moved ({shown(str(exc))})",
                            severity="error", timeout=8)
            return
        self.app.notify(f"moved aside: {shown(aside.name)}", timeout=4)
        self._start_build(out)

    def _configure_question(self, p: Palette, keys: Keys) -> ConfirmScreen:
        from hqltui.ui.screens.confirm import ConfirmScreen

        body = Text()
        toml = self.vault / "hql.toml"
        body.append("This vault's hql.toml names no semantic index.\n\n" if toml.is_file()
                    else "This vault has no hql.toml, so no semantic index is named.\n\n")
        body.append("Write ")
        body.append(f'[semantics] index = "{DEFAULT_INDEX}"', style=p.accent)
        body.append(" into ")
        body.append(str(toml), style="bold")
        body.append(" (the rest of the file stays as it is), then build the index there?")
        return ConfirmScreen("Configure the index?", body, yes="write and build", no="cancel",
                             keys=_answer_keys(keys))

    def _configured(self, yes: bool | None) -> None:
        if not yes:
            self.app.notify("nothing written; the index is not configured", timeout=3)
            return
        from hqltui.core.configure import configure_default_index
        from producer.config import ConfigError

        try:
            file = configure_default_index(self.vault)
        except (ConfigError, OSError) as exc:
            self.app.notify(str(exc), title="hql.toml not changed", severity="error", timeout=8)
            return
        self.app.notify(f"{file.name}: [semantics] index = \"{DEFAULT_INDEX}\"", timeout=4)
        self._start_build(self.vault / DEFAULT_INDEX)

    def _start_build(self, out: Path) -> None:
        self.start(self.factories[BUILD](self.vault, out, clock=self.job_clock))

    def verify(self, state: ScreenState, keys: Keys) -> None:
        session = self._session(state)
        if session is None:
            return
        index = configured_index(session)
        if index is None:
            self.app.notify(f"no [semantics] index in hql.toml: {keys.hint('jobs.build')} "
                            "configures and builds one", severity="warning", timeout=4)
            return
        self.start(self.factories[VERIFY](self.vault, index, clock=self.job_clock))

    def cancel(self) -> None:
        jobs = self.running()
        if not jobs:
            self.app.notify("no job is running", timeout=2)
            return
        for job in jobs:
            job.cancel()
        self.app.notify(f"cancelling {', '.join(job.title for job in jobs)}…", timeout=2)

    def quit(self, palette: Palette, keys: Keys) -> None:
        """Quit, asking first while a build runs (quitting used to drop it silently).
        Either way its vectors survive: ``stop`` interrupts the producer cleanly (SIGINT)
        and it checkpoints them; the next build resumes from them."""
        build = self._running(BUILD)
        if build is None or self._asking_quit:
            self.app.exit()
            return
        self._asking_quit = True
        self.app.push_screen(self._quit_question(build, palette, keys), self._quit_answered)

    def _quit_question(self, build: Job, p: Palette, keys: Keys) -> ConfirmScreen:
        from hqltui.ui.screens.confirm import ConfirmScreen

        event = build.snapshot()
        body = Text()
        body.append("An index build is running")
        if event.determinate:
            body.append(f" ({event.done} of {event.total} embedded)")
        body.append(". Quitting stops it: the index stays as it is, and the vectors made so "
                    "far are kept, so the next build ")
        body.append(f"({keys.hint('jobs.build')})", style=p.accent)
        body.append(" resumes from them.")
        return ConfirmScreen("Quit while the index builds?", body, yes="quit", no="keep building",
                             keys=_answer_keys(keys))

    def _quit_answered(self, yes: bool | None) -> None:
        self._asking_quit = False
        if yes:
            self.app.exit()

    def stop(self) -> None:
        # A thread worker cannot be interrupted: stop the subprocess so the app can exit.
        for job in self.running():
            job.cancel()
