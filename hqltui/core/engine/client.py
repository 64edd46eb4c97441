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
from hqltui.core.engine import sql
from hqltui.core.engine.errors import (
    ConnectionLost,
    EngineCancelled,
    EngineFailure,
    EngineRefused,
    engine_message,
)
from hqltui.core.engine.events import EventSink, JobProgress, Retrying, Step, ignore
from hqltui.core.engine.retry import RetryPolicy
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.ranking import Refusal

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
    created_at: Any = None  # the engine's timestamp: with the name, it identifies this index

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str | None]:
        return (self.index_type, self.columns, self.metric)

    def describe(self) -> str:
        metric = f", {self.metric}" if self.metric else ""
        return f"{self.index_type} index `{self.name}` on {', '.join(self.columns)}{metric}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.index_type, "columns": list(self.columns),
                "metric": self.metric, "status": self.status}


@dataclass(frozen=True)
class QueryResult:
    """One statement's answer with what the engine said about it (kept for provenance)."""

    what: str
    sql: str
    columns: list[str]
    rows: list[list[Any]]
    warning: str | None = None
    execution_time_ms: int | None = None
    query_run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "sql": self.sql, "warning": self.warning,
                "execution_time_ms": self.execution_time_ms, "query_run_id": self.query_run_id}


JOBS_PAGE = 200  # list_jobs is paged: read pages of this size until a short one


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


