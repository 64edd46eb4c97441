"""The job events every engine operation emits, for the app's jobs panel and the CLI.

An operation takes ``on_event: Callable[[EngineEvent], None]`` and calls it from
the thread it runs on. Every event has ``operation`` (``sync``, ``build``,
``verify``, ``search``), ``describe()`` (one line for a person) and
``to_json()`` (a flat object whose ``event`` names the class).

``Step(operation, message)``
    A phase began: "reading the engine's rows", "dropping 2 search indexes".
``RowsUploaded(operation, action, rows, bytes, done, total)``
    One load was written: ``action`` is ``replace`` (first upload), ``delete``,
    ``rewrite`` or ``insert``; ``rows`` in this load; ``done``/``total`` count
    rows over the whole sync.
``JobProgress(operation, label, job_id, job_type, status, attempts, elapsed, changed)``
    One poll of an engine job (an index build or a load). ``label`` says what it
    is (``bm25 index on text``); ``status`` is the job's own (``pending``,
    ``running``, ``succeeded``, ``partially_succeeded``, ``failed``);
    ``elapsed`` is seconds since the client submitted it; ``changed`` is true
    when status or attempts moved since the previous poll. ``error`` carries the
    job's ``error_message`` verbatim on a failure.
``Retrying(operation, what, status, code, attempt, wait, message)``
    The engine asked us to come back later (409 ``RESOURCE_LOCKED``, 429
    ``OVERLOADED``), or a connection dropped and the state is being re-read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    operation: str
    message: str

    def describe(self) -> str:
        return f"{self.operation}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"event": "step", **asdict(self)}


@dataclass(frozen=True)
class RowsUploaded:
    operation: str
    action: str
    rows: int
    bytes: int
    done: int
    total: int

    def describe(self) -> str:
        return (
            f"{self.operation}: {self.action} load of {self.rows} row"
            f"{'' if self.rows == 1 else 's'} ({self.bytes:,} bytes of Parquet); "
            f"{self.done}/{self.total} rows written"
        )

    def to_json(self) -> dict[str, Any]:
        return {"event": "rows_uploaded", **asdict(self)}


@dataclass(frozen=True)
class JobProgress:
    operation: str
    label: str
    job_id: str | None
    job_type: str
    status: str
    attempts: int
    elapsed: float
    changed: bool = True
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "partially_succeeded", "failed")

    def describe(self) -> str:
        tail = f": {self.error}" if self.error else ""
        return (
            f"{self.operation}: {self.label} -- {self.status}, attempts {self.attempts}, "
            f"{self.elapsed:.1f}s{tail}"
        )

    def to_json(self) -> dict[str, Any]:
        return {"event": "job", **asdict(self)}


@dataclass(frozen=True)
class Retrying:
    operation: str
    what: str
    status: int | None
    code: str | None
    attempt: int
    wait: float
    message: str

    def describe(self) -> str:
        code = f" {self.code}" if self.code else ""
        status = f"{self.status}{code}: " if self.status else ""
        return (
            f"{self.operation}: {self.what} -- {status}{self.message}; "
            f"retry {self.attempt} in {self.wait:.1f}s"
        )

    def to_json(self) -> dict[str, Any]:
        return {"event": "retry", **asdict(self)}


EngineEvent = Step | RowsUploaded | JobProgress | Retrying
EventSink = Callable[[EngineEvent], None]


def ignore(event: EngineEvent) -> None:
    """The default sink."""
