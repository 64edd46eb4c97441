"""Query execution for the fake: DataFusion SQL, Tantivy BM25, USearch HNSW.

Everything here is the real library doing the real work on the loaded Arrow tables; nothing
is canned.  The pieces:

* :class:`Bm25Index` -- a Tantivy index over one text column, built from a snapshot of the
  table's rows when the index job runs.  ``bm25_search`` answers from it.
* :class:`VectorIndex` -- a USearch HNSW index over one ``list<float>`` column, built from a
  snapshot when the index job runs.  Queries of the index-served shape are answered from it.
* :func:`execute` -- runs one SQL statement in a fresh DataFusion session whose catalog is
  the database's default catalog (``default``) with its schemas (``public``, ...).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import tantivy
from datafusion import SessionConfig, SessionContext, udf, udtf
from datafusion.catalog import Catalog, Schema, Table
from usearch.index import Index as USearchIndex

from . import sqlshape

BM25_DEFAULT_K = 1000  # what the engine silently caps an unbounded bm25_search at

_USEARCH_METRIC = {"cosine": "cos", "l2": "l2sq", "dot": "ip"}


class EngineError(Exception):
    """An error the engine reports to the client, with its own message."""


class BuildError(Exception):
    """An index build that fails on its job record."""


# ---------------------------------------------------------------------------------------------
# Indexes


def _analyzer() -> Any:
    # The same chain as Tantivy's "default" tokenizer: split on non-alphanumerics, drop very
    # long tokens, lower-case.  Used to turn query text into terms without the query parser's
    # operator syntax, so any text is a valid query.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .build()
    )


class Bm25Index:
    def __init__(self, snapshot: pa.Table, column: str) -> None:
        self.snapshot = snapshot
        self.column = column
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("rowid", stored=True, indexed=True, fast=True)
        builder.add_text_field("body", stored=False, tokenizer_name="default")
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        for rowid, text in enumerate(snapshot.column(column).to_pylist()):
            if text is not None:
                writer.add_document(tantivy.Document(rowid=rowid, body=str(text)))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._lock = threading.Lock()

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        terms = list(dict.fromkeys(_analyzer().analyze(query)))
        if not terms or k <= 0:
            return []
        q = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", term))
                for term in terms
            ]
        )
        with self._lock:
            searcher = self._index.searcher()
            hits = searcher.search(q, k).hits
            return [(searcher.doc(addr)["rowid"][0], float(score)) for score, addr in hits]


class VectorIndex:
    def __init__(self, snapshot: pa.Table, column: str, metric: str) -> None:
        self.snapshot = snapshot
        self.column = column
        self.metric = metric
        values = snapshot.column(column).to_pylist()
        widths = {len(v) for v in values if v is not None}
        if len(widths) != 1 or 0 in widths:
            raise BuildError(f"could not detect dimension for '{column}'")
        self.ndim = widths.pop()
        self._keys = np.array([i for i, v in enumerate(values) if v is not None], dtype=np.uint64)
        matrix = np.array([v for v in values if v is not None], dtype=np.float32)
        self._index = USearchIndex(ndim=self.ndim, metric=_USEARCH_METRIC[metric], dtype="f32")
        self._index.add(self._keys, matrix, threads=1)
        self._lock = threading.Lock()

    def search(self, vector: list[float], k: int) -> list[int]:
        if len(vector) != self.ndim:
            raise EngineError(
                f"query vector has {len(vector)} dimensions; index on '{self.column}' "
                f"has {self.ndim}"
            )
        count = min(k, len(self._keys))
        if count <= 0:
            return []
        with self._lock:
            matches = self._index.search(np.array(vector, dtype=np.float32), count, threads=1)
        return [int(key) for key in matches.keys]


# ---------------------------------------------------------------------------------------------
# Distance functions DataFusion lacks (cosine_distance is built in)


def _pairs(a: pa.Array, b: pa.Array):
    for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True):
        if x is None or y is None:
            yield None
            continue
        if len(x) != len(y):
            raise EngineError(f"vector lengths differ: {len(x)} and {len(y)}")
        yield np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def _l2_distance(a: pa.Array, b: pa.Array) -> pa.Array:
    # Squared Euclidean distance, the measure the engine's l2 index uses.
    return pa.array(
        [None if p is None else float(np.sum((p[0] - p[1]) ** 2)) for p in _pairs(a, b)],
        type=pa.float64(),
    )


def _negative_dot_product(a: pa.Array, b: pa.Array) -> pa.Array:
    return pa.array(
        [None if p is None else -float(np.dot(p[0], p[1])) for p in _pairs(a, b)],
        type=pa.float64(),
    )


_VEC = pa.list_(pa.float64())
L2_UDF = udf(_l2_distance, [_VEC, _VEC], pa.float64(), "immutable", "l2_distance")
NEG_DOT_UDF = udf(
    _negative_dot_product, [_VEC, _VEC], pa.float64(), "immutable", "negative_dot_product"
)


# ---------------------------------------------------------------------------------------------
# Execution


@dataclass
class TableView:
    """What a query can see of one table."""

    catalog: str
    schema: str
    name: str
    data: pa.Table | None  # None: declared, never loaded
    bm25: dict[str, Bm25Index] = field(default_factory=dict)  # column -> ready index
    vector: dict[str, VectorIndex] = field(default_factory=dict)  # column -> ready index

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"


@dataclass
class QueryTrace:
    """How a statement was answered; appended to the fake's query log."""

    sql: str
    database_id: str
    served_by: str = "scan"  # "vector_index" when any SELECT block was an index lookup
    vector_lookups: list[dict[str, Any]] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)
    bm25_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    row_count: int | None = None