def job_result(job: Any) -> Any:
    """What a job's record says it produced (``IndexInfoResponse``, ``LoadManagedTableResponse``),
    or None while it runs, when it failed, or when the engine gives no payload."""
    result = getattr(job, "result", None)
    return getattr(result, "actual_instance", result) if result is not None else None


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
        self.ran: list[QueryResult] = []  # every statement sent, in order (--show-sql)
        self._table: sql.Table | None = None

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

    def call(self, what: str, fn: Callable[[], Any], *, idempotent: bool = False,
             transient: bool = False) -> Any:
        self.check_cancel()
        return retry_mod.call(
            what, fn, policy=self.policy, sleep=self.sleep, clock=self.clock,
            on_event=self.on_event, operation=self.operation, idempotent=idempotent,
            transient=transient, cancel=self.cancel, timeout=self.request_timeout,
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

    def _table_info(self) -> Any:
        """The control plane's record of ``schema.table`` (None: not declared)."""
        import hotdata

        api = hotdata.InformationSchemaApi(self.api)
        conn = self.connection_id
        s = self.settings
        info = self.call(
            "read the table list",
            lambda: api.information_schema(connection_id=conn, var_schema=s.schema,
                                           table=s.table, include_columns=True,
                                           _request_timeout=self._timeout()),
            idempotent=True,
        )
        for t in info.tables or []:
            if str(t.var_schema).lower() == s.schema and str(t.table).lower() == s.table:
                return t
        return None

    def table_has_data(self) -> bool:
        """Whether ``schema.table`` exists and has had a load (queries fail otherwise)."""
        t = self._table_info()
        return t is not None and bool(t.synced)

    def table_columns(self) -> list[str] | None:
        """The table's column names (None: no data yet, so none are listed)."""
        t = self._table_info()
        if t is None or not t.synced:
            return None
        return [str(c.name).lower() for c in (t.columns or [])]

    @property
    def table(self) -> sql.Table:
        """The table as the SQL names it: its catalog set in ``[engine]`` and checked, or
        discovered, once per client (``settings`` then carries it)."""
        if self._table is None:
            from hqltui.core.engine.provenance import cached

            # cached per table and per [engine] catalog: a changed setting is checked again
            self.settings = self.settings.with_catalog(
                cached(self.settings, f"catalog {self.settings.catalog}", self._catalog))
            cols = self.settings.columns
            self._table = sql.Table(self.settings.full_table, key=str(cols["key"]),
                                    text=str(cols["text"]), vector=str(cols["vector"]),
                                    model=cols["model"], revision=cols["revision"])
        return self._table

    def _catalog(self) -> str:
        """The catalog ``schema.table`` answers to, from ``information_schema.tables``: the
        database record does not settle it (an attached source answers to its alias)."""
        s = self.settings
        _, rows = self.query(sql.catalogs_sql(s.schema, s.table), "find the table's catalog")
        return choose_catalog(sorted({str(r[0]).lower() for r in rows}), s)

    # ------------------------------------------------------------------ SQL

    def query(self, sql: str, what: str = "query") -> tuple[list[str], list[list[Any]]]:
        answer = self.run_sql(sql, what)
        return answer.columns, answer.rows

    def run_sql(self, sql: str, what: str = "query") -> QueryResult:
        """One statement; the answer keeps the engine's warning, time and query run id."""
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
        answer = QueryResult(
            what=what, sql=sql, columns=list(response.columns), rows=[list(r) for r in rows],
            warning=getattr(response, "warning", None) or None,
            execution_time_ms=getattr(response, "execution_time_ms", None),
            query_run_id=getattr(response, "query_run_id", None),
        )
        self.ran.append(answer)
        return answer

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
                raise EngineFailure(f"upload Parquet: {engine_message(exc)}") from exc
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
                lambda: api.load_database_table(self.settings.database, self.settings.schema,
                                                self.settings.table, request,
                                                _request_timeout=self._timeout()),
            )
        except ConnectionLost as exc:
            self.emit(Retrying(self.operation, f"{label} load", None, None, 1, 0.0,
                               f"{exc}; re-reading the engine's jobs and rows before going on"))
            for job in self._new_jobs("managed_load", since, before):
                # Waited on as ours only when its record names this table.
                self.wait_job(job.id, f"{label} load", "managed_load", started,
                              owned=self._loads_here)
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
            lambda: api.list_indexes(conn, self.settings.schema, self.settings.table,
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
                created_at=getattr(i, "created_at", None),
            ))
        return out

    def failed_builds(self, indexes: list[IndexInfo]) -> dict[str, tuple[str, str | None]]:
        """name -> (status, error_message) for each listed index whose own build job ended
        ``failed`` or ``partially_succeeded``: such an index may be listed ``ready`` and
        still not cover the rows, so it is never "up to date".

        A job is an index's own when its result names the index and carries the same
        creation time (a job record names no table or database).
        """
        if not indexes:
            return {}
        wanted = {(i.name, _stamp(i.created_at)): i for i in indexes}
        out: dict[str, tuple[str, str | None]] = {}
        for job in self._jobs("create_index"):
            result = job_result(job)
            key = (getattr(result, "index_name", None), _stamp(getattr(result, "created_at", None)))
            if result is None or key not in wanted:
                continue
            status = str(_value(job.status)).lower()
            if status in JOB_FAILED:
                out[key[0]] = (status, job.error_message)
            else:
                out.pop(key[0], None)
        return out

    def delete_index(self, name: str) -> None:
        import hotdata

        api = hotdata.IndexesApi(self.api)
        conn = self.connection_id
        try:
            self.call(
                f"drop index `{name}`",
                lambda: api.delete_index(conn, self.settings.schema, self.settings.table, name,
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
                    lambda: api.create_index(conn, self.settings.schema, self.settings.table,
                                             request, _request_timeout=self._timeout()),
                )
            except ConnectionLost as exc:
                self.emit(Retrying(self.operation, f"create {label}", None, None, attempt, 0.0,
                                   f"{exc}; re-reading the indexes before anything else"))
                if self._adopt(request, label, since, before, started):
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

    def _adopt(self, request: Any, label: str, since: datetime, before: set[str],
               started: float) -> bool:
        """After a lost create reply: True when the engine did create it (then waited on).

        The table's index list is the evidence (a job record names no table until it
        ends): the index listed under the name asked for means the create arrived, and
        it is followed to ``ready``; then a finished job whose result names that index,
        type and columns, if any, says whether it only partially succeeded. Not listed:
        a finished job of that description that failed is reported; otherwise the
        create never arrived (False: the caller may send it again).
        """
        name = request.index_name
        deadline = self.clock() + self.job_timeout
        while True:
            found = next((i for i in self.list_indexes() if i.name == name), None)
            if found is None:
                job = self._finished_job_for(request, since, before)
                if job is not None:
                    self._judge(job, label, job.id)
                return False
            job = self._finished_job_for(request, since, before, found.created_at)
            if job is not None:
                self.emit(JobProgress(self.operation, label, job.id, "create_index",
                                      str(_value(job.status)).lower(), int(job.attempts or 0),
                                      self.clock() - started, error=job.error_message))
                self._judge(job, label, job.id)
                return True
            self.emit(JobProgress(self.operation, label, None, "create_index",
                                  "succeeded" if found.status == "ready" else "running",
                                  1, self.clock() - started))
            if found.status == "ready":
                return True
            if self.clock() > deadline:
                raise EngineFailure(f"{label}: still pending after {self.job_timeout:g}s")
            self.pause(self.poll_interval)

    def _finished_job_for(self, request: Any, since: datetime, before: set[str],
                          created_at: Any = None) -> Any:
        """The newest finished create_index job whose result is the index ``request`` asked for
        (and, given the listed index's ``created_at``, that very index).

        Each unfinished candidate is read once (its record, not the list, is current).
        """
        import hotdata

        api = hotdata.JobsApi(self.api)
        for job in reversed(self._new_jobs("create_index", since, before, claim=False)):
            if str(_value(job.status)).lower() not in JOB_TERMINAL:
                job = self.call(f"read job {job.id}",
                                lambda job_id=job.id: api.get_job(
                                    job_id, _request_timeout=self._timeout()),
                                idempotent=True, transient=True)
            if index_job_matches(job, request.index_name, request.index_type,
                                 tuple(request.columns), created_at):
                self._known_jobs.add(job.id)
                return job
        return None

    def _loads_here(self, result: Any) -> bool:
        return (str(getattr(result, "schema_name", "")).lower() == self.settings.schema
                and str(getattr(result, "table_name", "")).lower() == self.settings.table)

    # ------------------------------------------------------------------ jobs

    def _jobs(self, job_type: str) -> list[Any]:
        """Every job of ``job_type``: the list is paged, and read to its last page."""
        import hotdata

        api = hotdata.JobsApi(self.api)
        out: list[Any] = []
        while True:
            offset = len(out)
            page = self.call(
                "list jobs",
                lambda offset=offset: api.list_jobs(
                    job_type=hotdata.JobType(job_type), limit=JOBS_PAGE, offset=offset,
                    _request_timeout=self._timeout()),
                idempotent=True, transient=True,
            )
            jobs = list(page.jobs or [])
            out.extend(jobs)
            if len(jobs) < JOBS_PAGE:
                return out

    def _job_ids(self, job_type: str) -> set[str]:
        """The jobs that exist before a create or load is sent (to recognise its job later)."""
        return {job.id for job in self._jobs(job_type)}

    def _new_jobs(self, job_type: str, since: datetime, before: set[str], *,
                  claim: bool = True) -> list[Any]:
        """Jobs of ``job_type`` that appeared since ``before`` was taken (and not ours already).

        ``claim``: mark them as seen, so a later look does not return them again.
        """
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
        if claim:
            self._known_jobs.update(job.id for job in found)
        return found

    def wait_job(self, job_id: str, label: str, job_type: str, started: float,
                 owned: Callable[[Any], bool] | None = None) -> Any:
        """Poll a job to its end; ``failed`` and ``partially_succeeded`` raise with its message.

        A 5xx or a dropped connection on a status read is retried within the retry
        budget (the job runs on regardless). ``owned``: the job was found in the job
        list, not named by the engine's answer; it is read quietly and judged only at
        its end, by what its record says it produced -- a result that is not ours
        (``owned`` is false), or no result at all, leaves it alone and returns None.
        """
        import hotdata

        api = hotdata.JobsApi(self.api)
        last: tuple[str, int] | None = None
        while True:
            job = self.call(
                f"{label}: read job {job_id}",
                lambda: api.get_job(job_id, _request_timeout=self._timeout()),
                idempotent=True, transient=True,
            )
            status = str(_value(job.status)).lower()
            attempts = int(job.attempts or 0)
            elapsed = self.clock() - started
            finished = status in JOB_TERMINAL
            if owned is not None and finished:
                result = job_result(job)
                if result is None or not owned(result):
                    return None
            if owned is None or finished:
                error = job.error_message if status in JOB_FAILED else None
                self.emit(JobProgress(self.operation, label, job_id, job_type, status,
                                      attempts, elapsed, changed=(status, attempts) != last,
                                      error=error))
            last = (status, attempts)
            if finished:
                return self._judge(job, label, job_id)
            if elapsed > self.job_timeout:
                raise EngineFailure(
                    f"{label}: job {job_id} still {status} after {elapsed:.0f}s; "
                    "it may still finish -- run the command again later"
                )
            self.pause(self.poll_interval)

    def _judge(self, job: Any, label: str, job_id: str) -> Any:
        """A finished job: returned when it succeeded, else the failure with its message."""
        status = str(_value(job.status)).lower()
        if status == "failed":
            message = job.error_message or "the job record gives no message"
            raise EngineFailure(f"{label} failed: {message}", detail=job.error_message)
        if status == "partially_succeeded":
            message = job.error_message or "the job record gives no detail"
            raise EngineFailure(
                f"{label} only partially succeeded, which counts as a failure: {message}",
                detail=job.error_message,
            )
        return job


def choose_catalog(found: list[str], s: EngineSettings) -> str:
    """The one catalog of ``found`` (what information_schema.tables lists for the table):
    ``[engine] catalog`` when it is among them; else the only one; else a refusal."""
    where = f"{s.schema}.{s.table}"
    if s.catalog is not None:
        if s.catalog in found:
            return s.catalog
        listed = ", ".join(found) if found else "no catalog at all"
        raise EngineRefused(Refusal(
            f"[engine] catalog = {s.catalog}, but information_schema.tables lists "
            f"{where} under {listed}",
            f'set catalog = "{found[0]}" in [engine]' if len(found) == 1
            else "check catalog, schema and table in [engine]",
        ))
    if not found:
        raise EngineRefused(Refusal(
            f"information_schema.tables lists no table {where} in database {s.database} "
            "(a table with no rows is not listed)",
            "check schema and table in [engine], or run `hql-tui engine sync VAULT`",
        ))
    if len(found) > 1:
        raise EngineRefused(Refusal(
            f"{where} answers to {len(found)} catalogs ({', '.join(found)}), and the "
            "database record does not say which is meant",
            f"set catalog = \"<one of {', '.join(found)}>\" in [engine]",
        ))
    return found[0]


JOB_FAILED = ("failed", "partially_succeeded")
JOB_TERMINAL = ("succeeded", *JOB_FAILED)


def _stamp(value: Any) -> str | None:
    """A timestamp as one comparable text (the SDK parses some, leaves others as strings)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat()
    try:
        return _stamp(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return str(value)


def index_job_matches(job: Any, name: str, index_type: str, columns: tuple[str, ...],
                      created_at: Any = None) -> bool:
    """Whether a finished create_index job's result is the index of that name, type and
    columns (and, when given, of that creation time: the very index listed)."""
    result = job_result(job)
    if result is None or getattr(result, "index_name", None) != name:
        return False
    if created_at is not None and _stamp(getattr(result, "created_at", None)) != _stamp(
            created_at):
        return False
    return (str(_value(getattr(result, "index_type", ""))).lower() == index_type
            and tuple(str(c).lower() for c in getattr(result, "columns", ()) or ()) == columns)
