"""``hql.toml``: the tables this project owns, and every refusal by name.

Each owned table is checked on its own, so a broken ``[engine]`` never takes the
index or the search settings down with it: the app shows the error and keeps
working; a command that needs the broken table exits with the message.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any

from producer.vault import read_regular

CONFIG_NAME = "hql.toml"
DEFAULT_INDEX = ".hql/index.sqlite"
PROVIDERS = ("local", "http")
# Numeric precision of the local model's forward pass; float32 is the default.
PRECISIONS = ("float32", "bfloat16")
DEFAULT_PRECISION = "float32"
LEXICAL_ARMS = ("bm25", "hashbag")
TABLES = ("semantics", "semantics.embedder", "engine", "search")


class ConfigError(ValueError):
    """A refusal: one line naming the file, the table and what to change."""


@dataclass(frozen=True)
class EmbedderConfig:
    provider: str = "local"
    model: str | None = None
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = None
    precision: str = DEFAULT_PRECISION

    def resolve(self, **overrides: Any) -> EmbedderConfig:
        """Command-line flags win field by field; ``None`` means "not given"."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise ConfigError(f"not embedder fields: {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def check(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"unknown embedder provider `{self.provider}`; accepted: {', '.join(PROVIDERS)}"
            )
        if self.dimensions is not None and (
            isinstance(self.dimensions, bool)
            or not isinstance(self.dimensions, int)
            or self.dimensions <= 0
        ):
            raise ConfigError("`dimensions` must be a positive integer")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"unknown precision `{self.precision}`; accepted: {', '.join(PRECISIONS)}"
            )
        if self.provider != "http":
            return
        if self.precision != "float32":
            raise ConfigError(
                "`precision` applies to the `local` provider only: an http endpoint computes "
                "its vectors its own way"
            )
        missing = [k for k in ("endpoint", "model") if not getattr(self, k)]
        if missing:
            raise ConfigError(
                f"the `http` provider needs {', '.join(f'`{k}`' for k in missing)}: an endpoint "
                "answering `POST /v1/embeddings`, and the model to request from it"
            )
        if not self.revision:
            raise ConfigError(
                "the `http` provider needs `revision`: a score's provenance names the exact "
                "numbers behind it, and an endpoint cannot tell us which they are. Name the "
                'version you call, e.g. revision = "2024-01-25"'
            )


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
    lexical: str = "bm25"
    rrf_k: float = 60.0
    weights: Weights = field(default_factory=Weights)
    window: int = 50
    limit: int = 20


@dataclass
class Config:
    root: Path
    file: Path
    exists: bool = False
    index: str | None = None
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    engine: EngineConfig | None = None
    search: SearchConfig = field(default_factory=SearchConfig)
    errors: dict[str, str] = field(default_factory=dict)
    # Set when the whole file cannot be read (not TOML, not UTF-8): every owned table
    # is refused with this one message, which is reported once, not once per table.
    file_error: str | None = None
    file_fix: str | None = None  # where to look: the line and the table it breaks

    def messages(self) -> list[str]:
        """Every refusal of this file, each once (a broken file is one message)."""
        if self.file_error:
            return [self.file_error]
        return [message for _, message in sorted(self.errors.items())]

    @property
    def index_path(self) -> Path | None:
        """The configured index joined to the vault root (checked to stay inside it)."""
        return self.root / self.index if self.index is not None else None

    def require(self, table: str) -> None:
        """Raise the table's refusal, if it has one."""
        if table in self.errors:
            raise ConfigError(self.errors[table])


# ----------------------------------------------------------------------- checking


def _where(file: Path, table: str) -> str:
    return f"{file}: [{table}]"


def _known(data: dict[str, Any], accepted: tuple[str, ...], where: str) -> None:
    unknown = sorted(k for k in data if k not in accepted)
    if unknown:
        noun = "key" if len(unknown) == 1 else "keys"
        raise ConfigError(
            f"{where} unknown {noun} {', '.join(f'`{k}`' for k in unknown)}; "
            f"accepted: {', '.join(accepted)}"
        )


def _string(data: dict[str, Any], key: str, where: str) -> str | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} `{key}` must be a non-empty string")
    return value.strip()


def _positive_int(data: dict[str, Any], key: str, where: str) -> int | None:
    if key not in data:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where} `{key}` must be a positive integer")
    return value


def _number(value: Any, key: str, where: str, positive: bool) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        kind = "a positive number" if positive else "a number of at least 0"
        raise ConfigError(f"{where} `{key}` must be {kind}")
    return float(value)


def _no_literal_key(data: dict[str, Any], where: str, suggestion: str) -> None:
    if "api_key" in data:  # checked first, and the value is never echoed
        raise ConfigError(
            f"{where} `api_key` must not hold a key, because this file is committed. "
            f'Name the environment variable that holds it instead: api_key_env = "{suggestion}"'
        )


def check_index_path(root: Path, named: str, file: Path) -> str:
    """Refuse an index path that is absolute, climbs out, or escapes through a symlink."""
    where = _where(file, "semantics")
    path = PurePosixPath(named.replace("\\", "/"))
    if path.is_absolute() or Path(named).is_absolute() or (named[1:2] == ":"):
        raise ConfigError(
            f"{where} the configured index `{named}` is an absolute path, and absolute paths "
            "are refused: name it relative to the vault (e.g. `.hql/index.sqlite`), so it is "
            "never outside the vault"
        )
    if any(part == ".." for part in path.parts):
        raise ConfigError(
            f"{where} the configured index `{named}` climbs out with `..`, so it is outside "
            "the vault: name it relative to the vault (e.g. `.hql/index.sqlite`)"
        )
    parts = [p for p in path.parts if p != "."]
    if not parts:
        raise ConfigError(f"{where} `index` must name a file inside the vault")
    real_root = Path(os.path.realpath(root))  # realpath: a symlink loop is no crash
    if not Path(os.path.realpath(root.joinpath(*parts))).is_relative_to(real_root):
        raise ConfigError(
            f"{where} the configured index `{named}` leads outside the vault through a symlink"
        )
    return "/".join(parts)


