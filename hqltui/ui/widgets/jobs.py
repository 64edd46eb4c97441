"""The jobs panel: any stream of ``hqltui.core.jobs.JobEvent`` snapshots, drawn.

The panel knows nothing about what a job does. Each event is a full snapshot
of one job (``job_id``, ``kind``, ``title``, ``state``, counts, elapsed time,
log, result), so the newest event of a job is all the panel needs: a title
line (title, state, elapsed, message), a progress bar (determinate when
``done``/``total`` are known, with the reused count beside it), and a log tail.
One view per job; a new job replaces the finished view of its kind.

Events arrive from a worker thread through a ``Coalescer`` (toolong style):
at most one ``JobUpdate`` message (``hqltui.ui.messages``) every ``interval``
seconds, except that a change of state and the final event go at once;
``JobUpdate.can_replace`` lets a queued update be superseded by a newer one of
the same job.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import ProgressBar, Static

from producer.build_words import clock
from producer.terminal import shown

if TYPE_CHECKING:
    from hqltui.core.jobs import JobEvent

LOG_TAIL = 3  # log lines under a job


class Coalescer:
    """An ``emit`` for ``Job.run``: posts at most every ``interval`` s, newest event wins.

    A change of state (pending → running → finished) is posted at once; a
    burst of progress events in between is held and the newest one is posted
    when the interval has passed (a timer thread flushes it, so the last
    progress before a pause is never lost). ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        post: Callable[[JobEvent], Any],
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.post = post
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: JobEvent | None = None
        self._last_post = -math.inf
        self._last_state: str | None = None
        self._timer: threading.Timer | None = None

    def __call__(self, event: JobEvent) -> None:
        with self._lock:
            now = self.clock()
            urgent = event.finished or event.state != self._last_state
            if urgent or now - self._last_post >= self.interval:
                self._send(event, now)
                return
            self._pending = event
            if self._timer is None:
                wait = max(0.0, self.interval - (now - self._last_post))
                self._timer = threading.Timer(wait, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Post the held event now, if any."""
        with self._lock:
            self._timer = None
            if self._pending is not None:
                self._send(self._pending, self.clock())

    def _send(self, event: JobEvent, now: float) -> None:
        # Under the lock, so a flush never posts an older event after a newer one.
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = None
        self._last_post = now
        self._last_state = event.state
        self.post(event)


def elapsed_text(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour)."""
    total = int(max(0.0, seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _styles(app: Any) -> dict[str, str]:
    palette = getattr(app, "palette", None)

    def get(name: str, fallback: str) -> str:
        return str(getattr(palette, name, fallback) or fallback)

    return {
        "running": get("accent", "bold"),
        "pending": get("muted", "dim"),
        "succeeded": get("success", "bold"),
        "failed": get("error", "bold"),
        "cancelled": get("warning", "bold"),
        "muted": get("muted", "dim"),
    }


def title_line(event: JobEvent, styles: dict[str, str]) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(event.title, style="bold")
    out.append("  ")
    out.append(event.state, style=styles.get(event.state, ""))
    out.append(f"  {elapsed_text(event.elapsed)}", style=styles["muted"])
    if event.message:
        out.append("  ")
        out.append(shown(event.message))
    return out


def counts_line(event: JobEvent) -> str:
    """Beside the bar: ``3 of 10``, the reused count and, while a build embeds, its rate
    and ETA; or attempts for a remote job."""
    parts: list[str] = []
    if event.determinate:
        parts.append(f"{event.done} of {event.total}")
    if event.reused is not None:
        parts.append(f"{event.reused} reused")
    if event.rate is not None and event.eta is not None and not event.finished:
        parts.append(f"{event.rate:.1f} texts/s · {clock(event.eta)} left")
    if event.attempts is not None:
        parts.append(f"attempt {event.attempts}")
    return " · ".join(parts)


def log_tail(event: JobEvent, lines: int = LOG_TAIL) -> list[str]:
    """The last log lines; a finished job that failed shows a few more (its problems)."""
    keep = lines * 2 if event.state == "failed" else lines
    return list(event.log[-keep:])


class JobView(Vertical):
    """One job: title line, progress bar with counts, log tail."""

    DEFAULT_CSS = """
    JobView { height: auto; padding: 0 1; }
    JobView .job-title { height: 1; }
    JobView .job-progress { height: 1; }
    JobView .job-progress ProgressBar { width: auto; }
    JobView .job-progress Bar { width: 40; }
    JobView .job-counts { width: 1fr; height: 1; padding: 0 1; color: $text-muted; }
    JobView .job-log {
        height: auto; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    JobView.-failed .job-log { color: $text; }
    JobView.-finished .job-progress { display: none; }
    JobView.-finished.-determinate .job-progress { display: block; }
    """

    def __init__(self, event: JobEvent) -> None:
        super().__init__(id=f"job-{event.job_id}", classes=f"job -{event.kind}")
        self.event = event
        self._title = Static("", classes="job-title")
        self._bar = ProgressBar(total=None, show_eta=False)
        self._counts = Static("", classes="job-counts")
        self._log = Static("", classes="job-log")

    def compose(self) -> ComposeResult:
        yield self._title
        with Horizontal(classes="job-progress"):
            yield self._bar
            yield self._counts
        yield self._log

    def on_mount(self) -> None:
        self._mounted = True
        self._paint(self.event)

    _mounted = False

    def show(self, event: JobEvent) -> None:
        self.event = event
        if self._mounted:
            self._paint(event)

    def _paint(self, event: JobEvent) -> None:
        styles = _styles(self.app)
        self._title.update(title_line(event, styles))
        if event.determinate and not (event.state == "succeeded" and not event.total):
            self._bar.update(total=max(1, event.total or 0), progress=event.done or 0)
        elif event.finished:  # incl. a build with nothing to embed: "up to date" is done
            self._bar.update(total=1, progress=1)
        else:
            self._bar.update(total=None)
        self._counts.update(counts_line(event))
        tail = log_tail(event)
        self._log.update(Text("\n".join(map(shown, tail)), no_wrap=True, overflow="ellipsis"))
        self._log.display = bool(tail)
        for state in ("pending", "running", "succeeded", "failed", "cancelled"):
            self.set_class(event.state == state, f"-{state}")
        self.set_class(event.finished, "-finished")
        self.set_class(event.determinate, "-determinate")


class JobsPanel(VerticalScroll):
    """Every job of this run, newest first; shown while a job runs, or on a key."""

    DEFAULT_CSS = """
    JobsPanel .jobs-empty { height: 1; padding: 0 1; color: $text-muted; }
    """

    HINT = "no jobs yet"

    def __init__(self, *, id: str | None = None, hint: str | None = None) -> None:
        super().__init__(id=id)
        self.views: dict[int, JobView] = {}
        self.hint = hint or self.HINT

    def compose(self) -> ComposeResult:
        yield Static(self.hint, classes="jobs-empty")

    @property
    def shown(self) -> bool:
        return self.has_class("-active")

    def set_shown(self, shown: bool) -> None:
        self.set_class(shown, "-active")

    def toggle(self) -> bool:
        self.set_shown(not self.shown)
        return self.shown

    def show_event(self, event: JobEvent) -> JobView:
        """Draw ``event``; a job seen for the first time opens the panel."""
        view = self.views.get(event.job_id)
        if view is None:
            for job_id, old in list(self.views.items()):
                if old.event.kind == event.kind and old.event.finished:
                    del self.views[job_id]
                    old.remove()
            view = JobView(event)
            self.views[event.job_id] = view
            self.mount(view, before=0)
            self.set_shown(True)
        else:
            view.show(event)
        self.query_one(".jobs-empty").display = not self.views
        return view

    def events(self) -> list[JobEvent]:
        """The newest event of every job shown, newest job first."""
        return [view.event for view in sorted(self.views.values(),
                                              key=lambda v: -v.event.job_id)]
