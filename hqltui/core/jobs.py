"""Jobs: long work started from a key, reported as a stream of events.

A job runs in a worker thread (``Job.run`` blocks) and reports through an
``emit`` callback; the UI turns events into progress bars and log tails and
never looks inside a job. Index jobs run ``hql-semantics`` as a subprocess
with ``--progress jsonl``, so the producer stays the only writer of the index
and a cancelled build is the producer's own interrupted build: the old index
stays as it was.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from producer.build_words import pace_words, plan_line

JobState = Literal["pending", "running", "succeeded", "failed", "cancelled"]
FINISHED: tuple[JobState, ...] = ("succeeded", "failed", "cancelled")
LOG_LINES = 200
CANCEL_GRACE = 5.0  # seconds between SIGINT (clean stop) and SIGKILL


@dataclass(frozen=True)
class JobEvent:
    """One snapshot of a job's progress; the newest event describes the job fully."""

    job_id: int
    kind: str
    title: str
    state: JobState
    message: str = ""
    done: int | None = None
    total: int | None = None
    reused: int | None = None
    attempts: int | None = None
    elapsed: float = 0.0
    rate: float | None = None  # texts per second, once measured
    eta: float | None = None  # seconds left, once a rate is measured
    log: tuple[str, ...] = ()
    result: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def determinate(self) -> bool:
        return self.total is not None and self.done is not None


Emit = Callable[[JobEvent], None]
_ids = iter(range(1, 1 << 62))
_ids_lock = threading.Lock()


def _next_id() -> int:
    with _ids_lock:
        return next(_ids)


@dataclass
class Job:
    """Base job: state, counters, a bounded log, and cooperative cancellation."""

    kind: str
    title: str
    clock: Callable[[], float] = time.monotonic
    job_id: int = field(default_factory=_next_id)
    state: JobState = "pending"
    message: str = ""
    done: int | None = None
    total: int | None = None
    reused: int | None = None
    attempts: int | None = None
    rate: float | None = None
    eta: float | None = None
    result: dict[str, Any] | None = None
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    _started: float | None = None
    _ended: float | None = None

    @property
    def elapsed(self) -> float:
        if self._started is None:
            return 0.0
        end = self._ended if self._ended is not None else self.clock()
        return max(0.0, end - self._started)

    def snapshot(self) -> JobEvent:
        return JobEvent(
            job_id=self.job_id,
            kind=self.kind,
            title=self.title,
            state=self.state,
            message=self.message,
            done=self.done,
            total=self.total,
            reused=self.reused,
            attempts=self.attempts,
            elapsed=self.elapsed,
            rate=self.rate,
            eta=self.eta,
            log=tuple(self.log),
            result=self.result,
        )

    def cancel(self) -> None:
        self.cancel_requested.set()

    def run(self, emit: Emit) -> JobEvent:
        """Run to the end (in a worker thread); return the final event."""
        self._started = self.clock()
        self.state = "running"
        emit(self.snapshot())
        try:
            self.work(emit)
        except Exception as exc:  # a job never raises into the UI: it fails, with the reason
            self.state, self.message = "failed", f"{type(exc).__name__}: {exc}"
        if self.state == "running":
            self.state = "cancelled" if self.cancel_requested.is_set() else "succeeded"
        self._ended = self.clock()
        final = self.snapshot()
        emit(final)
        return final

    def work(self, emit: Emit) -> None:
        raise NotImplementedError