def _provider(ctx: SessionContext, table: pa.Table) -> Table:
    """An in-memory table provider with at least one (possibly empty) partition.

    An Arrow dataset over zero batches has zero partitions, which DataFusion's plan checks
    reject under a sort; one empty batch keeps a single partition and still yields no rows.
    """
    batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    return Table(ctx.create_dataframe([batches], schema=table.schema))


def _split_name(name: str) -> list[str]:
    return [
        p.strip().strip('"') if p.strip().startswith('"') else p.strip().lower()
        for p in name.split(".")
    ]


def _resolve(tables: list[TableView], parts: list[str], catalog: str, schema: str):
    if len(parts) == 1:
        parts = [catalog, schema, parts[0]]
    elif len(parts) == 2:
        parts = [catalog, parts[0], parts[1]]
    for t in tables:
        if [t.catalog, t.schema, t.name] == parts:
            return t
    return None


def _strip_prefixes(message: str) -> str:
    for prefix in (
        "DataFusion error: ",
        "Error during planning: ",
        "Execution error: ",
        "Schema error: ",
        "SQL error: ",
        "This feature is not implemented: ",
        "Arrow error: ",
        "Optimizer rule 'usearch_rule' failed\ncaused by\n",
    ):
        while message.startswith(prefix):
            message = message[len(prefix) :]
    return message.strip()


