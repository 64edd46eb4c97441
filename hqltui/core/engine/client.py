"""A thin client over the raw ``hotdata`` SDK (0.12.0), for one database and one table.

Everything goes through :func:`hqltui.core.engine.retry.call`; the SDK's own
retries are off (urllib3 ``Retry(0)``, the enhanced query client with zero 429
retries, the generated load client without its lock retry). The sleep, the
clock, the poll interval and the job timeout are injectable, so fault tests run
in milliseconds. ``hotdata`` is imported when a client opens, never at import.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hqltui.core.engine import retry as retry_mod
from hqltui.core.engine.errors import (
    ConnectionLost,
    EngineCancelled,
    EngineFailure,
)
from hqltui.core.engine.events import EventSink, JobProgress, Retrying, Step, ignore
from hqltui.core.engine.retry import RetryPolicy
from hqltui.core.engine.settings import SCHEMA, EngineSettings

PARQUET = "application/vnd.apache.parquet"
CLOCK_SKEW = timedelta(seconds=30)  # how far the engine's job timestamps may lag ours
RESENDS_AFTER_LOSS = 2  # a create found not to have happened is sent again at most this often


@dataclass(frozen=True)
class IndexInfo:
    name: str
    index_type: str
    columns: tuple[str, ...]
    metric: str | None
    status: str  # "ready" | "pending"

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str | None]:
        return (self.index_type, self.columns, self.metric)

    def describe(self) -> str:
        metric = f", {self.metric}" if self.metric else ""
        return f"{self.index_type} index `{self.name}` on {', '.join(self.columns)}{metric}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.index_type, "columns": list(self.columns),
                "metric": self.metric, "status": self.status}


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


class EngineClient:
    def __init__(
        self,
        settings: EngineSettings,
        *,
        operation: str = "engine",
        on_event: EventSink = ignore,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        poll_interval: float = 1.0,
        job_timeout: float = 1800.0,
        cancel: threading.Event | None = None,
        request_timeout: float = 120.0,
    ) -> None:
        self.settings = settings
        self.operation = operation
        self.on_event = on_event
        self.policy = policy or RetryPolicy()
        # With a cancel event the default sleep is ``cancel.wait``: a cancel (or the
        # app quitting) ends a Retry-After or poll wait at once.
        self.sleep = sleep if sleep is not None else retry_mod.cancellable_sleep(cancel)
        self.clock = clock
        self.poll_interval = poll_interval
        self.job_timeout = job_timeout
        self.cancel = cancel
        self.request_timeout = request_timeout
        self._api: Any = None
        self._connection_id: str | None = None
        self._known_jobs: set[str] = set()

    # ------------------------------------------------------------------ plumbing

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def api(self) -> Any:
        if self._api is None:
            import hotdata

            s = self.settings
            kwargs: dict[str, Any] = {
                "api_key": s.api_key,
                "workspace_id": s.workspace,
                "retries": retry_mod.transport_retry(),
            }
            if s.host:
                kwargs["host"] = s.host
            self._api = hotdata.ApiClient(hotdata.Configuration(**kwargs))
        return self._api

    def close(self) -> None:
        if self._api is not None:
            try:
                self._api.close()
            except Exception:  # noqa: BLE001 - closing a pool must not mask the real outcome
                pass
            self._api = None

    def emit(self, event: Any) -> None:
        self.on_event(event)

    def step(self, message: str) -> None:
        self.emit(Step(self.operation, message))

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise EngineCancelled(f"{self.operation} cancelled")

    def pause(self, seconds: float) -> None:
        """Wait between polls; a cancel set before or during the wait raises at once after."""
        self.check_cancel()
        self.sleep(seconds)
        self.check_cancel()

    def call(self, what: str, fn: Callable[[], Any], *, idempotent: bool = False) -> Any:
        self.check_cancel()
        return retry_mod.call(
            what, fn, policy=self.policy, sleep=self.sleep, clock=self.clock,
            on_event=self.on_event, operation=self.operation, idempotent=idempotent,
            cancel=self.cancel,
        )

    def _timeout(self) -> float:
        return self.request_timeout

    # ------------------------------------------------------------------ database and table

    @property
    def connection_id(self) -> str:
        if self._connection_id is None:
            import hotdata

            api = hotdata.api.databases_api.DatabasesApi(self.api)
            try:
                db = self.call(
                    f"read database {self.settings.database}",
                    lambda: api.get_database(self.settings.database,
                                             _request_timeout=self._timeout()),
                    idempotent=True,
                )
            except EngineFailure as exc:
                if exc.status == 404:
                    raise EngineFailure(
                        f"database `{self.settings.database}` was not found in workspace "
                        f"`{self.settings.workspace}` ({exc}); check [engine] database",
                        status=404, code=exc.code,
                    ) from exc
                raise
            self._connection_id = db.default_connection_id
        return self._connection_id

    def table_has_data(self) -> bool:
        """Whether ``public.<table>`` exists and has had a load (queries fail otherwise)."""
        import hotdata

        api = hotdata.InformationSchemaApi(self.api)
        conn = self.connection_id
        info = self.call(
            "read the table list",
            lambda: api.information_schema(connection_id=conn, var_schema=SCHEMA,
                                           table=self.settings.table,
                                           _request_timeout=self._timeout()),
            idempotent=True,
        )
        for t in info.tables or []:
            if t.var_schema == SCHEMA and t.table == self.settings.table:
                return bool(t.synced)
        return False

    # ------------------------------------------------------------------ SQL

    def query(self, sql: str, what: str = "query") -> tuple[list[str], list[list[Any]]]:
        import hotdata
        from hotdata.query import RetryPolicy as SdkRetry

        api = hotdata.QueryApi(self.api, retry=SdkRetry(max_retries=0))
        request = hotdata.QueryRequest(sql=sql)
        response = self.call(
            what,
            lambda: api.query(request, x_database_id=self.settings.database,
                              _request_timeout=self._timeout()),
            idempotent=True,
        )
        rows = getattr(response, "rows", None)
        if rows is None:  # an async answer: not asked for, never expected
            raise EngineFailure(f"{what}: the engine answered asynchronously; not supported")
        return list(response.columns), [list(r) for r in rows]

    # ------------------------------------------------------------------ uploads and loads

    def upload(self, data: bytes, filename: str) -> str:
        import hotdata

        api = hotdata.UploadsApi(self.api)
        for attempt in range(1, RESENDS_AFTER_LOSS + 2):
            try:
                done = self.call(
                    "upload Parquet",
                    lambda: api.upload_file(data, content_type=PARQUET, filename=filename),
                )
                return str(done.upload_id)
            except ConnectionLost as exc:
                # An upload session nobody loads is harmless: start a fresh one.
                if attempt > RESENDS_AFTER_LOSS:
                    raise
                self.emit(Retrying(self.operation, "upload Parquet", None, None, attempt, 0.0,
                                   f"{exc}; starting a new upload"))
            except hotdata.UploadError as exc:
                raise EngineFailure(f"upload Parquet: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def load(self, mode: str, upload_id: str, label: str) -> bool:
        """Submit one load and wait for it; a dropped reply waits on what the engine started.

        Returns True when the engine confirmed the load, False when the reply was
        lost (whatever the engine started has been waited on). The caller re-reads
        the rows afterwards in every case: a load is never resent blindly.
        """
        import hotdata

        api = hotdata.api.databases_api.DatabasesApi(self.api)  # no SDK lock retry
        request = hotdata.LoadManagedTableRequest(
            mode=mode, upload_id=upload_id, format="parquet", key=["name"], var_async=True,
        )
        since = datetime.now(UTC)
        before = self._job_ids("managed_load")
        started = self.clock()
        try:
            answer = self.call(
                f"{label} load",
                lambda: api.load_database_table(self.settings.database, SCHEMA,
                                                self.settings.table, request,
                                                _request_timeout=self._timeout()),
            )
        except ConnectionLost as exc:
            self.emit(Retrying(self.operation, f"{label} load", None, None, 1, 0.0,
                               f"{exc}; re-reading the engine's jobs and rows before going on"))
            for job in self._new_jobs("managed_load", since, before):
                self.wait_job(job.id, f"{label} load", "managed_load", started)
            return False
        job_id = getattr(answer, "id", None)
        if job_id is not None and not hasattr(answer, "row_count"):
            self._known_jobs.add(job_id)
            self.wait_job(job_id, f"{label} load", "managed_load", started)
        return True

    # ------------------------------------------------------------------ indexes

    def list_indexes(self) -> list[IndexInfo]:
        import hotdata

        api = hotdata.IndexesApi(self.api)
        conn = self.connection_id
        answer = self.call(
            "list the table's indexes",
            lambda: api.list_indexes(conn, SCHEMA, self.settings.table,
                                     _request_timeout=self._timeout()),
            idempotent=True,
        )
        out = []
        for i in answer.indexes or []:
            metric = i.metric if i.metric is None else str(_value(i.metric)).lower()
            out.append(IndexInfo(
                name=i.index_name,
                index_type=str(_value(i.index_type)).lower(),
                columns=tuple(str(c).lower() for c in i.columns),
                metric=metric,
                status=str(_value(i.status)).lower(),
            ))
        return out

    def delete_index(self, name: str) -> None:
        import hotdata

        api = hotdata.IndexesApi(self.api)
        conn = self.connection_id
        try:
            self.call(
                f"drop index `{name}`",
                lambda: api.delete_index(conn, SCHEMA, self.settings.table, name,
                                         _request_timeout=self._timeout()),
            )
        except ConnectionLost:
            pass  # re-read below decides
        except EngineFailure as exc:
            if exc.status != 404:
                raise
        if any(i.name == name for i in self.list_indexes()):
            raise EngineFailure(f"drop index `{name}`: the index is still listed after the drop")

    def create_index(self, name: str, index_type: str, columns: list[str],
                     metric: str | None, label: str) -> None:
        """Create one index and wait for its job; never sends the create twice blindly."""
        import hotdata

        api = hotdata.IndexesApi(self.api)
        conn = self.connection_id
        request = hotdata.CreateIndexRequest(
            index_name=name, index_type=index_type, columns=columns, metric=metric,
            var_async=True,
        )
        started = self.clock()
        for attempt in range(1, RESENDS_AFTER_LOSS + 2):
            since = datetime.now(UTC)
            before = self._job_ids("create_index")
            try:
                answer = self.call(
                    f"create {label}",
                    lambda: api.create_index(conn, SCHEMA, self.settings.table, request,
                                             _request_timeout=self._timeout()),
                )
            except ConnectionLost as exc:
                self.emit(Retrying(self.operation, f"create {label}", None, None, attempt, 0.0,
                                   f"{exc}; re-reading the indexes before anything else"))
                if self._adopt(name, label, since, before, started):
                    return
                if attempt > RESENDS_AFTER_LOSS:
                    raise
                self.step(f"{label}: the engine never received the create; sending it again")
                continue
            job_id = getattr(answer, "id", None)
            if job_id is not None and not hasattr(answer, "index_name"):
                self._known_jobs.add(job_id)
                self.wait_job(job_id, label, "create_index", started)
            else:  # built inline (201)
                self.emit(JobProgress(self.operation, label, None, "create_index", "succeeded",
                                      1, self.clock() - started))
            return

    def _adopt(self, name: str, label: str, since: datetime, before: set[str],
               started: float) -> bool:
        """After a lost create reply: True when the engine did create it (then waited on)."""
        jobs = self._new_jobs("create_index", since, before)
        if jobs:
            self.wait_job(jobs[-1].id, label, "create_index", started)
            return True
        deadline = self.clock() + self.job_timeout
        while True:
            found = next((i for i in self.list_indexes() if i.name == name), None)
            if found is None:
                return False
            self.emit(JobProgress(self.operation, label, None, "create_index",
                                  "succeeded" if found.status == "ready" else "running",
                                  1, self.clock() - started))
            if found.status == "ready":
                return True
            if self.clock() > deadline:
                raise EngineFailure(f"{label}: still pending after {self.job_timeout:g}s")
            self.pause(self.poll_interval)

    # ------------------------------------------------------------------ jobs

    def _jobs(self, job_type: str) -> list[Any]:
        import hotdata

        api = hotdata.JobsApi(self.api)
        answer = self.call(
            "list jobs",
            lambda: api.list_jobs(job_type=hotdata.JobType(job_type), limit=200,
                                  _request_timeout=self._timeout()),
            idempotent=True,
        )
        return list(answer.jobs or [])

    def _job_ids(self, job_type: str) -> set[str]:
        """The jobs that exist before a create or load is sent (to recognise its job later)."""
        return {job.id for job in self._jobs(job_type)}

    def _new_jobs(self, job_type: str, since: datetime, before: set[str]) -> list[Any]:
        """Jobs of ``job_type`` that appeared since ``before`` was taken (and not ours already)."""
        found = []
        for job in self._jobs(job_type):
            created = job.created_at
            if created is not None and created.tzinfo is None:
                created = created.replace(tzinfo=UTC)
            if job.id in self._known_jobs or job.id in before:
                continue
            if created is not None and created < since - CLOCK_SKEW:
                continue
            found.append(job)
        found.sort(key=lambda j: j.created_at or since)
        for job in found:
            self._known_jobs.add(job.id)
        return found

    def wait_job(self, job_id: str, label: str, job_type: str, started: float) -> Any:
        """Poll a job to its end; ``failed`` and ``partially_succeeded`` raise with its message."""
        import hotdata

        api = hotdata.JobsApi(self.api)
        last: tuple[str, int] | None = None
        while True:
            job = self.call(
                f"{label}: read job {job_id}",
                lambda: api.get_job(job_id, _request_timeout=self._timeout()),
                idempotent=True,
            )
            status = str(_value(job.status)).lower()
            attempts = int(job.attempts or 0)
            elapsed = self.clock() - started
            error = job.error_message if status in ("failed", "partially_succeeded") else None
            self.emit(JobProgress(self.operation, label, job_id, job_type, status, attempts,
                                  elapsed, changed=(status, attempts) != last, error=error))
            last = (status, attempts)
            if status == "succeeded":
                return job
            if status == "failed":
                message = job.error_message or "the job record gives no message"
                raise EngineFailure(f"{label} failed: {message}", detail=job.error_message)
            if status == "partially_succeeded":
                message = job.error_message or "the job record gives no detail"
                raise EngineFailure(
                    f"{label} only partially succeeded, which counts as a failure: {message}",
                    detail=job.error_message,
                )
            if elapsed > self.job_timeout:
                raise EngineFailure(
                    f"{label}: job {job_id} still {status} after {elapsed:.0f}s; "
                    "it may still finish -- run the command again later"
                )
            self.pause(self.poll_interval)
