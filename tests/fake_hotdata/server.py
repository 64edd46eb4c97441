"""The HTTP face of the fake: routing, auth and scope headers, body validation, faults.

Request bodies are validated with the pinned ``hotdata`` SDK's own pydantic models and every
JSON response is checked against the SDK model the client will deserialise it with, so the
fake cannot drift from the wire format the SDK speaks.
"""

from __future__ import annotations

import fnmatch
import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import hotdata.models as m
import pyarrow as pa
from pydantic import ValidationError

from .state import ApiError, FakeState, HttpFault, JobFault, bad_request

ARROW_STREAM = "application/vnd.apache.arrow.stream"

_DEFAULT_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    409: "RESOURCE_LOCKED",
    413: "INLINE_DATA_TOO_LARGE",
    429: "OVERLOADED",
    500: "INTERNAL",
    503: "PERSISTENCE_UNAVAILABLE",
}


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    headers: Any
    body: bytes
    match: dict[str, str]
    model: Any = None  # the validated request model's dict

    def header(self, name: str) -> str | None:
        value = self.headers.get(name)
        return value if value else None


@dataclass
class Reply:
    status: int
    body: Any = None  # dict (JSON) | bytes | None
    headers: dict[str, str] | None = None
    content_type: str = "application/json"


Handler = Callable[[FakeState, Request], Reply]


def _database_header(req: Request) -> str:
    db = req.header("X-Database-Id")
    if not db:
        raise bad_request("the X-Database-Id header is required")
    return db


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, body, headers)


def _arrow_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


# -- handlers ---------------------------------------------------------------------------------


def h_create_database(s: FakeState, r: Request) -> Reply:
    status, body = s.create_database(r.model)
    return _json(status, body)


def h_list_databases(s: FakeState, r: Request) -> Reply:
    return _json(200, s.list_databases())


def h_database_by_name(s: FakeState, r: Request) -> Reply:
    if not r.params.get("name"):
        raise bad_request("the name query parameter is required")
    return _json(200, s.database_by_name(r.params["name"]))


def h_get_database(s: FakeState, r: Request) -> Reply:
    return _json(200, s.database(r.match["db"]).detail())


def h_delete_database(s: FakeState, r: Request) -> Reply:
    s.delete_database(r.match["db"])
    return Reply(204)


def h_add_schema(s: FakeState, r: Request) -> Reply:
    return _json(201, s.add_schema(r.match["db"], r.model))


def h_add_table(s: FakeState, r: Request) -> Reply:
    db = s.database(r.match["db"]) if "db" in r.match else s.database_by_connection(r.match["conn"])
    return _json(201, s.add_table(db, r.match["schema"], r.model))


def h_load(s: FakeState, r: Request) -> Reply:
    db = s.database(r.match["db"]) if "db" in r.match else s.database_by_connection(r.match["conn"])
    status, body, headers = s.submit_load(db, r.match["schema"], r.match["table"], r.model)
    return _json(status, body, headers)


def h_create_upload(s: FakeState, r: Request) -> Reply:
    return _json(201, s.create_upload(r.model))


def h_storage_put(s: FakeState, r: Request) -> Reply:
    etag = s.store_upload_bytes(r.match["upload"], r.params.get("token", ""), r.body)
    return Reply(200, b"", {"ETag": etag}, content_type="text/plain")


def h_finalize_upload(s: FakeState, r: Request) -> Reply:
    return _json(200, s.finalize_upload(r.match["upload"], r.header("X-Upload-Finalize-Token")))


def h_information_schema(s: FakeState, r: Request) -> Reply:
    return _json(200, s.information_schema(r.params))


def h_create_index(s: FakeState, r: Request) -> Reply:
    status, body, headers = s.create_index(
        r.match["conn"], r.match["schema"], r.match["table"], r.model
    )
    return _json(status, body, headers)


def h_list_indexes(s: FakeState, r: Request) -> Reply:
    return _json(200, s.list_indexes(r.match["conn"], r.match["schema"], r.match["table"]))


def h_delete_index(s: FakeState, r: Request) -> Reply:
    s.delete_index(r.match["conn"], r.match["schema"], r.match["table"], r.match["index"])
    return Reply(204)


