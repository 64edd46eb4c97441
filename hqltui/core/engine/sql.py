"""The SQL this client sends, built in one place (pure functions, no I/O).

Rules every statement follows:

* the table is always three-part, ``catalog.schema.table`` (a shorter
  reference forfeits the vector index on the engine); the columns are the
  table's own (``Table``: a table this tool did not build names them in
  ``[engine]``), the key always answered as ``name``;
* ``bm25_search`` always gets its bound ``W`` explicitly (left out, the engine
  caps silently at 1,000 rows) and is always ranked (it returns rows unsorted);
* every ``ORDER BY`` -- an arm's order, each ``ROW_NUMBER()``, the fused order --
  ends with ``name ASC``, so ties are decided as the local rank order decides them;
* the approximate vector arm has the shape the engine serves from its HNSW index:
  ``ORDER BY <distance> ASC ... LIMIT W`` straight over the table, the vector
  column not projected, ``cosine_distance`` for a cosine index;
* the exact vector arm ranks every row with ``ROW_NUMBER()`` and filters on the
  rank afterwards, a shape the engine answers with a full scan.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from hqltui.core.engine.settings import CATALOG, OWN_COLUMNS, SCHEMA

TEXT_COLUMN = OWN_COLUMNS["text"]
VECTOR_COLUMN = OWN_COLUMNS["vector"]
DISTANCE = "cosine_distance"


@dataclass(frozen=True)
class Table:
    """A table as the SQL names it: three-part name and the column of each role."""

    name: str  # catalog.schema.table
    key: str = OWN_COLUMNS["key"]
    text: str = TEXT_COLUMN
    vector: str = VECTOR_COLUMN
    model: str | None = OWN_COLUMNS["model"]  # None: the model is declared, not stored
    revision: str | None = OWN_COLUMNS["revision"]


def _t(table: Table | str) -> Table:
    """A ``Table``; a bare name is this tool's own table in ``default.public``."""
    return table if isinstance(table, Table) else Table(table_name(table))


def _as(column: str, alias: str) -> str:
    return alias if column == alias else f"{column} AS {alias}"


def _key(t: Table) -> str:
    return _as(t.key, "name")


def table_name(table: str) -> str:
    return f"{CATALOG}.{SCHEMA}.{table}"


def quote_literal(text: str) -> str:
    """A SQL string literal: single quotes doubled; NUL is not representable and is dropped."""
    return "'" + text.replace("\x00", "").replace("'", "''") + "'"


def vector_literal(vector: Iterable[float]) -> str:
    values = [float(x) for x in vector]
    if not values:
        raise ValueError("an empty query vector")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("the query vector has a non-finite component")
    return "ARRAY[" + ", ".join(repr(v) for v in values) + "]"


def number(value: float) -> str:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value}")
    return repr(value)


def _window(w: int) -> int:
    w = int(w)
    if w < 1:
        raise ValueError("a window must be at least 1")
    return w


def rows_sql(table: Table | str) -> str:
    """Every row's identity and provenance, for parity with the vault (this tool's tables)."""
    t = _t(table)
    return f"SELECT name, content_hash, model, revision FROM {t.name} ORDER BY name ASC"


def models_sql(table: Table | str) -> str:
    """The rows' models and revisions, counted: what a vector arm's provenance rests on."""
    t = _t(table)
    return (
        f"SELECT {_as(str(t.model), 'model')}, {_as(str(t.revision), 'revision')}, "
        f"COUNT({t.key}) AS n "
        f"FROM {t.name} GROUP BY {t.model}, {t.revision} "
        f"ORDER BY {t.model} ASC, {t.revision} ASC"
    )


def count_sql(table: Table | str) -> str:
    """The table's rows, counted on a named column (some engine tables refuse COUNT(*))."""
    t = _t(table)
    return f"SELECT COUNT({t.key}) AS n FROM {t.name}"


def sample_vector_sql(table: Table | str) -> str:
    """The first row by key with its vector: a probe's query (the vector projected: a scan)."""
    t = _t(table)
    return f"SELECT {_key(t)}, {t.vector} AS v FROM {t.name} ORDER BY {t.key} ASC LIMIT 1"


