"""The fake's control plane: databases, tables, uploads, loads, indexes, jobs, queries.

Every public method either returns a JSON-ready dict or raises :class:`ApiError` carrying the
HTTP status, error code and message the engine would send.  The HTTP layer
(:mod:`tests.fake_hotdata.server`) only routes and validates; the rules live here.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from . import engine

INLINE_DATA_LIMIT = 2 * 1024 * 1024
RETRY_AFTER_LOCKED = 1
TERMINAL = ("succeeded", "partially_succeeded", "failed")
RECORDED_CATALOG = "default"  # what a database record reports as its default catalog


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        bare: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.bare = bare  # answer with no body at all

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BAD_REQUEST", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", message)


def now() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime | None) -> str | None:
    return ts.isoformat().replace("+00:00", "Z") if ts else None


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


# ---------------------------------------------------------------------------------------------
# Records


@dataclass
class TableState:
    catalog: str
    schema: str
    name: str
    key: list[str] | None = None
    sorted_by: list[dict[str, Any]] = field(default_factory=list)
    partition_by: list[dict[str, Any]] = field(default_factory=list)
    constant_per_key: list[str] = field(default_factory=list)
    data: pa.Table | None = None
    last_sync: datetime | None = None
    last_load_mixed_upsert: bool = False
    locked_by: str | None = None  # id of the load job holding the table

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"


@dataclass
class IndexState:
    name: str
    index_type: str
    columns: list[str]
    metric: str | None
    source_column: str | None
    algorithm: str | None
    vector_precision: str | None
    created_at: datetime
    updated_at: datetime
    status: str = "pending"  # "pending" | "ready"
    built: Any = None  # engine.Bm25Index | engine.VectorIndex
    provider_backed: bool = False

    def info(self) -> dict[str, Any]:
        return {
            "index_name": self.name,
            "index_type": self.index_type,
            "columns": list(self.columns),
            "status": self.status,
            "metric": self.metric,
            "source_column": self.source_column,
            "algorithm": self.algorithm,
            "vector_precision": self.vector_precision,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }


@dataclass
class Database:
    id: str
    name: str
    default_catalog: str
    default_schema: str
    default_connection_id: str
    created_at: datetime
    expires_at: datetime | None
    schemas: dict[str, dict[str, TableState]] = field(default_factory=dict)
    indexes: dict[tuple[str, str], dict[str, IndexState]] = field(default_factory=dict)

    def detail(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            # The engine's record says "default" whatever catalog the tables answer to (an
            # attached source's alias): only information_schema.tables settles it.
            "default_catalog": RECORDED_CATALOG,
            "default_schema": self.default_schema,
            "default_connection_id": self.default_connection_id,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "attachments": [],
        }


@dataclass
class Job:
    id: str
    job_type: str
    database_id: str
    created_at: datetime
    work: Callable[[Job], dict[str, Any] | None]
    status: str = "pending"
    attempts: int = 0
    completed_at: datetime | None = None
    error_message: str | None = None
    result: dict[str, Any] | None = None
    last_step_at: float = field(default_factory=time.monotonic)
    forced: tuple[str, str] | None = None  # (terminal status, message) from a job fault
    on_finish: Callable[[Job], None] | None = None

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job_type": self.job_type,
            "status": self.status,
            "attempts": self.attempts,
            "created_at": iso(self.created_at),
            "completed_at": iso(self.completed_at),
            "error_message": self.error_message,
            "result": self.result,
        }


@dataclass
class Upload:
    id: str
    finalize_token: str
    storage_token: str
    created_at: datetime
    content_type: str | None
    filename: str | None
    declared_size: int | None
    data: bytes | None = None
    status: str = "pending"


@dataclass
class StoredResult:
    id: str
    database_id: str
    columns: list[str]
    nullable: list[bool]
    rows: list[list[Any]]
    arrow: pa.Table


@dataclass
class QueryRun:
    id: str
    database_id: str
    sql: str
    created_at: datetime
    completed_at: datetime
    status: str
    result_id: str | None
    row_count: int | None
    execution_time_ms: int
    error_message: str | None

    def info(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": iso(self.created_at),
            "completed_at": iso(self.completed_at),
            "status": self.status,
            "sql_text": self.sql,
            "sql_hash": hashlib.sha256(self.sql.encode()).hexdigest(),
            "snapshot_id": "snap_fake",
            "result_id": self.result_id,
            "row_count": self.row_count,
            "execution_time_ms": self.execution_time_ms,
            "error_message": self.error_message,
        }


@dataclass
class HttpFault:
    method: str
    path: str  # fnmatch pattern over the request path
    status: int | None = None
    code: str | None = None
    message: str | None = None
    retry_after: float | None = None
    drop: str | None = None  # "before" (request not applied) | "after" (applied, reply lost)
    body: bytes | None = None  # with status: this raw reply body instead of an error object
    stall: float | None = None  # seconds to wait (released early by clear_faults) before
    #                             applying the request and replying as usual
    times: int = 1
    hits: int = 0


@dataclass
class JobFault:
    job_type: str | None
    status: str  # "failed" | "partially_succeeded"
    message: str
    times: int = 1


# ---------------------------------------------------------------------------------------------
# Loading helpers


_CSV_TYPES = {
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "STRING": pa.string(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "INT": pa.int32(),
    "SMALLINT": pa.int16(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
}


def _lowercase_columns(table: pa.Table) -> pa.Table:
    names = [n.lower() for n in table.column_names]
    if len(set(names)) != len(names):
        raise bad_request("column names collide once lower-cased: " + ", ".join(names))
    return table.rename_columns(names)


def parse_payload(data: bytes, fmt: str | None) -> pa.Table:
    if fmt is None:
        if data[:4] == b"PAR1":
            fmt = "parquet"
        elif data.lstrip()[:1] in (b"{", b"["):
            fmt = "json"
        else:
            fmt = "csv"
    try:
        if fmt == "parquet":
            return pq.read_table(io.BytesIO(data))
        if fmt == "json":
            return pajson.read_json(io.BytesIO(data))
        if fmt == "csv":
            return pacsv.read_csv(io.BytesIO(data))
    except pa.ArrowException as exc:
        raise bad_request(f"could not read the upload as {fmt}: {exc}") from exc
    raise bad_request(f"unsupported format '{fmt}'; expected csv, json or parquet")


def parse_inline_csv(text: str, columns: dict[str, Any] | None) -> pa.Table:
    if len(text.encode()) > INLINE_DATA_LIMIT:
        raise ApiError(
            413,
            "INLINE_DATA_TOO_LARGE",
            "inline data is larger than 2 MiB; upload it and load by upload_id",
        )
    types: dict[str, pa.DataType] = {}
    for name, spec in (columns or {}).items():
        if isinstance(spec, dict):
            type_name = str(spec.get("type", "")).upper()
            if type_name in ("DECIMAL", "NUMERIC"):
                types[name] = pa.decimal128(spec.get("precision") or 38, spec.get("scale") or 0)
                continue
        else:
            type_name = str(spec).upper()
        if type_name not in _CSV_TYPES:
            raise bad_request(f"unsupported column type '{type_name}' for column '{name}'")
        types[name] = _CSV_TYPES[type_name]
    header = next(csv.reader(io.StringIO(text)), [])
    unknown = set(types) - set(header)
    if unknown:
        raise bad_request("columns not in the CSV header: " + ", ".join(sorted(unknown)))
    try:
        return pacsv.read_csv(
            io.BytesIO(text.encode()),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
    except pa.ArrowException as exc:
        raise bad_request(f"could not read the inline CSV: {exc}") from exc


def _key_tuples(table: pa.Table, key: list[str]) -> list[tuple[Any, ...]]:
    cols = [table.column(k).to_pylist() for k in key]
    return list(zip(*cols, strict=True))


def _arrow_schema_json(table: pa.Table) -> str:
    return json.dumps(
        {
            "fields": [
                {
                    "name": f.name,
                    "data_type": engine.datafusion_type_name(f.type),
                    "nullable": f.nullable,
                }
                for f in table.schema
            ]
        }
    )


# ---------------------------------------------------------------------------------------------
# The state


class FakeState:
    """All server state, behind one re-entrant lock."""

    def __init__(self, *, api_key: str, workspace_id: str) -> None:
        self.lock = threading.RLock()
        self.api_key = api_key
        self.workspace_id = workspace_id
        self.databases: dict[str, Database] = {}
        self.uploads: dict[str, Upload] = {}
        self.jobs: dict[str, Job] = {}
        self.results: dict[str, StoredResult] = {}
        self.query_runs: dict[str, QueryRun] = {}
        self.query_log: list[engine.QueryTrace] = []
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request served
        self.http_faults: list[HttpFault] = []
        self.job_faults: list[JobFault] = []
        self.stall_released = threading.Event()  # set: stalled replies go at once (teardown)
        self.idempotency: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        # "manual": jobs move only when advance_jobs() is called; "poll": each GET of a job
        # moves it one step; "timed": a step every job_step_seconds; "immediate": async work
        # finishes at submission.
        self.job_mode = "manual"
        self.job_step_seconds = 1.0
        # Fails every vector index build that directly follows a mixed upsert.  The engine
        # fails such builds intermittently; the fake fails them always, so a client that lets
        # the situation arise is caught every time.
        self.fail_vector_build_after_mixed_upsert = True
        self.preview_row_limit = 10_000
        self.query_warning: str | None = None  # a test sets it: every answer carries it
        self.base_url = ""

    # -- lookups ---------------------------------------------------------------------------

    def database(self, database_id: str) -> Database:
        db = self.databases.get(database_id)
        if db is None:
            raise not_found(f"database '{database_id}' not found")
        return db

    def database_by_connection(self, connection_id: str) -> Database:
        for db in self.databases.values():
            if db.default_connection_id == connection_id:
                return db
        raise not_found(f"connection '{connection_id}' not found")

    def table(self, db: Database, schema: str, table: str) -> TableState:
        t = db.schemas.get(schema.lower(), {}).get(table.lower())
        if t is None:
            raise not_found(
                f"table '{db.default_catalog}.{schema.lower()}.{table.lower()}' not found"
            )
        return t

    # -- databases -------------------------------------------------------------------------

    def create_database(self, req: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = req.get("name")
        if req.get("if_not_exists"):
            if not name:
                raise bad_request("if_not_exists requires a name")
            for db in self.databases.values():
                if db.name.strip().lower() == name.strip().lower():
                    return 200, {**db.detail(), "created": False}
        catalog = (req.get("default_catalog") or "default").lower()
        if catalog in ("hotdata", "information_schema"):
            raise bad_request(f"'{catalog}' is a reserved catalog name")
        schemas = req.get("schemas") or []
        default_schema = req.get("default_schema")
        if not default_schema:
            default_schema = schemas[0]["name"].lower() if len(schemas) == 1 else "main"
        db_id = new_id("db")
        db = Database(
            id=db_id,
            name=name or db_id,
            default_catalog=catalog,
            default_schema=default_schema.lower(),
            default_connection_id=new_id("conn"),
            created_at=now(),
            expires_at=None,
        )
        for schema in schemas:
            self._add_schema(db, schema["name"], schema.get("tables") or [])
        db.schemas.setdefault(db.default_schema, {})
        self.databases[db_id] = db
        return 201, {**db.detail(), "created": True}

    def _add_schema(self, db: Database, name: str, tables: list[dict[str, Any]]) -> None:
        schema = db.schemas.setdefault(name.lower(), {})
        for decl in tables:
            self._declare_table(db, name, decl, schema)

    def _declare_table(
        self, db: Database, schema_name: str, decl: dict[str, Any], schema: dict[str, TableState]
    ) -> TableState:
        tname = decl["name"].lower()
        if tname in schema:
            raise ApiError(
                409,
                "CONFLICT",
                f"table '{db.default_catalog}.{schema_name.lower()}.{tname}' already exists",
            )
        t = TableState(
            catalog=db.default_catalog,
            schema=schema_name.lower(),
            name=tname,
            key=[k.lower() for k in decl["key"]] if decl.get("key") else None,
            sorted_by=list(decl.get("sorted_by") or []),
            partition_by=list(decl.get("partition_by") or []),
            constant_per_key=[c.lower() for c in decl.get("constant_per_key") or []],
        )
        schema[tname] = t
        return t

    def list_databases(self) -> dict[str, Any]:
        items = [
            {
                k: v
                for k, v in db.detail().items()
                if k not in ("attachments", "default_connection_id")
            }
            for db in self.databases.values()
        ]
        return {
            "databases": items,
            "count": len(items),
            "has_more": False,
            "limit": max(len(items), 1),
        }

    def database_by_name(self, name: str) -> dict[str, Any]:
        matches = [
            db for db in self.databases.values() if db.name.strip().lower() == name.strip().lower()
        ]
        if not matches:
            raise not_found(f"no database named '{name}'")
        if len(matches) > 1:
            raise ApiError(409, "CONFLICT", f"{len(matches)} databases are named '{name}'")
        return matches[0].detail()

    def delete_database(self, database_id: str) -> None:
        self.database(database_id)
        del self.databases[database_id]

    def add_schema(self, database_id: str, req: dict[str, Any]) -> dict[str, Any]:
        db = self.database(database_id)
        if req["name"].lower() in db.schemas and db.schemas[req["name"].lower()]:
            raise ApiError(409, "CONFLICT", f"schema '{req['name'].lower()}' already exists")
        self._add_schema(db, req["name"], req.get("tables") or [])
        schema = req["name"].lower()
        return {
            "connection_id": db.default_connection_id,
            "schema": schema,
            "tables": sorted(db.schemas[schema]),
        }

    def add_table(self, db: Database, schema: str, req: dict[str, Any]) -> dict[str, Any]:
        tables = db.schemas.setdefault(schema.lower(), {})
        t = self._declare_table(db, schema, req, tables)
        return {"connection_id": db.default_connection_id, "schema": t.schema, "table": t.name}

    # -- uploads ---------------------------------------------------------------------------

    def create_upload(self, req: dict[str, Any]) -> dict[str, Any]:
        upload = Upload(
            id=new_id("upl"),
            finalize_token=secrets.token_hex(16),
            storage_token=secrets.token_hex(16),
            created_at=now(),
            content_type=req.get("content_type"),
            filename=req.get("filename"),
            declared_size=req.get("declared_size_bytes"),
        )
        self.uploads[upload.id] = upload
        # Always a single PUT to the fake's own storage route, whatever the size.
        return {
            "upload_id": upload.id,
            "finalize_token": upload.finalize_token,
            "mode": "single",
            "url": f"{self.base_url}/_storage/{upload.id}?token={upload.storage_token}",
            "headers": {},
        }

    def store_upload_bytes(self, upload_id: str, token: str, data: bytes) -> str:
        upload = self.uploads.get(upload_id)
        if upload is None or token != upload.storage_token:
            raise ApiError(403, "SignatureDoesNotMatch", "the storage URL is not valid")
        upload.data = data
        return '"' + hashlib.md5(data).hexdigest() + '"'

    def finalize_upload(self, upload_id: str, token: str | None) -> dict[str, Any]:
        upload = self.uploads.get(upload_id)
        if upload is None:
            raise not_found(f"upload '{upload_id}' not found")
        if token != upload.finalize_token:
            raise bad_request("X-Upload-Finalize-Token does not match this upload")
        if upload.status == "finalized":
            raise ApiError(409, "CONFLICT", f"upload '{upload_id}' is already finalized")
        if upload.data is None:
            raise bad_request(f"upload '{upload_id}' has no bytes; PUT them before finalizing")
        if upload.declared_size is not None and upload.declared_size != len(upload.data):
            raise bad_request(
                f"upload '{upload_id}' declared {upload.declared_size} bytes "
                f"but {len(upload.data)} arrived"
            )
        upload.status = "finalized"
        return {
            "upload_id": upload.id,
            "status": "finalized",
            "size_bytes": len(upload.data),
            "content_type": upload.content_type,
            "created_at": iso(upload.created_at),
        }

    # -- loads -----------------------------------------------------------------------------

    def submit_load(
        self, db: Database, schema: str, table: str, req: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        schema, table = schema.lower(), table.lower()
        sources = [k for k in ("upload_id", "result_id", "data") if req.get(k) is not None]
        if len(sources) != 1:
            raise bad_request("exactly one of upload_id, result_id or data is required")
        mode = req["mode"]
        if mode not in ("replace", "append", "delete", "update", "upsert"):
            raise bad_request(f"unknown load mode '{mode}'")
        if req.get("idempotency_key") is not None and sources != ["data"]:
            raise bad_request("idempotency_key applies to inline data only")
        t = db.schemas.get(schema, {}).get(table)
        if t is not None and t.locked_by is not None:
            raise ApiError(
                409,
                "RESOURCE_LOCKED",
                f"another operation is already running for {t.full_name}; retry shortly",
                headers={"Retry-After": str(RETRY_AFTER_LOCKED)},
            )
        incoming = self._load_source(db, req)
        if req.get("idempotency_key") is not None:
            digest = hashlib.sha256(req["data"].encode()).hexdigest()
            seen = self.idempotency.get((db.id, req["idempotency_key"]))
            if seen is not None:
                if seen[0] != digest:
                    raise ApiError(
                        409,
                        "IDEMPOTENCY_KEY_CONFLICT",
                        "idempotency_key was already used with different data",
                    )
                return 200, seen[1], {}
        if t is None:  # a load into an undeclared table declares it
            t = self._declare_table(
                db,
                schema,
                {"name": table, "key": req.get("key")},
                db.schemas.setdefault(schema, {}),
            )
        key = [k.lower() for k in (req.get("key") or t.key or [])]
        if mode in ("delete", "update", "upsert") and not key:
            raise bad_request(
                f"load mode '{mode}' needs a key: declare one on the table or "
                "send key on the request"
            )
        missing = [k for k in key if k not in incoming.column_names]
        if missing:
            raise bad_request("key columns missing from the data: " + ", ".join(missing))
        if req.get("upload_id") is not None:
            self.uploads[req["upload_id"]].status = "loaded"  # an upload serves one load

        def apply(job: Job | None = None) -> dict[str, Any]:
            self._apply_load(t, mode, key, incoming)
            receipt = {
                "connection_id": db.default_connection_id,
                "schema_name": t.schema,
                "table_name": t.name,
                "row_count": t.data.num_rows if t.data else 0,
                "arrow_schema_json": _arrow_schema_json(t.data if t.data is not None else incoming),
            }
            if req.get("idempotency_key") is not None:
                self.idempotency[(db.id, req["idempotency_key"])] = (
                    hashlib.sha256(req["data"].encode()).hexdigest(),
                    receipt,
                )
            return receipt

        if not req.get("async"):
            return 200, apply(), {}

        def release(job: Job) -> None:
            t.locked_by = None

        job = self._new_job("managed_load", db.id, apply, on_finish=release)
        t.locked_by = job.id
        return self._submitted(job, req.get("async_after_ms"))

    def _load_source(self, db: Database, req: dict[str, Any]) -> pa.Table:
        if req.get("upload_id") is not None:
            upload = self.uploads.get(req["upload_id"])
            if upload is None:
                raise not_found(f"Upload '{req['upload_id']}' not found")
            if upload.status == "loaded":
                raise ApiError(
                    409,
                    "CONFLICT",
                    f"upload '{upload.id}' was already loaded; an upload serves one load",
                )
            if upload.status != "finalized" or upload.data is None:
                raise bad_request(f"upload '{upload.id}' is not finalized")
            table = parse_payload(upload.data, req.get("format"))
        elif req.get("result_id") is not None:
            result = self.results.get(req["result_id"])
            if result is None or result.database_id != db.id:
                raise not_found(f"Result '{req['result_id']}' not found")
            table = result.arrow
        else:
            table = parse_inline_csv(req["data"], req.get("columns"))
        return _lowercase_columns(table)

    def _apply_load(self, t: TableState, mode: str, key: list[str], incoming: pa.Table) -> None:
        current = t.data
        mixed = False
        if current is None and mode in ("delete", "update"):
            new = incoming.slice(0, 0)  # nothing to match: the table gets a schema, no rows
        elif mode == "replace" or current is None:
            new = incoming
        else:
            incoming = self._conform(current, incoming, mode)
            if mode == "append":
                for name in incoming.column_names[len(current.column_names) :]:
                    kind = incoming.schema.field(name).type
                    current = current.append_column(
                        pa.field(name, kind), pa.nulls(current.num_rows, kind)
                    )
                new = pa.concat_tables([current, incoming])
            else:
                incoming_keys = set(_key_tuples(incoming, key))
                current_keys = _key_tuples(current, key)
                matched = [k in incoming_keys for k in current_keys]
                keep = pa.array([not m for m in matched])
                kept = current.filter(keep)
                if mode == "delete":
                    new = kept
                elif mode == "update":
                    present = set(current_keys)
                    mask = pa.array([k in present for k in _key_tuples(incoming, key)])
                    new = pa.concat_tables([kept, incoming.filter(mask)])
                else:  # upsert: matched keys are rewritten, the rest inserted
                    rewritten = sum(matched) > 0
                    added = len(incoming_keys - set(current_keys)) > 0
                    mixed = rewritten and added
                    new = pa.concat_tables([kept, incoming])
        t.data = new
        t.last_sync = now()
        t.last_load_mixed_upsert = mixed

    @staticmethod
    def _conform(current: pa.Table, incoming: pa.Table, mode: str) -> pa.Table:
        have, got = current.column_names, incoming.column_names
        if mode == "append" and set(have) - set(got):
            raise bad_request(
                "an append must carry every existing column; missing: "
                + ", ".join(c for c in have if c not in got)
            )
        extra = [c for c in got if c not in have]
        if extra and mode != "append":
            raise bad_request("columns not in the table: " + ", ".join(extra))
        if mode == "delete":
            return incoming
        missing = [c for c in have if c not in got]
        if missing:
            raise bad_request(
                f"a {mode} load must carry every column; missing: " + ", ".join(missing)
            )
        try:
            if mode == "append":
                # A column the table lacks is added; the rows already there read null for it.
                added = [incoming.schema.field(c) for c in extra]
                return incoming.select(have + extra).cast(pa.schema([*current.schema, *added]))
            return incoming.select(have).cast(current.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise bad_request(f"data does not match the table's columns: {exc}") from exc

    # -- indexes ---------------------------------------------------------------------------

    def create_index(
        self, connection_id: str, schema: str, table: str, req: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        db = self.database_by_connection(connection_id)
        t = self.table(db, schema, table)
        indexes = db.indexes.setdefault((t.schema, t.name), {})
        name = req["index_name"]
        index_type = req.get("index_type") or "sorted"
        columns = [c.lower() for c in req["columns"]]
        metric = req.get("metric")
        provider = req.get("embedding_provider_id")
        if index_type not in ("sorted", "bm25", "vector"):
            raise bad_request(f"unknown index_type '{index_type}'; expected sorted, bm25 or vector")
        if not columns:
            raise bad_request("columns must name at least one column")
        if name in indexes:
            raise bad_request(f"index '{name}' already exists on {t.full_name}")
        if t.sorted_by:
            raise bad_request(
                f"{t.full_name} declares a sort order (sorted_by); no index can be created on it"
            )
        if t.data is None:
            raise bad_request(
                f"Managed table '{t.full_name}' is declared but has no data; "
                "load data before creating an index"
            )
        unknown = [c for c in columns if c not in t.data.column_names]
        if unknown:
            raise bad_request(f"column '{unknown[0]}' not found in {t.full_name}")
        if index_type != "vector" and metric is not None:
            raise bad_request("metric applies to vector indexes only")
        if any(i.provider_backed for i in indexes.values()):
            raise bad_request(_EMBEDDING_EXCLUSIVE)
        if index_type == "vector":
            if len(columns) != 1:
                raise bad_request("a vector index takes exactly one column")
            if any(i.index_type == "vector" for i in indexes.values()):
                raise bad_request(
                    f"{t.full_name} already has a vector index; drop it before creating another"
                )
            if provider and indexes:
                raise bad_request(_EMBEDDING_EXCLUSIVE)
            metric = metric or ("cosine" if provider else "l2")
            if metric not in ("l2", "cosine", "dot"):
                raise bad_request(f"unknown metric '{metric}'; expected l2, cosine or dot")
            col_type = t.data.schema.field(columns[0]).type
            if provider:
                if not pa.types.is_string(col_type) and not pa.types.is_large_string(col_type):
                    raise bad_request("an embedding-backed vector index needs a text column")
            elif not (
                pa.types.is_list(col_type)
                or pa.types.is_fixed_size_list(col_type)
                or pa.types.is_large_list(col_type)
            ) or not pa.types.is_floating(col_type.value_type):
                raise bad_request(f"column '{columns[0]}' does not hold float vectors")
        elif index_type == "bm25":
            if len(columns) != 1:
                raise bad_request("a bm25 index takes exactly one column")
            col_type = t.data.schema.field(columns[0]).type
            if not (pa.types.is_string(col_type) or pa.types.is_large_string(col_type)):
                raise bad_request(f"column '{columns[0]}' is not a text column")
        stamp = now()
        output_column = (req.get("output_column") or f"{columns[0]}_embedding").lower()
        index = IndexState(
            name=name,
            index_type=index_type,
            columns=[output_column] if provider else columns,
            metric=metric if index_type == "vector" else None,
            source_column=columns[0] if provider else None,
            algorithm=(req.get("algorithm") or "hnsw") if index_type == "vector" else None,
            vector_precision=req.get("vector_precision"),
            created_at=stamp,
            updated_at=stamp,
            provider_backed=bool(provider),
        )
        indexes[name] = index

        def build(job: Job | None = None) -> dict[str, Any]:
            try:
                if index_type == "vector" and provider:
                    t.data = _with_toy_embeddings(
                        t.data, columns[0], output_column, req.get("dimensions") or 32
                    )
                    index.built = engine.VectorIndex(t.data, output_column, metric)
                elif index_type == "vector":
                    if t.last_load_mixed_upsert and self.fail_vector_build_after_mixed_upsert:
                        raise engine.BuildError(f"could not detect dimension for '{columns[0]}'")
                    index.built = engine.VectorIndex(t.data, columns[0], metric)
                elif index_type == "bm25":
                    index.built = engine.Bm25Index(t.data, columns[0])
            except engine.BuildError:
                indexes.pop(name, None)
                raise
            index.status = "ready"
            index.updated_at = now()
            return index.info()

        def settle(job: Job) -> None:
            if job.status == "failed":
                indexes.pop(name, None)

        if not req.get("async"):
            try:
                return 201, build(), {}
            except engine.BuildError as exc:
                raise ApiError(500, "INTERNAL", str(exc)) from exc
        job = self._new_job("create_index", db.id, build, on_finish=settle)
        return self._submitted(job, req.get("async_after_ms"))

    def list_indexes(self, connection_id: str, schema: str, table: str) -> dict[str, Any]:
        db = self.database_by_connection(connection_id)
        t = self.table(db, schema, table)
        return {"indexes": [i.info() for i in db.indexes.get((t.schema, t.name), {}).values()]}

    def list_index_collection(self, database_id: str, params: dict[str, str]) -> dict[str, Any]:
        db = self.database(database_id)
        if params.get("connection_id") and params["connection_id"] != db.default_connection_id:
            raise not_found(f"connection '{params['connection_id']}' not found")
        entries = []
        for (schema, table), indexes in db.indexes.items():
            if params.get("schema") and params["schema"].lower() != schema:
                continue
            if params.get("table") and params["table"].lower() != table:
                continue
            for index in indexes.values():
                if params.get("index_type") and params["index_type"] != index.index_type:
                    continue
                entries.append(
                    {
                        **index.info(),
                        "connection_id": db.default_connection_id,
                        "schema_name": schema,
                        "table_name": table,
                    }
                )
        return {
            "indexes": entries,
            "count": len(entries),
            "has_more": False,
            "limit": int(params.get("limit") or 100),
        }

    def delete_index(self, connection_id: str, schema: str, table: str, name: str) -> None:
        db = self.database_by_connection(connection_id)
        t = self.table(db, schema, table)
        indexes = db.indexes.get((t.schema, t.name), {})
        if name not in indexes:
            raise not_found(f"index '{name}' not found on {t.full_name}")
        if t.locked_by is not None:
            raise ApiError(
                409,
                "RESOURCE_LOCKED",
                f"a load into {t.full_name} is running; retry shortly",
                headers={"Retry-After": str(RETRY_AFTER_LOCKED)},
            )
        del indexes[name]

    # -- information schema ----------------------------------------------------------------

    def information_schema(self, params: dict[str, str]) -> dict[str, Any]:
        def like(pattern: str | None, value: str) -> bool:
            if not pattern:
                return True
            import fnmatch

            return fnmatch.fnmatchcase(value, pattern.lower().replace("%", "*").replace("_", "?"))

        include = params.get("include_columns", "false").lower() == "true"
        tables = []
        for db in self.databases.values():
            if params.get("connection_id") and params["connection_id"] != db.default_connection_id:
                continue
            for schema, entries in db.schemas.items():
                for t in entries.values():
                    if not like(params.get("schema"), schema) or not like(
                        params.get("table"), t.name
                    ):
                        continue
                    info = {
                        "connection": db.default_connection_id,
                        "schema": schema,
                        "table": t.name,
                        "synced": t.data is not None,
                        "last_sync": iso(t.last_sync),
                        "partition_by": t.partition_by,
                        "sorted_by": t.sorted_by,
                        "constant_per_key": t.constant_per_key,
                    }
                    if include:
                        info["columns"] = (
                            []
                            if t.data is None
                            else [
                                {
                                    "name": f.name,
                                    "data_type": engine.datafusion_type_name(f.type),
                                    "nullable": f.nullable,
                                }
                                for f in t.data.schema
                            ]
                        )
                    tables.append(info)
        limit = int(params.get("limit") or 100)
        offset = int(params.get("cursor") or 0)
        page = tables[offset : offset + limit]
        more = offset + limit < len(tables)
        return {
            "tables": page,
            "count": len(page),
            "limit": limit,
            "has_more": more,
            "next_cursor": str(offset + limit) if more else None,
        }

    # -- jobs ------------------------------------------------------------------------------

    def _new_job(
        self,
        job_type: str,
        database_id: str,
        work: Callable[..., Any],
        *,
        on_finish: Callable[[Job], None] | None = None,
    ) -> Job:
        job = Job(
            id=new_id("job"),
            job_type=job_type,
            database_id=database_id,
            created_at=now(),
            work=work,
            on_finish=on_finish,
        )
        for fault in list(self.job_faults):
            if fault.job_type in (None, job_type):
                job.forced = (fault.status, fault.message)
                fault.times -= 1
                if fault.times <= 0:
                    self.job_faults.remove(fault)
                break
        self.jobs[job.id] = job
        return job

    def _submitted(
        self, job: Job, async_after_ms: int | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.job_mode == "immediate":
            self.run_job(job)
            if async_after_ms is not None and job.status == "succeeded" and job.result:
                return (201 if job.job_type == "create_index" else 200), job.result, {}
        return (
            202,
            {"id": job.id, "status": job.status, "status_url": f"{self.base_url}/v1/jobs/{job.id}"},
            {},
        )

    def step_job(self, job: Job) -> None:
        if job.status == "pending":
            job.status = "running"
            job.attempts += 1
        elif job.status == "running":
            if job.forced is not None and job.forced[0] == "failed":
                # An injected failure: the work is not done.
                job.status, job.error_message = job.forced
            else:
                try:
                    job.result = job.work(job)
                    job.status = "succeeded"
                except (engine.BuildError, ApiError) as exc:
                    job.status = "failed"
                    job.error_message = exc.message if isinstance(exc, ApiError) else str(exc)
                if job.forced is not None and job.status == "succeeded":
                    # An injected partial success: the work is done, the job says otherwise.
                    job.status, job.error_message = job.forced
            job.completed_at = now()
            if job.on_finish is not None:
                job.on_finish(job)
        job.last_step_at = time.monotonic()

    def run_job(self, job: Job) -> None:
        while job.status not in TERMINAL:
            self.step_job(job)

    def advance_jobs(self, steps: int = 1) -> list[tuple[str, str]]:
        """Move every unfinished job ``steps`` steps; return ``(job_id, status)`` pairs."""
        moved = []
        for _ in range(steps):
            for job in list(self.jobs.values()):
                if job.status not in TERMINAL:
                    self.step_job(job)
                    moved.append((job.id, job.status))
        return moved

    def tick(self) -> None:
        """The timed mode's clock: step jobs whose last step is old enough."""
        if self.job_mode != "timed":
            return
        deadline = time.monotonic() - self.job_step_seconds
        for job in list(self.jobs.values()):
            if job.status not in TERMINAL and job.last_step_at <= deadline:
                self.step_job(job)

    def get_job(self, job_id: str) -> dict[str, Any]:
        job = self.jobs.get(job_id)
        if job is None:
            raise not_found(f"job '{job_id}' not found")
        if self.job_mode == "poll" and job.status not in TERMINAL:
            self.step_job(job)
        return job.record()

    def list_jobs(self, params: dict[str, str]) -> dict[str, Any]:
        jobs = list(self.jobs.values())
        if params.get("job_type"):
            jobs = [j for j in jobs if j.job_type == params["job_type"]]
        if params.get("status"):
            wanted = set(params["status"].split(","))
            jobs = [j for j in jobs if j.status in wanted]
        offset = int(params.get("offset") or 0)
        limit = int(params.get("limit") or 50)
        return {"jobs": [j.record() for j in jobs[offset : offset + limit]]}

    # -- queries ---------------------------------------------------------------------------

    def query(self, database_id: str, req: dict[str, Any]) -> tuple[dict[str, Any], pa.Table]:
        db = self.database(database_id)
        sql = req["sql"]
        trace = engine.QueryTrace(sql=sql, database_id=db.id)
        self.query_log.append(trace)
        started = time.monotonic()
        created = now()
        views = []
        for schema, tables in db.schemas.items():
            for t in tables.values():
                indexes = db.indexes.get((schema, t.name), {}).values()
                views.append(
                    engine.TableView(
                        catalog=db.default_catalog,
                        schema=schema,
                        name=t.name,
                        data=t.data,
                        bm25={
                            i.columns[0]: i.built
                            for i in indexes
                            if i.index_type == "bm25" and i.status == "ready"
                        },
                        vector={
                            i.columns[0]: i.built
                            for i in indexes
                            if i.index_type == "vector" and i.status == "ready"
                        },
                    )
                )
        try:
            table = engine.execute(
                sql,
                views,
                catalog=(req.get("default_catalog") or db.default_catalog).lower(),
                default_schema=(req.get("default_schema") or db.default_schema).lower(),
                trace=trace,
            )
        except engine.EngineError as exc:
            trace.error = str(exc)
            elapsed = int((time.monotonic() - started) * 1000)
            run = QueryRun(
                new_id("qrun"), db.id, sql, created, now(), "failed", None, None, elapsed, str(exc)
            )
            self.query_runs[run.id] = run
            if "No field named" in str(exc) and _quotes_mixed_case(sql):
                # The engine answers this one with a bare 400: no body at all.
                raise ApiError(400, "BAD_REQUEST", "", bare=True) from exc
            raise bad_request(str(exc)) from exc
        trace.row_count = table.num_rows
        rows = engine.table_rows(table)
        columns = table.column_names
        nullable = [f.nullable for f in table.schema]
        result = StoredResult(new_id("rslt"), db.id, columns, nullable, rows, table)
        self.results[result.id] = result
        elapsed = int((time.monotonic() - started) * 1000)
        run = QueryRun(
            new_id("qrun"),
            db.id,
            sql,
            created,
            now(),
            "succeeded",
            result.id,
            len(rows),
            elapsed,
            None,
        )
        self.query_runs[run.id] = run
        truncated = len(rows) > self.preview_row_limit
        preview = rows[: self.preview_row_limit]
        return {
            "columns": columns,
            "nullable": nullable,
            "rows": preview,
            "preview_row_count": len(preview),
            "total_row_count": len(rows),
            "row_count": len(preview),
            "truncated": truncated,
            "execution_time_ms": elapsed,
            "query_run_id": run.id,
            "result_id": result.id,
            "warning": self.query_warning,
        }, table

    def get_result(
        self, database_id: str, result_id: str, params: dict[str, str]
    ) -> tuple[dict[str, Any], pa.Table]:
        result = self.results.get(result_id)
        if result is None or result.database_id != database_id:
            raise not_found(f"Result '{result_id}' not found")
        offset = int(params.get("offset") or 0)
        limit = int(params["limit"]) if params.get("limit") else len(result.rows)
        rows = result.rows[offset : offset + limit]
        return {
            "result_id": result.id,
            "status": "ready",
            "columns": result.columns,
            "nullable": result.nullable,
            "rows": rows,
            "row_count": len(rows),
            "total_row_count": len(result.rows),
            "error_message": None,
        }, result.arrow.slice(offset, limit)

    def get_query_run(self, database_id: str, run_id: str) -> dict[str, Any]:
        run = self.query_runs.get(run_id)
        if run is None or run.database_id != database_id:
            raise not_found(f"query run '{run_id}' not found")
        return run.info()

    def list_query_runs(self, database_id: str, params: dict[str, str]) -> dict[str, Any]:
        runs = [r for r in self.query_runs.values() if r.database_id == database_id]
        if params.get("status"):
            runs = [r for r in runs if r.status in params["status"].split(",")]
        limit = int(params.get("limit") or 50)
        return {
            "query_runs": [r.info() for r in runs[:limit]],
            "count": len(runs[:limit]),
            "limit": limit,
            "has_more": len(runs) > limit,
        }