def h_index_collection(s: FakeState, r: Request) -> Reply:
    return _json(200, s.list_index_collection(_database_header(r), r.params))


def h_get_job(s: FakeState, r: Request) -> Reply:
    return _json(200, s.get_job(r.match["job"]))


def h_list_jobs(s: FakeState, r: Request) -> Reply:
    return _json(200, s.list_jobs(r.params))


def h_query(s: FakeState, r: Request) -> Reply:
    header_db = r.header("X-Database-Id")
    body_db = r.model.get("database_id")
    if header_db and body_db and header_db != body_db:
        raise bad_request(
            "the X-Database-Id header and the database_id body field name different databases"
        )
    database_id = header_db or body_db
    if not database_id:
        raise bad_request(
            "a database is required: set the X-Database-Id header or the database_id body field"
        )
    body, table = s.query(database_id, r.model)
    if r.model.get("async"):
        run_id = body["query_run_id"]
        return _json(
            202,
            {
                "query_run_id": run_id,
                "status": "running",
                "status_url": f"{s.base_url}/v1/query-runs/{run_id}",
            },
        )
    if ARROW_STREAM in (r.header("Accept") or ""):
        return Reply(
            200,
            _arrow_bytes(table),
            {
                "X-Query-Run-Id": body["query_run_id"],
                "X-Result-Id": body["result_id"],
                "X-Total-Row-Count": str(body["total_row_count"]),
                "X-Execution-Time-Ms": str(body["execution_time_ms"]),
            },
            content_type=ARROW_STREAM,
        )
    return _json(200, body)


def h_get_result(s: FakeState, r: Request) -> Reply:
    body, table = s.get_result(_database_header(r), r.match["result"], r.params)
    if r.params.get("format") == "arrow" or ARROW_STREAM in (r.header("Accept") or ""):
        return Reply(
            200, _arrow_bytes(table), {"X-Result-Id": body["result_id"]}, content_type=ARROW_STREAM
        )
    return _json(200, body)


def h_get_query_run(s: FakeState, r: Request) -> Reply:
    return _json(200, s.get_query_run(_database_header(r), r.match["run"]))


def h_list_query_runs(s: FakeState, r: Request) -> Reply:
    return _json(200, s.list_query_runs(_database_header(r), r.params))


def h_list_workspaces(s: FakeState, r: Request) -> Reply:
    return _json(
        200,
        {
            "workspaces": [
                {
                    "public_id": s.workspace_id,
                    "name": "fake workspace",
                    "active": True,
                    "favorite": False,
                    "provision_status": "ready",
                }
            ]
        },
    )


_SEG = r"[^/]+"
# (method, path regex, handler, request model, {status: response model})
ROUTES: list[tuple[str, re.Pattern[str], Handler, Any, dict[int, Any]]] = []


def _route(
    method: str,
    pattern: str,
    handler: Handler,
    model: Any = None,
    responses: dict[int, Any] | None = None,
) -> None:
    regex = re.compile("^" + re.sub(r"\{(\w+)\}", rf"(?P<\1>{_SEG})", pattern) + "$")
    ROUTES.append((method, regex, handler, model, responses or {}))


