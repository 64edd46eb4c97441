"""What an engine answer may claim, read from the engine's evidence, never from the SQL.

* ``bm25_index`` / ``vector_index``: the index the table's index list shows for an
  arm. A vector arm is approximate only when a ``ready`` vector index with the
  query's metric (cosine) is listed on the vector column; otherwise the engine
  answers it by a full scan, and the arm says so and warns. BM25 has no scan to
  fall back to: without a ready BM25 index on the text column it refuses.
* ``engine_models``: the rows' ``model, revision`` groups, one grouped count per
  table, cached (``cached``: the table's catalog too) until this process next
  syncs or builds that table (``forget_models``). ``model_refusal`` refuses a
  vector arm whose query vector comes from another model or revision than the
  rows (naming both); a table without model columns declares them in ``[engine]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hqltui.core.engine import sql
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.ranking import Refusal, Warning

T = TypeVar("T")
BUILD = "hql-tui engine build VAULT"
SYNC = "hql-tui engine sync VAULT"
METRIC = "cosine"  # the metric of the vector arm's distance (sql.DISTANCE)
INDEX_WARNING = "engine-index"  # the kind of the warning that a vector arm is a full scan


@dataclass(frozen=True)
class ModelGroup:
    model: str | None
    revision: str | None
    rows: int | None  # None: declared in [engine], not counted

    def describe(self) -> str:
        count = "declared in [engine]" if self.rows is None else f"{self.rows} rows"
        return f"model {self.model} revision {self.revision} ({count})"


DECLARED = "declared in [engine]"
STORED = "the engine's rows"


_lock = threading.Lock()
_cache: dict[tuple[Any, ...], Any] = {}  # (table key, what) -> value
_generation: dict[tuple[Any, ...], int] = {}


def _key(settings: EngineSettings) -> tuple[Any, ...]:
    return (settings.host, settings.workspace, settings.database, settings.schema,
            settings.table)


def forget_models(settings: EngineSettings) -> None:
    """The rows may change: the next search reads their models (and catalog) again."""
    key = _key(settings)
    with _lock:
        for what in [w for (k, w) in _cache if k == key]:
            del _cache[(key, what)]
        _generation[key] = _generation.get(key, 0) + 1


def cached(settings: EngineSettings, what: str, read: Callable[[], T]) -> T:
    """``read()`` once per table until the next ``forget_models`` of it."""
    key = _key(settings)
    with _lock:
        if (key, what) in _cache:
            return _cache[(key, what)]
        generation = _generation.get(key, 0)
    value = read()
    with _lock:
        if _generation.get(key, 0) == generation:  # no sync or build began meanwhile
            _cache[(key, what)] = value
    return value


def engine_models(c: Any) -> tuple[ModelGroup, ...]:
    """The rows' (model, revision) groups with their row counts, cached per table."""

    def read() -> tuple[ModelGroup, ...]:
        _, rows = c.query(sql.models_sql(c.table), "count the rows' models")
        return tuple(ModelGroup(r[0], r[1], int(r[2])) for r in rows)

    return cached(c.settings, "models", read)


def table_models(c: Any) -> tuple[tuple[ModelGroup, ...], str]:
    """(the model groups, where they come from): declared in ``[engine]`` for a table
    without model columns, else the rows' own."""
    s = c.settings
    if s.declared_model is not None:
        return (ModelGroup(s.declared_model, s.declared_revision, None),), DECLARED
    return engine_models(c), STORED


def model_refusal(groups: tuple[ModelGroup, ...], model: str, revision: str) -> Refusal | None:
    """A refusal when any row holds a vector of another model or revision than the query's."""
    others = [g for g in groups if (g.model, g.revision) != (model, revision)]
    if not others:
        return None
    whose = "the table declares" if groups[0].rows is None else "the engine's rows are under"
    return Refusal(
        f"{whose} {'; '.join(g.describe() for g in groups)}, and the "
        f"query vector is under model {model} revision {revision}: vectors of different "
        "models are not compared",
        f"{SYNC} (it uploads the local index's vectors)",
    )


def _listed(indexes: list[Any], index_type: str, column: str) -> list[Any]:
    return [i for i in indexes if i.index_type == index_type and i.columns == (column,)]


def bm25_index(indexes: list[Any], table: str, column: str = sql.TEXT_COLUMN
               ) -> tuple[Any, Refusal | None]:
    """(the ready BM25 index on the text column, None) or (None, the refusal)."""
    found = _listed(indexes, "bm25", column)
    ready = [i for i in found if i.status == "ready"]
    if ready:
        return ready[0], None
    if found:
        return None, Refusal(
            f"the bm25 index `{found[0].name}` on {column} of {table} is still "
            f"{found[0].status}; engine BM25 has no fallback without it",
            f"wait for its build to finish ({BUILD} waits for it)",
        )
    return None, Refusal(
        f"{table} has no bm25 index on {column} (the rows are there, the search "
        "indexes are missing); engine BM25 has no fallback without it",
        BUILD,
    )


def vector_index(indexes: list[Any], table: str, column: str = sql.VECTOR_COLUMN
                 ) -> tuple[Any, Warning | None]:
    """(the index serving the index-shaped vector arm, None) or (None: a full scan, the
    warning why)."""
    found = _listed(indexes, "vector", column)
    ready = [i for i in found if i.status == "ready" and i.metric == METRIC]
    if ready:
        return ready[0], None
    scan = "so the engine answers the vector arm by a full scan (exact, not approximate)"
    if any(i.metric == METRIC for i in found):
        pending = next(i for i in found if i.metric == METRIC)
        message = (f"the vector index `{pending.name}` on {column} of {table} is "
                   f"still {pending.status}, {scan}")
    elif found:
        message = (f"the vector index `{found[0].name}` on {column} of {table} uses "
                   f"metric {found[0].metric}, not {METRIC}, {scan}; {BUILD} replaces it")
    else:
        message = (f"no vector index on {column} of {table}: the index is missing, "
                   f"{scan}; {BUILD} creates it")
    return None, Warning(INDEX_WARNING, message)
