"""The app's tables of ``hql.toml``: ``[search]`` and ``[engine]``, each checked here.

``load_config(root)`` reads the file once through ``producer.config.load_config``
(which owns ``[semantics]``, the file's own refusals and the wording shared by
all tables) and adds these two tables to what it returns, an ``AppConfig``. A
broken table is refused alone: its message lands in ``errors`` under its name.
``[search] lexical`` accepts the lexical arms of ``hqltui.core.arms``; ``[search]
labels`` names the labels file (``hqltui.core.labels``), kept inside the vault.

``[engine]`` is checked here and only here: a known provider, a ``database``,
``table`` a plain identifier, ``api_key_env`` / ``workspace_env`` names of
environment variables (never a key). What the environment adds to it (the key,
the workspace, the host) is read in ``hqltui.core.engine.settings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hqltui.core.arms import DEFAULT_LEXICAL, LEXICAL_ARMS
from hqltui.core.labels import DEFAULT_LABELS
from producer.config import (
    Config,
    ConfigError,
    check_inside_path,
    known_keys,
    number_value,
    open_table,
    positive_int,
    string_value,
)
from producer.config import load_config as load_file

ENGINE_PROVIDERS = ("hotdata",)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a SQL name or a variable name


@dataclass(frozen=True)
class EngineConfig:
    provider: str = "hotdata"
    database: str | None = None
    table: str = "cards"
    api_key_env: str = "HOTDATA_API_KEY"
    workspace_env: str = "HOTDATA_WORKSPACE"
    host: str | None = None


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


@dataclass
class AppConfig(Config):
    """The producer's ``Config`` and the app's own tables."""

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
    if not IDENTIFIER.match(config.table):
        raise ConfigError(
            f"{where} `table` = `{config.table}` is not a plain identifier (letters, digits "
            'and underscores; the engine lowercases it): set table = "cards", for example'
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
        weights = Weights(
            **{k: number_value(v, f"weights.{k}", where, positive=False) for k, v in raw.items()}
        )
    rrf_k = default.rrf_k
    if "rrf_k" in table:
        rrf_k = number_value(table["rrf_k"], "rrf_k", where, positive=True)
    return SearchConfig(
        lexical=lexical,
        rrf_k=rrf_k,
        weights=weights,
        window=positive_int(table, "window", where) or default.window,
        limit=positive_int(table, "limit", where) or default.limit,
        labels=_labels(table, file, where),
    )


def _labels(table: Any, file: Path, where: str) -> str:
    """``[search] labels``: the labels file, inside the vault by the index's rules."""
    named = string_value(table, "labels", where)
    if named is None:
        return DEFAULT_LABELS
    return check_inside_path(file.parent, named, file, table="search", key="labels",
                             example=DEFAULT_LABELS)


READERS = {"engine": engine_table, "search": search_table}


def load_config(root: str | Path) -> AppConfig:
    """``ROOT/hql.toml`` with every table the app reads; refusals in ``errors``."""
    config = load_file(root, READERS, AppConfig)
    assert isinstance(config, AppConfig)
    return config