_route(
    "POST",
    "/v1/databases",
    h_create_database,
    m.CreateDatabaseRequest,
    {200: m.CreateDatabaseResponse, 201: m.CreateDatabaseResponse},
)
_route("GET", "/v1/databases", h_list_databases, None, {200: m.ListDatabasesResponse})
_route("GET", "/v1/databases/by-name", h_database_by_name, None, {200: m.DatabaseDetailResponse})
_route("GET", "/v1/databases/{db}", h_get_database, None, {200: m.DatabaseDetailResponse})
_route("DELETE", "/v1/databases/{db}", h_delete_database)
_route(
    "POST",
    "/v1/databases/{db}/schemas",
    h_add_schema,
    m.AddManagedSchemaRequest,
    {201: m.ManagedSchemaResponse},
)
_route(
    "POST",
    "/v1/databases/{db}/schemas/{schema}/tables",
    h_add_table,
    m.AddManagedTableRequest,
    {201: m.ManagedTableResponse},
)
_route(
    "POST",
    "/v1/connections/{conn}/schemas/{schema}/tables",
    h_add_table,
    m.AddManagedTableRequest,
    {201: m.ManagedTableResponse},
)
_route(
    "POST",
    "/v1/databases/{db}/schemas/{schema}/tables/{table}/loads",
    h_load,
    m.LoadManagedTableRequest,
    {200: m.LoadManagedTableResponse, 202: m.SubmitJobResponse},
)
_route(
    "POST",
    "/v1/connections/{conn}/schemas/{schema}/tables/{table}/loads",
    h_load,
    m.LoadManagedTableRequest,
    {200: m.LoadManagedTableResponse, 202: m.SubmitJobResponse},
)
_route(
    "POST", "/v1/uploads", h_create_upload, m.CreateUploadRequest, {201: m.UploadSessionResponse}
)
_route("PUT", "/_storage/{upload}", h_storage_put)
_route(
    "POST",
    "/v1/uploads/{upload}/finalize",
    h_finalize_upload,
    m.FinalizeUploadRequest,
    {200: m.FinalizeUploadResponse},
)
_route(
    "GET", "/v1/information_schema", h_information_schema, None, {200: m.InformationSchemaResponse}
)
_route(
    "POST",
    "/v1/connections/{conn}/tables/{schema}/{table}/indexes",
    h_create_index,
    m.CreateIndexRequest,
    {201: m.IndexInfoResponse, 202: m.SubmitJobResponse},
)
_route(
    "GET",
    "/v1/connections/{conn}/tables/{schema}/{table}/indexes",
    h_list_indexes,
    None,
    {200: m.ListIndexesResponse},
)
_route("DELETE", "/v1/connections/{conn}/tables/{schema}/{table}/indexes/{index}", h_delete_index)
_route("GET", "/v1/indexes", h_index_collection, None, {200: m.ListIndexesPageResponse})
_route("GET", "/v1/jobs/{job}", h_get_job, None, {200: m.JobStatusResponse})
_route("GET", "/v1/jobs", h_list_jobs, None, {200: m.ListJobsResponse})
_route(
    "POST", "/v1/query", h_query, m.QueryRequest, {200: m.QueryResponse, 202: m.AsyncQueryResponse}
)
_route("GET", "/v1/query-runs/{run}", h_get_query_run, None, {200: m.QueryRunInfo})
_route("GET", "/v1/query-runs", h_list_query_runs, None, {200: m.ListQueryRunsResponse})
_route("GET", "/v1/results/{result}", h_get_result, None, {200: m.GetResultResponse})
_route("GET", "/v1/workspaces", h_list_workspaces, None, {200: m.ListWorkspacesResponse})