def catalogs_sql(schema: str, table: str) -> str:
    """The catalogs a ``schema.table`` answers to: the only authority on the catalog."""
    return (
        "SELECT table_catalog FROM information_schema.tables "
        f"WHERE table_schema = {quote_literal(schema)} AND table_name = {quote_literal(table)} "
        "ORDER BY table_catalog ASC"
    )


def bm25_sql(table: Table | str, query: str, window: int) -> str:
    t = _t(table)
    w = _window(window)
    return (
        f"SELECT {_key(t)}, score FROM bm25_search({quote_literal(t.name)}, "
        f"{quote_literal(t.text)}, {quote_literal(query)}, {w}) "
        f"ORDER BY score DESC, name ASC LIMIT {w}"
    )


def vector_sql(table: Table | str, vector: Iterable[float], window: int) -> str:
    """The index-served shape (approximate on the engine: an HNSW lookup)."""
    t = _t(table)
    w = _window(window)
    return (
        f"SELECT {_key(t)}, {DISTANCE}({t.vector}, {vector_literal(vector)}) AS _distance "
        f"FROM {t.name} ORDER BY _distance ASC, name ASC LIMIT {w}"
    )


def vector_exact_sql(table: Table | str, vector: Iterable[float], window: int) -> str:
    """Every row ranked, then cut on the rank: a full scan, exact."""
    t = _t(table)
    w = _window(window)
    return (
        "WITH scored AS ("
        f"SELECT {_key(t)}, {DISTANCE}({t.vector}, {vector_literal(vector)}) AS _distance "
        f"FROM {t.name}), "
        "ranked AS (SELECT name, _distance, "
        "ROW_NUMBER() OVER (ORDER BY _distance ASC, name ASC) AS arm_rank FROM scored) "
        f"SELECT name, _distance FROM ranked WHERE arm_rank <= {w} "
        "ORDER BY arm_rank ASC, name ASC"
    )


def hybrid_sql(
    table: Table | str,
    query: str,
    vector: Iterable[float],
    *,
    k: float,
    lexical_weight: float,
    semantic_weight: float,
    window: int,
    limit: int,
) -> str:
    """One RRF query: both arms cut at ``window``, fused, each arm's rank returned.

    ``score = wl / (k + lexical_rank) + ws / (k + semantic_rank)`` (a missing arm
    adds 0), in that order, so the floating-point sum equals the local fusion's.
    Cards whose fused score is not above zero are left out, as locally.
    """
    w = _window(window)
    n = max(0, int(limit))
    t = _t(table)
    kk, wl, ws = number(k), number(lexical_weight), number(semantic_weight)
    return (
        "WITH near AS ("
        f"SELECT {_key(t)}, {DISTANCE}({t.vector}, {vector_literal(vector)}) AS _distance "
        f"FROM {t.name} ORDER BY _distance ASC, name ASC LIMIT {w}), "
        "near_ranked AS (SELECT name, _distance, "
        "ROW_NUMBER() OVER (ORDER BY _distance ASC, name ASC) AS arm_rank FROM near), "
        f"text_ranked AS (SELECT {_key(t)}, score, "
        f"ROW_NUMBER() OVER (ORDER BY score DESC, {t.key} ASC) AS arm_rank "
        f"FROM bm25_search({quote_literal(t.name)}, {quote_literal(t.text)}, "
        f"{quote_literal(query)}, {w})), "
        "fused AS (SELECT COALESCE(text_ranked.name, near_ranked.name) AS name, "
        "text_ranked.arm_rank AS lexical_rank, text_ranked.score AS lexical_score, "
        "near_ranked.arm_rank AS semantic_rank, near_ranked._distance AS semantic_distance, "
        f"COALESCE({wl} / ({kk} + text_ranked.arm_rank), 0.0) + "
        f"COALESCE({ws} / ({kk} + near_ranked.arm_rank), 0.0) AS fused_score "
        "FROM text_ranked FULL OUTER JOIN near_ranked ON text_ranked.name = near_ranked.name) "
        "SELECT name, fused_score, lexical_rank, lexical_score, semantic_rank, "
        "semantic_distance, COUNT(name) OVER () AS fused_total "
        "FROM fused WHERE fused_score > 0 "
        f"ORDER BY fused_score DESC, name ASC LIMIT {n}"
    )