@dataclass
class SubprocessJob(Job):
    """A job that is one child process; stdout lines are handled, stderr is the log."""

    command: Sequence[str] = ()
    cwd: str | None = None
    env: dict[str, str] | None = None

    def work(self, emit: Emit) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        process = subprocess.Popen(
            list(self.command),
            cwd=self.cwd,
            env=env,
            text=True,
            bufsize=1,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        stderr_lines: list[str] = []
        reader = threading.Thread(target=self._drain, args=(process, stderr_lines), daemon=True)
        reader.start()
        watcher = threading.Thread(target=self._watch_cancel, args=(process,), daemon=True)
        watcher.start()
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            if line:
                self.handle_line(line)
                emit(self.snapshot())
        code = process.wait()
        reader.join(timeout=5)
        if self.cancel_requested.is_set() and code != 0:
            self.state, self.message = "cancelled", self.cancelled_message
            return
        # A cancel that arrives after the child finished its work does not undo it:
        # report what the child did.
        self.finish(code, stderr_lines)
        if self.state == "running":
            self.state = "succeeded"

    def _drain(self, process: subprocess.Popen[str], lines: list[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            line = line.rstrip("\n")
            if line:
                lines.append(line)
                self.log.append(line)

    def _watch_cancel(self, process: subprocess.Popen[str]) -> None:
        while process.poll() is None:
            if self.cancel_requested.wait(0.05):
                break
        if process.poll() is not None:
            return
        try:  # SIGINT first: the producer stops cleanly and removes its temporary file
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=CANCEL_GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    cancelled_message = "cancelled; the previous index is untouched"

    def handle_line(self, line: str) -> None:
        self.log.append(line)

    def finish(self, code: int, stderr: list[str]) -> None:
        if code != 0:
            self.state = "failed"
            self.message = stderr[-1] if stderr else f"exited with status {code}"


def producer_command(*args: str) -> list[str]:
    """``hql-semantics ARGS`` with this interpreter, so the app and producer match."""
    return [sys.executable, "-m", "producer", *args]


@dataclass
class IndexBuildJob(SubprocessJob):
    """``hql-semantics build --progress jsonl``: the plan, texts embedded of total with a
    rate and an ETA, the result. A cancelled build keeps its checkpoint (the producer
    saves it on SIGINT), and the next build resumes from it."""

    cancelled_message = (
        "cancelled; the previous index is untouched, and the next build resumes "
        "from the vectors made so far"
    )

    def handle_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            self.log.append(line)
            return
        if not isinstance(event, dict):
            self.log.append(line)
            return
        kind = event.get("event")
        if kind == "start":
            self.total, self.done = int(event.get("to_embed", 0)), 0
            self.reused = int(event.get("reused", 0))
            try:
                self.message = plan_line(event)
            except (KeyError, TypeError, ValueError):  # an older producer's event
                self.message = f"{event.get('cards', '?')} cards: {self.total} to embed"
        elif kind == "resume":
            self.log.append(f"resumed: {event.get('vectors', 0)} vectors from an interrupted build")
        elif kind == "progress":
            self.done, self.total = int(event.get("done", 0)), int(event.get("total", 0))
            pace = pace_words(event)
            if pace:
                self.rate, self.eta = float(event["texts_per_s"]), float(event["eta"])
            self.message = f"embedded {self.done} of {self.total}" + (f", {pace}" if pace else "")
        elif kind == "warning":
            self.log.append(f"warning: {event.get('message', '')}")
        elif kind == "final":
            self.result = event
            if event.get("up_to_date"):
                self.message = "up to date: nothing to embed, the index was not rewritten"
            else:
                self.done = self.total if self.total is not None else self.done
                self.message = (
                    f"built: {event.get('embedded', 0)} embedded, {event.get('reused', 0)} reused, "
                    f"{event.get('removed', 0)} removed, {event.get('queries', 0)} queries"
                )
        elif kind == "error":
            self.error = str(event.get("message", "build failed"))
        else:
            self.log.append(line)

    error: str | None = None

    def finish(self, code: int, stderr: list[str]) -> None:
        if code != 0:
            self.state = "failed"
            self.message = self.error or (stderr[-1] if stderr else f"exited with status {code}")
        elif self.result is None:
            self.state, self.message = "failed", "the build ended without a result"


@dataclass
class IndexVerifyJob(SubprocessJob):
    """``hql-semantics verify --json``: clean, or every problem listed."""

    _stdout: list[str] = field(default_factory=list)

    def handle_line(self, line: str) -> None:
        self._stdout.append(line)

    def finish(self, code: int, stderr: list[str]) -> None:
        try:
            report = json.loads("\n".join(self._stdout)) if self._stdout else None
        except json.JSONDecodeError:
            report = None
        if not isinstance(report, dict):
            self.state = "failed"
            self.message = stderr[-1] if stderr else f"verify exited with status {code}"
            return
        self.result = report
        problems = report.get("problems") or []
        for problem in problems:
            self.log.append(str(problem.get("message", problem)))
        if code == 0 and report.get("clean"):
            self.message = f"clean: {report.get('cards', 0)} cards"
        else:
            self.state = "failed"
            count = len(problems)
            self.message = f"{count} problem{'s' if count != 1 else ''}"


def index_build_job(vault: str | Path, out: str | Path, *extra: str, **kw: Any) -> IndexBuildJob:
    command = producer_command(
        "build", "--vault", str(vault), "--out", str(out), "--progress", "jsonl", *extra
    )
    return IndexBuildJob(kind="index-build", title="index: build", command=command, **kw)


def index_verify_job(vault: str | Path, index: str | Path, **kw: Any) -> IndexVerifyJob:
    command = producer_command("verify", "--vault", str(vault), "--index", str(index), "--json")
    return IndexVerifyJob(kind="index-verify", title="index: verify", command=command, **kw)


class JobBoard:
    """Which jobs run; one job of each kind at a time (one build, one verify, ...)."""

    def __init__(self) -> None:
        self._running: dict[str, Job] = {}
        self._lock = threading.Lock()

    def running(self, kind: str) -> Job | None:
        with self._lock:
            return self._running.get(kind)

    def claim(self, job: Job) -> str | None:
        """Reserve the job's kind; return why not when one of its kind already runs."""
        with self._lock:
            current = self._running.get(job.kind)
            if current is not None:
                return f"{current.title} is already running"
            self._running[job.kind] = job
            return None

    def release(self, job: Job) -> None:
        with self._lock:
            if self._running.get(job.kind) is job:
                del self._running[job.kind]
