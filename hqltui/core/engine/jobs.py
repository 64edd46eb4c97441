"""Engine operations as jobs: "engine: sync + build" and "engine: verify".

Each job runs the engine client's operations in the job's worker thread with
``Options(on_event=..., cancel=job.cancel_requested)`` and turns the client's
events into ``hqltui.core.jobs.JobEvent`` snapshots for the jobs panel:

* ``Step`` -> the job's message and a log line;
* ``RowsUploaded`` -> determinate progress (rows written of rows to write);
* ``JobProgress`` -> the engine job's status, attempts and elapsed time (the
  progress bar goes indeterminate while an index job runs); a poll that changed
  nothing refreshes the message without a log line;
* ``Retrying`` -> a log line and the message (409/429 waits, a dropped
  connection being recovered).

A refusal (no ``[engine]``, a variable unset, a local index that cannot be
uploaded) fails the job with one line, the refusal and its fix. A failure
carries the engine's own text verbatim (a failed index job's ``error_message``
is part of it). Cancel is checked by the client between requests and polls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hqltui.core.engine.errors import EngineCancelled, EngineFailure, EngineRefused
from hqltui.core.engine.events import JobProgress, Retrying, RowsUploaded, Step
from hqltui.core.jobs import Emit, Job
from producer.wording import with_fix

KIND_SYNC_BUILD = "engine-sync-build"
KIND_VERIFY = "engine-verify"


@dataclass
class EngineJob(Job):
    """A job over the engine client. ``local`` returns the ``LocalCards`` to work on (the
    app passes its session's; by default the vault is read from ``root``)."""

    root: str | Path = "."
    local: Callable[[], Any] | None = None
    env: Mapping[str, str] | None = None  # None: the process environment
    engine_options: dict[str, Any] = field(default_factory=dict)  # sleep, clock, poll_interval
    phase: str = ""

    # ------------------------------------------------------------ plumbing

    def _local(self) -> Any:
        if self.local is not None:
            return self.local()
        from hqltui.core.engine.local import LocalCards

        return LocalCards.load(self.root)

    def options(self, emit: Emit) -> Any:
        from hqltui.core.engine.operations import Options

        def on_event(event: Any) -> None:
            if self.absorb(event):
                emit(self.snapshot())

        return Options(on_event=on_event, cancel=self.cancel_requested, **self.engine_options)

    def absorb(self, event: Any) -> bool:
        """Fold one engine event into the job; True when the job's snapshot changed."""
        if isinstance(event, Step):
            self.message = event.message
            self.log.append(event.describe())
        elif isinstance(event, RowsUploaded):
            self.done, self.total = event.done, event.total
            self.message = f"{event.done}/{event.total} rows written ({event.action} load)"
            self.log.append(event.describe())
        elif isinstance(event, JobProgress):
            if event.operation != "sync":  # an index job has no counts: status and time
                self.done = self.total = None
            self.attempts = event.attempts
            tail = f": {event.error}" if event.error else ""
            self.message = (f"{event.label}: {event.status}, attempt {event.attempts}, "
                            f"{event.elapsed:.0f}s{tail}")
            if event.changed:
                self.log.append(event.describe())
        elif isinstance(event, Retrying):
            self.message = event.describe().split(": ", 1)[-1]
            self.log.append(event.describe())
        else:
            return False
        return True

    def work(self, emit: Emit) -> None:
        from hqltui.core.engine.operations import settings_or_refuse

        try:
            local = self._local()
            settings = settings_or_refuse(local, None if self.env is None else dict(self.env))
            self.run_engine(local, settings, emit)
        except EngineRefused as exc:
            self.state = "failed"
            self.message = f"refused: {with_fix(exc.refusal.message, exc.refusal.fix)}"
            self.log.append(self.message)
        except EngineCancelled:
            self.state = "cancelled"
            self.message = f"cancelled during {self.phase or 'start-up'}; " + self.cancel_note()
            self.log.append(self.message)
        except EngineFailure as exc:
            self.state = "failed"
            self.message = str(exc)  # the engine's own words, a job's error_message included
            if exc.detail and exc.detail not in self.message:
                self.message += f": {exc.detail}"
            self.log.append(f"{self.phase}: {self.message}" if self.phase else self.message)

    def cancel_note(self) -> str:
        return "the engine keeps what was finished before the cancel"

    def run_engine(self, local: Any, settings: Any, emit: Emit) -> None:
        raise NotImplementedError


@dataclass
class EngineSyncBuildJob(EngineJob):
    """``engine sync`` then ``engine build``; the result holds both reports."""

    def cancel_note(self) -> str:
        if self.phase == "sync":
            return ("a load job may still run on the engine; run engine sync + build again "
                    "to finish (sync re-reads the rows first)")
        if self.phase == "build":
            return ("an index build job may still run on the engine; run engine sync + build "
                    "again to finish (build waits for a pending index)")
        return "run engine sync + build again to finish"

    def run_engine(self, local: Any, settings: Any, emit: Emit) -> None:
        from hqltui.core.engine.operations import build, sync

        options = self.options(emit)
        self.phase = "sync"
        synced = sync(local, settings, options)
        self.log.append(f"sync: {synced.summary()}")
        emit(self.snapshot())
        self.phase = "build"
        self.done = self.total = None
        built = build(settings, options)
        self.log.append(f"build: {built.summary()}")
        self.result = {"sync": synced.to_json(), "build": built.to_json()}
        self.message = f"{synced.summary()} · {built.summary()}"


@dataclass
class EngineVerifyJob(EngineJob):
    """``engine verify``: clean, or every problem in the log; the report is kept."""

    report: Any = None

    def run_engine(self, local: Any, settings: Any, emit: Emit) -> None:
        from hqltui.core.engine.operations import verify

        self.phase = "verify"
        report = verify(local, settings, self.options(emit))
        self.report = report
        self.result = report.to_json()
        for check in report.checks:  # a table this tool did not build
            self.log.append(check.line())
        for problem in [] if report.checks else report.problems:
            cards = f": {', '.join(problem.cards[:10])}" if problem.cards else ""
            self.log.append(f"{problem.kind}: {problem.message}{cards}")
        counts = report.counts()
        tally = f"{counts['stale']} stale {counts['missing']} missing {counts['orphan']} orphan"
        if report.clean:
            self.message = report.summary()
        else:
            self.state = "failed"
            self.message = f"{report.summary()} ({tally})"


def engine_sync_build_job(root: str | Path, **kw: Any) -> EngineSyncBuildJob:
    return EngineSyncBuildJob(kind=KIND_SYNC_BUILD, title="engine: sync + build", root=root, **kw)


def engine_verify_job(root: str | Path, **kw: Any) -> EngineVerifyJob:
    return EngineVerifyJob(kind=KIND_VERIFY, title="engine: verify", root=root, **kw)