_EMBEDDING_EXCLUSIVE = (
    "Embedding-backed vector indexes cannot coexist with other indexes on the same table. "
    "Drop the existing indexes before creating an embedding-backed vector index, or drop the "
    "embedding-backed vector index before creating other indexes."
)


def _quotes_mixed_case(sql: str) -> bool:
    from .sqlshape import mentions_quoted_mixed_case

    return mentions_quoted_mixed_case(sql)


def _with_toy_embeddings(table: pa.Table, source: str, output: str, dims: int) -> pa.Table:
    """Stand-in for a provider's embeddings: a hashed bag of words, L2-normalised.

    The fake has no embedding model; this only gives the generated column the right shape so
    the provider-backed arrangement (and its exclusivity rule) can be exercised.
    """
    import numpy as np

    vectors = []
    for text in table.column(source).to_pylist():
        v = np.zeros(dims, dtype=np.float32)
        for word in str(text or "").lower().split():
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
        norm = float(np.linalg.norm(v))
        vectors.append((v / norm if norm else v).tolist())
    column = pa.array(vectors, type=pa.list_(pa.float32()))
    if output in table.column_names:
        return table.set_column(table.column_names.index(output), output, column)
    return table.append_column(output, column)


__all__ = ["ApiError", "FakeState", "HttpFault", "JobFault"]