def _semantics(root: Path, table: Any, file: Path) -> str | None:
    where = _where(file, "semantics")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    _known(table, ("index", "embedder"), where)
    named = _string(table, "index", where)
    return None if named is None else check_index_path(root, named, file)


def _embedder(table: Any, file: Path) -> EmbedderConfig:
    where = _where(file, "semantics.embedder")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    _no_literal_key(table, where, "OPENAI_API_KEY")
    accepted = tuple(f.name for f in fields(EmbedderConfig))
    _known(table, accepted, where)
    values = {k: _string(table, k, where) for k in accepted if k != "dimensions"}
    if values["precision"] is not None and values["precision"] not in PRECISIONS:
        raise ConfigError(
            f"{where} unknown precision `{values['precision']}`; accepted: {', '.join(PRECISIONS)}"
        )
    # Field-level checks only: flags may still complete the table, so the
    # provider-level ``check()`` runs on the resolved result (producer) or
    # before a live embedding (app).
    return EmbedderConfig(
        **{k: v for k, v in values.items() if v is not None},
        dimensions=_positive_int(table, "dimensions", where),
    )


def _engine(table: Any, file: Path) -> EngineConfig:
    where = _where(file, "engine")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    _no_literal_key(table, where, "HOTDATA_API_KEY")
    accepted = tuple(f.name for f in fields(EngineConfig))
    _known(table, accepted, where)
    values = {k: _string(table, k, where) for k in accepted}
    config = EngineConfig(**{k: v for k, v in values.items() if v is not None})
    if config.provider != "hotdata":
        raise ConfigError(f"{where} unknown engine provider `{config.provider}`; accepted: hotdata")
    return config


def _search(table: Any, file: Path) -> SearchConfig:
    where = _where(file, "search")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    accepted = tuple(f.name for f in fields(SearchConfig))
    _known(table, accepted, where)
    default = SearchConfig()
    lexical = _string(table, "lexical", where) or default.lexical
    if lexical not in LEXICAL_ARMS:
        raise ConfigError(
            f"{where} unknown lexical arm `{lexical}`; accepted: {', '.join(LEXICAL_ARMS)}"
        )
    weights = default.weights
    if "weights" in table:
        raw = table["weights"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{where} `weights` must be a table with keys lexical, semantic")
        _known(raw, ("lexical", "semantic"), f"{file}: [search.weights]")
        weights = Weights(
            **{k: _number(v, f"weights.{k}", where, positive=False) for k, v in raw.items()}
        )
    rrf_k = default.rrf_k
    if "rrf_k" in table:
        rrf_k = _number(table["rrf_k"], "rrf_k", where, positive=True)
    return SearchConfig(
        lexical=lexical,
        rrf_k=rrf_k,
        weights=weights,
        window=_positive_int(table, "window", where) or default.window,
        limit=_positive_int(table, "limit", where) or default.limit,
    )


def _broken(config: Config, message: str) -> Config:
    """A file none of whose tables can be read: each owned table refused, reported once."""
    config.errors = dict.fromkeys(TABLES, message)
    config.file_error = message
    return config


_TABLE_LINE = re.compile(r"^\s*\[\[?\s*([^\]#]+?)\s*\]?\]?\s*(?:#.*)?$")


def _toml_fix(text: str, error: str) -> str:
    """Which table the syntax error is in, so the fix says where to look."""
    found = re.search(r"at line (\d+)", error)
    if not found:
        return "fix the file"
    line = int(found.group(1))
    table = None
    for raw in reversed(text.splitlines()[:line]):
        header = _TABLE_LINE.match(raw)
        if header and raw.lstrip().startswith("["):
            table = header.group(1)
            break
    where = f"the [{table}] table" if table else "the top of the file, before any table"
    return f"fix line {line}, in {where}"


def load_config(root: str | Path) -> Config:
    """Read ``ROOT/hql.toml``; refusals land in ``Config.errors`` keyed by table."""
    root = Path(root)
    file = root / CONFIG_NAME
    config = Config(root=root, file=file)
    try:
        raw = read_regular(file)
    except FileNotFoundError:
        return config
    except OSError as exc:
        config.file_fix = f"make {file.name} a readable file"
        return _broken(config, f"{file}: cannot be read: {exc.strerror}")
    config.exists = True
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        config.file_fix = f"save {file.name} as UTF-8"
        return _broken(config, f"{file}: is not UTF-8 (invalid byte at offset {exc.start})")
    except tomllib.TOMLDecodeError as exc:
        fix = _toml_fix(text, str(exc))
        config.file_fix = f"{fix} of {file.name}"
        return _broken(config, f"{file}: is not valid TOML: {exc}; {fix}")

    semantics = data.get("semantics")
    if semantics is not None:
        try:
            config.index = _semantics(root, semantics, file)
        except ConfigError as exc:
            config.errors["semantics"] = str(exc)
        if isinstance(semantics, dict) and "embedder" in semantics:
            try:
                config.embedder = _embedder(semantics["embedder"], file)
            except ConfigError as exc:
                config.errors["semantics.embedder"] = str(exc)
    if "engine" in data:
        try:
            config.engine = _engine(data["engine"], file)
        except ConfigError as exc:
            config.errors["engine"] = str(exc)
    if "search" in data:
        try:
            config.search = _search(data["search"], file)
        except ConfigError as exc:
            config.errors["search"] = str(exc)
    return config