_NO_WORKSPACE = {"/v1/workspaces"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeHotdataHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing ----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _drop(self) -> None:
        """Close the connection without a single byte of reply."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send(self, reply: Reply) -> None:
        if reply.body is None:
            payload = b""
        elif isinstance(reply.body, bytes):
            payload = reply.body
        else:
            payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        if payload:
            self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (reply.headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if payload:
            self.wfile.write(payload)

    def _dispatch(self, method: str) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        path = url.path
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        body = self._read_body()
        with state.lock:
            state.requests.append((method, path))
            fault = _take_fault(state, method, path)
        if fault is not None and fault.drop == "before":
            self._drop()
            return
        if fault is not None and fault.stall is not None:
            state.stall_released.wait(fault.stall)
        if fault is not None and fault.body is not None:
            self._send(Reply(fault.status or 200, fault.body))
            return
        if fault is not None and fault.status is not None:
            code = fault.code or _DEFAULT_CODES.get(fault.status, "ERROR")
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = _retry_after_text(fault.retry_after)
            message = fault.message or f"injected {fault.status} {code}"
            self._send(Reply(fault.status, {"error": {"code": code, "message": message}}, headers))
            return
        reply = self._handle(state, method, path, params, body)
        if fault is not None and fault.drop == "after":
            self._drop()  # the request took effect; its reply is lost
            return
        self._send(reply)

    def _handle(
        self, state: FakeState, method: str, path: str, params: dict[str, str], body: bytes
    ) -> Reply:
        try:
            route = None
            allowed = False
            for r_method, regex, handler, model, responses in ROUTES:
                found = regex.match(path)
                if found:
                    allowed = True
                    if r_method == method:
                        route = (handler, model, responses, found.groupdict())
                        break
            if route is None:
                if allowed:
                    raise ApiError(405, "METHOD_NOT_ALLOWED", f"{method} is not allowed on {path}")
                raise ApiError(404, "NOT_FOUND", f"no route for {method} {path}")
            handler, model, responses, match = route
            if path.startswith("/v1/"):
                self._check_auth(state, path)
            request = Request(method, path, params, self.headers, body, match)
            if model is not None:
                request.model = _validate(model, body)
            with state.lock:
                reply = handler(state, request)
            response_model = responses.get(reply.status)
            if response_model is not None and isinstance(reply.body, dict):
                try:
                    response_model.from_dict(reply.body)
                except (ValidationError, ValueError) as exc:
                    raise ApiError(
                        500,
                        "FAKE_RESPONSE_INVALID",
                        f"the fake built a response its SDK model rejects: {exc}",
                    ) from exc
            return reply
        except ApiError as exc:
            if exc.bare:
                return Reply(exc.status, None, exc.headers)
            return Reply(exc.status, exc.body(), exc.headers)

    def _check_auth(self, state: FakeState, path: str) -> None:
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            raise ApiError(401, "UNAUTHORIZED", "missing bearer token in the Authorization header")
        if auth[len("Bearer ") :] != state.api_key:
            raise ApiError(401, "UNAUTHORIZED", "invalid API key")
        if path in _NO_WORKSPACE:
            return
        workspace = self.headers.get("X-Workspace-Id")
        if not workspace:
            raise ApiError(404, "NOT_FOUND", "workspace not found: no X-Workspace-Id header")
        if workspace != state.workspace_id:
            raise ApiError(404, "NOT_FOUND", f"workspace '{workspace}' not found")


def _retry_after_text(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


def _take_fault(state: FakeState, method: str, path: str) -> HttpFault | None:
    for fault in state.http_faults:
        if fault.method.upper() in (method, "*") and fnmatch.fnmatchcase(path, fault.path):
            fault.hits += 1
            fault.times -= 1
            if fault.times <= 0:
                state.http_faults.remove(fault)
            return fault
    return None


def _validate(model: Any, body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except json.JSONDecodeError as exc:
        raise bad_request(f"request body is not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise bad_request("request body must be a JSON object")
    known = {f.alias or name for name, f in model.model_fields.items()}
    unknown = sorted(set(data) - known)
    if unknown:
        raise bad_request(f"invalid {model.__name__}: unknown field(s) " + ", ".join(unknown))
    try:
        # The SDK's own from_dict: it also unpacks the oneOf wrappers (ColumnDefinition, ...).
        validated = model.from_dict(data)
    except (ValidationError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
            )
        else:
            problems = str(exc)
        raise bad_request(f"invalid {model.__name__}: {problems}") from exc
    return validated.to_dict()


class FakeHotdataHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], state: FakeState) -> None:
        super().__init__(address, _Handler)
        self.state = state

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hung up (a timeout test gave up on a stalled reply) is not an
        error of the fake: say nothing. Anything else is printed as before."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeHotdata:
    """A running fake Hotdata server plus the handles a test needs to steer it."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str = "hd_fake_test_key",
        workspace_id: str = "ws_fake_test",
        job_mode: str = "manual",
        job_step_seconds: float = 1.0,
    ) -> None:
        self.state = FakeState(api_key=api_key, workspace_id=workspace_id)
        self.state.job_mode = job_mode
        self.state.job_step_seconds = job_step_seconds
        self._httpd = FakeHotdataHTTPServer((host, port), self.state)
        bound_host, bound_port = self._httpd.server_address[:2]
        self.host = str(bound_host)
        self.port = int(bound_port)
        self.url = f"http://{self.host}:{self.port}"
        self.state.base_url = self.url
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeHotdata:
        serve = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-hotdata-http",
            daemon=True,
        )
        ticker = threading.Thread(target=self._tick, name="fake-hotdata-jobs", daemon=True)
        self._threads = [serve, ticker]
        for thread in self._threads:
            thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(0.02):
            with self.state.lock:
                self.state.tick()

    def stop(self) -> None:
        self._stop.set()
        self.state.stall_released.set()  # no stalled reply holds the shutdown
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> FakeHotdata:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests use --------------------------------------------------------------------

    @property
    def api_key(self) -> str:
        return self.state.api_key

    @property
    def workspace_id(self) -> str:
        return self.state.workspace_id

    @property
    def query_log(self) -> list[Any]:
        return self.state.query_log

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self.state.requests

    def configuration(self, **kwargs: Any) -> Any:
        """A ``hotdata.Configuration`` pointed at this server (extra kwargs pass through)."""
        import hotdata

        return hotdata.Configuration(
            host=self.url, api_key=self.api_key, workspace_id=self.workspace_id, **kwargs
        )

    def set_job_mode(self, mode: str, *, step_seconds: float | None = None) -> None:
        if mode not in ("manual", "poll", "timed", "immediate"):
            raise ValueError(f"unknown job mode {mode!r}")
        with self.state.lock:
            self.state.job_mode = mode
            if step_seconds is not None:
                self.state.job_step_seconds = step_seconds

    def advance_jobs(self, steps: int = 1) -> list[tuple[str, str]]:
        """Move every unfinished job ``steps`` steps (pending -> running -> terminal)."""
        with self.state.lock:
            return self.state.advance_jobs(steps)

    def run_jobs(self) -> list[tuple[str, str]]:
        """Run every unfinished job to its terminal state."""
        return self.advance_jobs(2)

    def inject_fault(
        self,
        method: str,
        path: str,
        *,
        status: int | None = None,
        code: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        drop: str | None = None,
        body: bytes | None = None,
        stall: float | None = None,
        times: int = 1,
    ) -> HttpFault:
        """Make the next ``times`` requests matching ``method`` and ``path`` misbehave.

        ``path`` is an ``fnmatch`` pattern over the request path (``*`` crosses ``/``).
        Either answer ``status`` (with ``code``, default by status, ``message`` and an optional
        ``Retry-After``), or ``drop`` the connection with no reply: ``"before"`` the request
        is applied, or ``"after"`` it (the work is done and the reply is lost); or reply
        ``body`` (raw bytes, e.g. not JSON, with ``status``, default 200); or ``stall`` that
        many seconds before answering as usual (a reply slower than the client waits).
        """
        if sum(x is not None for x in (drop, body, stall)) + (status is not None
                                                              and body is None) != 1:
            raise ValueError("give exactly one of status=, drop=, body= or stall=")
        if drop not in (None, "before", "after"):
            raise ValueError("drop must be 'before' or 'after'")
        fault = HttpFault(
            method=method.upper(),
            path=path,
            status=status,
            code=code,
            message=message,
            retry_after=retry_after,
            drop=drop,
            body=body,
            stall=stall,
            times=times,
        )
        with self.state.lock:
            self.state.http_faults.append(fault)
        return fault

    def inject_job_fault(
        self,
        job_type: str | None = None,
        *,
        status: str = "failed",
        message: str = "injected job failure",
        times: int = 1,
    ) -> JobFault:
        """Make the next ``times`` jobs of ``job_type`` (any type if None) end in ``status``.

        ``failed``: the work is not done.  ``partially_succeeded``: the work is done and the
        job record still says it only partly succeeded.  Either way ``error_message`` is set.
        """
        if status not in ("failed", "partially_succeeded"):
            raise ValueError("status must be 'failed' or 'partially_succeeded'")
        fault = JobFault(job_type=job_type, status=status, message=message, times=times)
        with self.state.lock:
            self.state.job_faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.http_faults.clear()
            self.state.job_faults.clear()
        self.state.stall_released.set()  # a stalled reply goes now; later stalls stall again
        self.state.stall_released = threading.Event()