def execute(
    sql: str,
    tables: list[TableView],
    *,
    catalog: str,
    default_schema: str,
    trace: QueryTrace,
) -> pa.Table:
    config = (
        SessionConfig()
        .with_default_catalog_and_schema(catalog, default_schema)
        .with_create_default_catalog_and_schema(True)
        .with_information_schema(True)
        .with_target_partitions(1)
    )
    ctx = SessionContext(config)
    cat = ctx.catalog(catalog)
    schemas: dict[str, Schema] = {}
    for name in {default_schema, *(t.schema for t in tables)}:
        if name not in cat.schema_names():
            cat.register_schema(name, Schema.memory_schema())
        schemas[name] = cat.schema(name)
    for t in tables:
        if t.data is not None:
            schemas[t.schema].register_table(t.name, _provider(ctx, t.data))
    ctx.register_udf(L2_UDF)
    ctx.register_udf(NEG_DOT_UDF)

    engine_errors: list[str] = []

    def bm25_rows(values: list[Any]) -> pa.Table:
        if len(values) not in (3, 4):
            raise EngineError("bm25_search expects (table, column, query[, limit]) arguments")
        table_name, column, query = (str(v) for v in values[:3])
        k = int(values[3]) if len(values) == 4 else BM25_DEFAULT_K
        view = _resolve(tables, _split_name(table_name), catalog, default_schema)
        if view is None:
            raise EngineError(f"table '{table_name}' not found")
        if view.data is None:
            raise EngineError(
                f"Managed table '{view.full_name}' is declared but has no data; "
                "POST a load before querying"
            )
        column = column.lower()
        index = view.bm25.get(column)
        if index is None:
            raise EngineError(f"No BM25 index found on column '{column}' for {view.full_name}")
        hits = index.search(query, k)
        trace.bm25_calls.append(
            {
                "table": view.full_name,
                "column": column,
                "query": query,
                "k": k,
                "k_explicit": len(values) == 4,
                "hits": len(hits),
            }
        )
        # Rows come back in row order, not score order: ranking must be asked for.
        hits.sort(key=lambda h: h[0])
        rows = index.snapshot.take(pa.array([h[0] for h in hits], type=pa.int64()))
        return rows.append_column(
            pa.field("score", pa.float32()), pa.array([h[1] for h in hits], type=pa.float32())
        )

    # Answer every literal bm25_search(...) call before planning: a provider built inside the
    # planner's callback cannot use the session (it would re-enter DataFusion's runtime).
    prepared: dict[tuple[str, ...], Table] = {}
    for values in sqlshape.literal_calls(sql, "bm25_search"):
        key = tuple(str(v) for v in values)
        if key not in prepared:
            prepared[key] = _provider(ctx, bm25_rows(values))

    def bm25_search(*args: Any) -> Table:
        try:
            values = [a.python_value().as_py() for a in args]
        except Exception as exc:  # a non-literal argument
            engine_errors.append("bm25_search arguments must be literals")
            raise EngineError(engine_errors[-1]) from exc
        key = tuple(str(v) for v in values)
        if key in prepared:
            return prepared[key]
        try:
            rows = bm25_rows(values)
        except EngineError as exc:
            engine_errors.append(str(exc))
            raise
        return Table(ds.dataset(rows))

    ctx.register_udtf(udtf(bm25_search, "bm25_search"))

    # The index rewrite: a block of the served shape whose table reference, as written, names
    # a table with a ready vector index of the same metric on that column.
    report = sqlshape.analyse(sql)
    trace.declined.extend(report.declined)
    replacements: list[tuple[int, int, str]] = []
    for n, shape in enumerate(report.shapes):
        view = None
        if len(shape.table_parts) == 3:
            view = _resolve(tables, list(shape.table_parts), catalog, default_schema)
        if view is None:
            reason = (
                "table reference is not three-part"
                if len(shape.table_parts) != 3
                else "table not found"
            )
            trace.declined.append(reason)
            continue
        index = view.vector.get(shape.column)
        if index is None:
            trace.declined.append(f"no ready vector index on {view.full_name}.{shape.column}")
            continue
        if index.metric != shape.metric:
            trace.declined.append(
                f"{shape.function} does not match the index metric '{index.metric}'"
            )
            continue
        if shape.filtered:
            # Filtered lookups: the predicate is applied to every row and the exact distance
            # ranks the survivors -- the engine's low-selectivity strategy.
            candidates = index.snapshot
        else:
            keys = index.search(shape.query_vector, shape.k)
            candidates = index.snapshot.take(pa.array(keys, type=pa.int64()))
        alias_catalog = f"__usearch_{n}"
        hnsw_catalog = Catalog.memory_catalog()
        hnsw_schema = Schema.memory_schema()
        hnsw_catalog.register_schema(view.schema, hnsw_schema)
        hnsw_schema.register_table(view.name, _provider(ctx, candidates))
        ctx.register_catalog_provider(alias_catalog, hnsw_catalog)
        start, end = shape.table_span
        replacements.append((start, end, f'"{alias_catalog}"."{view.schema}"."{view.name}"'))
        trace.vector_lookups.append(
            {
                "table": view.full_name,
                "column": shape.column,
                "metric": index.metric,
                "k": shape.k,
                "filtered": shape.filtered,
            }
        )
    if trace.vector_lookups:
        trace.served_by = "vector_index"

    rewritten = sql
    for start, end, text in sorted(replacements, reverse=True):
        rewritten = rewritten[:start] + text + rewritten[end:]

    try:
        result = ctx.sql(rewritten).to_arrow_table()
    except Exception as exc:
        if engine_errors:
            raise EngineError(engine_errors[-1]) from exc
        message = _strip_prefixes(str(exc))
        missing = _missing_table(message)
        if missing is not None:
            view = _resolve(tables, _split_name(missing), catalog, default_schema)
            if view is not None and view.data is None:
                message = (
                    f"Managed table '{view.full_name}' is declared but has no data; "
                    "POST a load before querying"
                )
        raise EngineError(message) from exc
    return result


def _missing_table(message: str) -> str | None:
    prefix = "table '"
    if message.startswith(prefix) and message.endswith("' not found"):
        return message[len(prefix) : -len("' not found")]
    return None


def to_json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def table_rows(table: pa.Table) -> list[list[Any]]:
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [[to_json_value(v) for v in row] for row in zip(*columns, strict=True)]


def datafusion_type_name(t: pa.DataType) -> str:
    """Arrow type rendered the way the engine's information schema renders it."""
    simple = {
        pa.string(): "Utf8",
        pa.large_string(): "LargeUtf8",
        pa.bool_(): "Boolean",
        pa.int8(): "Int8",
        pa.int16(): "Int16",
        pa.int32(): "Int32",
        pa.int64(): "Int64",
        pa.uint8(): "UInt8",
        pa.uint16(): "UInt16",
        pa.uint32(): "UInt32",
        pa.uint64(): "UInt64",
        pa.float16(): "Float16",
        pa.float32(): "Float32",
        pa.float64(): "Float64",
        pa.date32(): "Date32",
        pa.binary(): "Binary",
        pa.null(): "Null",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"List({datafusion_type_name(t.value_type)})"
    if pa.types.is_fixed_size_list(t):
        return f"FixedSizeList({t.list_size} x {datafusion_type_name(t.value_type)})"
    if pa.types.is_timestamp(t):
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}
        tz = f'Some("{t.tz}")' if t.tz else "None"
        return f"Timestamp({unit[t.unit]}, {tz})"
    if pa.types.is_decimal(t):
        return f"Decimal128({t.precision}, {t.scale})"
    return str(t)
