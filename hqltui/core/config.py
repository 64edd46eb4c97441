"""The app's tables of ``hql.toml``: ``[search]`` and ``[engine]``, each checked here.

``load_app_config(root)`` reads the file once through ``producer.config.load_producer_config``
(which owns ``[semantics]``, the file's own refusals and the wording shared by
all tables) and adds these two tables to what it returns, an ``AppConfig``. A
broken table is refused alone: its message lands in ``errors`` under its name.
``[search] lexical`` accepts the lexical arms of ``hqltui.core.arms``; ``[search]
labels`` names the labels file (``hqltui.core.labels``), kept inside the vault.

``[engine]`` is checked here and only here: a known provider, a ``database``,
``table``, ``catalog``, ``schema`` and every ``*_column`` plain identifiers, a
declared ``model`` with its ``revision`` (and not beside model columns), one
column per role, ``api_key_env`` / ``workspace_env`` names of environment
variables (never a key). What the environment adds to it (the key,
the workspace, the host) is read in ``hqltui.core.engine.settings``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hqltui.core.arms import DEFAULT_FUSION
from hqltui.core.fusion import (
    METHODS,
    NORMS,
    RRF,
    UNIT_KEYS,
    AdaptiveParams,
    FusionConfig,
    check_adaptive,
    check_alpha,
    check_rrf_k,
    check_weight,
)
from hqltui.core.names import DEFAULT_LEXICAL, LEXICAL_ARMS
from producer.config import (
    ConfigError,
    ProducerConfig,
    check_inside_path,
    known_keys,
    load_producer_config,
    number_value,
    open_table,
    positive_int,
    string_value,
)

# The labels file's default name (``hqltui.core.labels``); here, so loading a config
# imports neither the labels nor the evaluation modules.
DEFAULT_LABELS = "queries.toml"

ENGINE_PROVIDERS = ("hotdata",)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a SQL name or a variable name
EXAMPLES = {"table": "cards", "catalog": "default", "schema": "public", "key_column": "name",
            "text_column": "text", "vector_column": "embedding", "model_column": "model",
            "revision_column": "revision"}


@dataclass(frozen=True)
class EngineConfig:
    provider: str = "hotdata"
    database: str | None = None
    table: str = "cards"
    api_key_env: str = "HOTDATA_API_KEY"
    workspace_env: str = "HOTDATA_WORKSPACE"
    host: str | None = None
    # Where the table is and what its columns are called (a table this tool did not
    # build). catalog None: discovered from information_schema.tables.
    catalog: str | None = None
    schema: str = "public"
    key_column: str = "name"
    text_column: str = "text"
    vector_column: str = "embedding"
    model_column: str | None = None  # None: "model", unless a model is declared
    revision_column: str | None = None  # None: "revision", unless a revision is declared
    model: str | None = None  # declared, for a table without model columns
    revision: str | None = None

    @property
    def columns(self) -> dict[str, str | None]:
        """role -> column name (None: the table has no such column; its value is declared)."""
        declared = self.model is not None
        return {
            "key": self.key_column.lower(),
            "text": self.text_column.lower(),
            "vector": self.vector_column.lower(),
            "model": None if declared else (self.model_column or "model").lower(),
            "revision": None if declared else (self.revision_column or "revision").lower(),
        }


NAMES = ("table", "catalog", "schema", "key_column", "text_column", "vector_column",
         "model_column", "revision_column")  # [engine] keys holding SQL identifiers


@dataclass(frozen=True)
class Weights:
    lexical: float = 1.0
    semantic: float = 1.0


@dataclass(frozen=True)
class SearchConfig:
    lexical: str = DEFAULT_LEXICAL
    rrf_k: float = 60.0
    weights: Weights = field(default_factory=Weights)
    window: int = 50
    limit: int = 20
    labels: str = DEFAULT_LABELS  # the labels file, relative to the vault root
    fusion: str = DEFAULT_FUSION.method
    alpha: float = DEFAULT_FUSION.alpha
    norm: str = DEFAULT_FUSION.norm
    adaptive: AdaptiveParams = DEFAULT_FUSION.adaptive

    def fusion_config(self, method: str | None = None) -> FusionConfig:
        """The configured fusion (or ``method`` with this table's parameters)."""
        return FusionConfig(
            method=method or self.fusion,
            k=self.rrf_k,
            weights=(self.weights.lexical, self.weights.semantic),
            alpha=self.alpha,
            norm=self.norm,
            adaptive=self.adaptive,
        )


ADAPTIVE_KEYS = tuple(f.name for f in fields(AdaptiveParams))


@dataclass
class AppConfig(ProducerConfig):
    """The producer's ``ProducerConfig`` and the app's own tables."""

    engine: EngineConfig | None = None  # None: no [engine] table
    search: SearchConfig = field(default_factory=SearchConfig)


def engine_table(table: Any, file: Path) -> EngineConfig:
    accepted = tuple(f.name for f in fields(EngineConfig))
    where = open_table(table, file, "engine", accepted, "HOTDATA_API_KEY")
    values = {k: string_value(table, k, where) for k in accepted}
    config = EngineConfig(**{k: v for k, v in values.items() if v is not None})
    if config.provider not in ENGINE_PROVIDERS:
        raise ConfigError(
            f"{where} unknown engine provider `{config.provider}`; "
            f"accepted: {', '.join(ENGINE_PROVIDERS)}"
        )
    if not config.database:
        raise ConfigError(
            f'{where} names no database: set database = "<database id>" '
            "(the id of a Hotdata database, not its name)"
        )
    for key in NAMES:
        value = getattr(config, key)
        if value is not None and not IDENTIFIER.match(value):
            raise ConfigError(
                f"{where} `{key}` = `{value}` is not a plain identifier (letters, digits and "
                "underscores; the engine lowercases it): set "
                f'{key} = "{EXAMPLES[key]}", for example'
            )
    if (config.model is None) != (config.revision is None):
        raise ConfigError(
            f"{where} declares `{'model' if config.model else 'revision'}` without "
            f"`{'revision' if config.model else 'model'}`: a table without model columns "
            "declares both (the query vector's model and revision must equal them)"
        )
    if config.model is not None and (config.model_column or config.revision_column):
        raise ConfigError(
            f"{where} declares a model and also names model columns: set either "
            "`model` and `revision` (a table without them) or `model_column` and "
            "`revision_column`, not both"
        )
    roles = config.columns
    named = [c for c in roles.values() if c is not None]
    if len(set(named)) != len(named):
        twice = sorted({c for c in named if named.count(c) > 1})
        raise ConfigError(
            f"{where} gives column `{twice[0]}` more than one role (key, text, vector, "
            "model, revision each need their own column)"
        )
    # The value of a variable-name setting is never shown: it may be a key pasted by mistake.
    if not IDENTIFIER.match(config.api_key_env):
        raise ConfigError(
            f"{where} `api_key_env` must name an environment variable, and its value does not "
            "look like one (a key must never be written in this file): set "
            'api_key_env = "HOTDATA_API_KEY" and export the key in that variable'
        )
    if not IDENTIFIER.match(config.workspace_env):
        raise ConfigError(
            f"{where} `workspace_env` must name an environment variable, and its value does "
            'not look like one: set workspace_env = "HOTDATA_WORKSPACE"'
        )
    return config


def search_table(table: Any, file: Path) -> SearchConfig:
    where = open_table(table, file, "search", tuple(f.name for f in fields(SearchConfig)))
    default = SearchConfig()
    lexical = string_value(table, "lexical", where) or default.lexical
    if lexical not in LEXICAL_ARMS:
        raise ConfigError(
            f"{where} unknown lexical arm `{lexical}`; accepted: {', '.join(LEXICAL_ARMS)}"
        )
    weights = default.weights
    if "weights" in table:
        raw = table["weights"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{where} `weights` must be a table with keys lexical, semantic")
        known_keys(raw, ("lexical", "semantic"), f"{file}: [search.weights]")
        weights = Weights(**{
            k: _bounded(check_weight, number_value(v, f"weights.{k}", where, positive=False),
                        f"weights.{k}", where)
            for k, v in raw.items()})
    rrf_k = default.rrf_k
    if "rrf_k" in table:
        rrf_k = _bounded(check_rrf_k, number_value(table["rrf_k"], "rrf_k", where,
                                                   positive=True), "rrf_k", where)
    # rrf_k / weights without `fusion` keep rrf: they were written for it.
    implied = RRF if ("rrf_k" in table or "weights" in table) else default.fusion
    method = string_value(table, "fusion", where) or implied
    if method not in METHODS:
        raise ConfigError(f"{where} unknown fusion `{method}`; accepted: {', '.join(METHODS)}")
    norm = string_value(table, "norm", where) or default.norm
    if norm not in NORMS:
        raise ConfigError(f"{where} unknown norm `{norm}`; accepted: {', '.join(NORMS)}")
    alpha = default.alpha
    if "alpha" in table:
        alpha = _alpha(number_value(table["alpha"], "alpha", where, positive=False), "alpha", where)
    adaptive = default.adaptive
    if "adaptive" in table:
        raw = table["adaptive"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{where} `adaptive` must be a table with keys "
                              f"{', '.join(ADAPTIVE_KEYS)}")
        known_keys(raw, ADAPTIVE_KEYS, f"{file}: [search.adaptive]")
        values = {k: number_value(v, f"adaptive.{k}", where, positive=False)
                  for k, v in raw.items()}
        for k, v in values.items():
            if k in UNIT_KEYS:
                _alpha(v, f"adaptive.{k}", where)
        adaptive = AdaptiveParams(**{**adaptive.__dict__, **values})
        try:
            check_adaptive(adaptive)
        except ValueError as exc:
            raise ConfigError(f"{where} [search.adaptive] {exc}") from None
    return SearchConfig(
        lexical=lexical,
        rrf_k=rrf_k,
        weights=weights,
        window=positive_int(table, "window", where) or default.window,
        limit=positive_int(table, "limit", where) or default.limit,
        labels=_labels(table, file, where),
        fusion=method,
        alpha=alpha,
        norm=norm,
        adaptive=adaptive,
    )


def _labels(table: Any, file: Path, where: str) -> str:
    """``[search] labels``: the labels file, inside the vault by the index's rules."""
    named = string_value(table, "labels", where)
    if named is None:
        return DEFAULT_LABELS
    return check_inside_path(file.parent, named, file, table="search", key="labels",
                             example=DEFAULT_LABELS)


def _bounded(check: Callable[[float, str], float], value: float, key: str, where: str
             ) -> float:
    """``check`` (a bound of ``hqltui.core.fusion``) as a refusal of this file's key."""
    try:
        return check(value, key)
    except ValueError as exc:
        raise ConfigError(f"{where} {exc}") from None


def _alpha(value: float, key: str, where: str) -> float:
    try:
        return check_alpha(value, key)
    except ValueError:
        raise ConfigError(f"{where} `{key}` must be between 0 and 1") from None


READERS = {"engine": engine_table, "search": search_table}


def load_app_config(root: str | Path) -> AppConfig:
    """``ROOT/hql.toml`` with every table the app reads; refusals in ``errors``."""
    config = load_producer_config(root, READERS, AppConfig)
    assert isinstance(config, AppConfig)
    return config
