"""What an engine answer may claim, read from the engine's evidence, never from the SQL.

* ``bm25_index`` / ``vector_index``: the index the table's index list shows for an
  arm. A vector arm is approximate only when a ``ready`` vector index with the
  query's metric (cosine) is listed on the vector column; otherwise the engine
  answers it by a full scan, and the arm says so and warns. BM25 has no scan to
  fall back to: without a ready BM25 index on the text column it refuses.
* ``engine_models``: the rows' ``model, revision`` groups, one grouped count per
  table, cached until this process next syncs or builds that table
  (``forget_models``). ``model_refusal`` refuses a vector arm whose query vector
  comes from another model or revision than the rows (naming both).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hqltui.core.engine import sql
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.ranking import Refusal, Warning

BUILD = "hql-tui engine build VAULT"
SYNC = "hql-tui engine sync VAULT"
METRIC = "cosine"  # the metric of the vector arm's distance (sql.DISTANCE)
INDEX_WARNING = "engine-index"  # the kind of the warning that a vector arm is a full scan


@dataclass(frozen=True)
class ModelGroup:
    model: str | None
    revision: str | None
    rows: int

    def describe(self) -> str:
        return f"model {self.model} revision {self.revision} ({self.rows} rows)"


_lock = threading.Lock()
_models: dict[tuple[Any, ...], tuple[ModelGroup, ...]] = {}
_generation: dict[tuple[Any, ...], int] = {}


def _key(settings: EngineSettings) -> tuple[Any, ...]:
    return (settings.host, settings.workspace, settings.database, settings.full_table)


def forget_models(settings: EngineSettings) -> None:
    """The rows may change: the next search reads their models again."""
    key = _key(settings)
    with _lock:
        _models.pop(key, None)
        _generation[key] = _generation.get(key, 0) + 1


def engine_models(c: Any) -> tuple[ModelGroup, ...]:
    """The rows' (model, revision) groups with their row counts, cached per table."""
    key = _key(c.settings)
    with _lock:
        if key in _models:
            return _models[key]
        generation = _generation.get(key, 0)
    _, rows = c.query(sql.models_sql(c.settings.table), "count the rows' models")
    groups = tuple(ModelGroup(r[0], r[1], int(r[2])) for r in rows)
    with _lock:
        if _generation.get(key, 0) == generation:  # no sync or build began meanwhile
            _models[key] = groups
    return groups


def model_refusal(groups: tuple[ModelGroup, ...], model: str, revision: str) -> Refusal | None:
    """A refusal when any row holds a vector of another model or revision than the query's."""
    others = [g for g in groups if (g.model, g.revision) != (model, revision)]
    if not others:
        return None
    return Refusal(
        f"the engine's rows are under {'; '.join(g.describe() for g in groups)}, and the "
        f"query vector is under model {model} revision {revision}: vectors of different "
        "models are not compared",
        f"{SYNC} (it uploads the local index's vectors)",
    )


def _listed(indexes: list[Any], index_type: str, column: str) -> list[Any]:
    return [i for i in indexes if i.index_type == index_type and i.columns == (column,)]


def bm25_index(indexes: list[Any], table: str) -> tuple[Any, Refusal | None]:
    """(the ready BM25 index on the text column, None) or (None, the refusal)."""
    found = _listed(indexes, "bm25", sql.TEXT_COLUMN)
    ready = [i for i in found if i.status == "ready"]
    if ready:
        return ready[0], None
    if found:
        return None, Refusal(
            f"the bm25 index `{found[0].name}` on {sql.TEXT_COLUMN} of {table} is still "
            f"{found[0].status}; engine BM25 has no fallback without it",
            f"wait for its build to finish ({BUILD} waits for it)",
        )
    return None, Refusal(
        f"{table} has no bm25 index on {sql.TEXT_COLUMN} (the rows are there, the search "
        "indexes are missing); engine BM25 has no fallback without it",
        BUILD,
    )


def vector_index(indexes: list[Any], table: str) -> tuple[Any, Warning | None]:
    """(the index serving the index-shaped vector arm, None) or (None: a full scan, the
    warning why)."""
    found = _listed(indexes, "vector", sql.VECTOR_COLUMN)
    ready = [i for i in found if i.status == "ready" and i.metric == METRIC]
    if ready:
        return ready[0], None
    scan = "so the engine answers the vector arm by a full scan (exact, not approximate)"
    if any(i.metric == METRIC for i in found):
        pending = next(i for i in found if i.metric == METRIC)
        message = (f"the vector index `{pending.name}` on {sql.VECTOR_COLUMN} of {table} is "
                   f"still {pending.status}, {scan}")
    elif found:
        message = (f"the vector index `{found[0].name}` on {sql.VECTOR_COLUMN} of {table} uses "
                   f"metric {found[0].metric}, not {METRIC}, {scan}; {BUILD} replaces it")
    else:
        message = (f"no vector index on {sql.VECTOR_COLUMN} of {table}: the index is missing, "
                   f"{scan}; {BUILD} creates it")
    return None, Warning(INDEX_WARNING, message)
