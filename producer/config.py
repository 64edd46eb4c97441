"""``hql.toml``: reading the file once, the ``[semantics]`` tables, every refusal by name.

The producer owns ``[semantics]`` and ``[semantics.embedder]``; the app's tables
(``[search]``, ``[engine]``) are checked in ``hqltui.core.config``, which passes
their readers to ``load_producer_config`` so the file is read and refused in one place.
Each owned table is checked on its own, so a broken ``[engine]`` never takes the
index or the search settings down with it: the app shows the error and keeps
working; a command that needs the broken table exits with the message.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any

from producer.tomlfile import TomlFileError, read_toml
from producer.wording import with_fix

CONFIG_NAME = "hql.toml"
DEFAULT_INDEX = ".hql/index.sqlite"
PROVIDERS = ("local", "http")
# Numeric precision of the local model's forward pass; float32 is the default.
PRECISIONS = ("float32", "bfloat16", "int8")
DEFAULT_PRECISION = "float32"
# Which runtime runs the local model (docs/runtime.md): not part of the recipe.
RUNTIMES = ("auto", "torch", "onnxruntime")
DEFAULT_RUNTIME = "auto"
TABLES = ("semantics", "semantics.embedder")  # the producer's own

# A table's reader: (the table's value, the file) -> what it holds; ConfigError refuses it.
TableReader = Callable[[Any, Path], Any]


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
    runtime: str = DEFAULT_RUNTIME

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
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"unknown runtime `{self.runtime}`; accepted: {', '.join(RUNTIMES)}")
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


@dataclass
class ProducerConfig:
    root: Path
    file: Path
    exists: bool = False
    index: str | None = None
    passages: bool = False  # [semantics] passages: also embed each card's passages
    auto_build: bool | None = None  # [semantics] auto_build; None: not set (see starts_auto_build)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    errors: dict[str, str] = field(default_factory=dict)
    # Set when the whole file cannot be read (not TOML, not UTF-8): every owned table
    # is refused with this one message, which is reported once, not once per table.
    file_error: str | None = None
    file_fix: str | None = None  # where to look: the line and the table it breaks

    def messages(self) -> list[str]:
        """Every refusal of this file, each once (a broken file is one message)."""
        if self.file_error:
            return [with_fix(self.file_error, self.file_fix)]
        return [message for _, message in sorted(self.errors.items())]

    @property
    def starts_auto_build(self) -> bool:
        """``[semantics] auto_build``, or its default: on for the ``local`` embedder,
        off for ``http`` (each of its calls may cost money)."""
        if self.auto_build is not None:
            return self.auto_build
        return self.embedder.provider == "local"

    @property
    def index_path(self) -> Path | None:
        """The configured index joined to the vault root (checked to stay inside it)."""
        return self.root / self.index if self.index is not None else None

    def require(self, table: str) -> None:
        """Raise the table's refusal, if it has one."""
        if table in self.errors:
            message = self.errors[table]
            raise ConfigError(with_fix(message, self.file_fix) if self.file_error else message)


# ----------------------------------------------------------------------- checking


def table_label(file: Path, table: str) -> str:
    return f"{file}: [{table}]"


def known_keys(data: dict[str, Any], accepted: tuple[str, ...], where: str) -> None:
    unknown = sorted(k for k in data if k not in accepted)
    if unknown:
        noun = "key" if len(unknown) == 1 else "keys"
        raise ConfigError(
            f"{where} unknown {noun} {', '.join(f'`{k}`' for k in unknown)}; "
            f"accepted: {', '.join(accepted)}"
        )


def string_value(data: dict[str, Any], key: str, where: str) -> str | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} `{key}` must be a non-empty string")
    return value.strip()


def positive_int(data: dict[str, Any], key: str, where: str) -> int | None:
    if key not in data:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where} `{key}` must be a positive integer")
    return value


def number_value(value: Any, key: str, where: str, positive: bool) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        kind = "a positive number" if positive else "a number of at least 0"
        raise ConfigError(f"{where} `{key}` must be {kind}")
    return float(value)


def no_literal_key(data: dict[str, Any], where: str, suggestion: str) -> None:
    if "api_key" in data:  # checked first, and the value is never echoed
        raise ConfigError(
            f"{where} `api_key` must not hold a key, because this file is committed. "
            f'Name the environment variable that holds it instead: api_key_env = "{suggestion}"'
        )


def open_table(
    table: Any, file: Path, name: str, accepted: tuple[str, ...], key_variable: str | None = None
) -> str:
    """The checks every owned table starts with: a table, no literal key (when the table
    names a key variable), no unknown key. Returns the table's label for messages."""
    where = table_label(file, name)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    if key_variable is not None:
        no_literal_key(table, where, key_variable)
    known_keys(table, accepted, where)
    return where


def check_inside_path(root: Path, named: str, file: Path, *, table: str = "semantics",
                      key: str = "index", example: str = DEFAULT_INDEX) -> str:
    """Refuse a path (the index, the labels file) that is absolute, climbs out, or
    escapes through a symlink: what the vault's files name stays inside the vault."""
    where = table_label(file, table)
    if "\0" in named:  # no file system accepts it; shown escaped, never raw
        raise ConfigError(f"{where} `{key}` holds a NUL character (\\u0000), which no file "
                          f"name can: name a file inside the vault (e.g. `{example}`)")
    what = f"the configured {key} `{named}`"
    path = PurePosixPath(named.replace("\\", "/"))
    if path.is_absolute() or Path(named).is_absolute() or (named[1:2] == ":"):
        raise ConfigError(
            f"{where} {what} is an absolute path, and absolute paths "
            f"are refused: name it relative to the vault (e.g. `{example}`), so it is "
            "never outside the vault"
        )
    if any(part == ".." for part in path.parts):
        raise ConfigError(
            f"{where} {what} climbs out with `..`, so it is outside "
            f"the vault: name it relative to the vault (e.g. `{example}`)"
        )
    parts = [p for p in path.parts if p != "."]
    if not parts:
        raise ConfigError(f"{where} `{key}` must name a file inside the vault")
    real_root = Path(os.path.realpath(root))  # realpath: a symlink loop is no crash
    if not Path(os.path.realpath(root.joinpath(*parts))).is_relative_to(real_root):
        raise ConfigError(f"{where} {what} leads outside the vault through a symlink")
    return "/".join(parts)


def _semantics(root: Path, table: Any, file: Path) -> str | None:
    where = table_label(file, "semantics")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table")
    known_keys(table, ("index", "embedder", "passages", "auto_build"), where)
    named = string_value(table, "index", where)
    return None if named is None else check_inside_path(root, named, file)


def _passages(table: Any, file: Path) -> bool:
    return bool(_switch(table, file, "passages"))


def _auto_build(table: Any, file: Path) -> bool | None:
    return _switch(table, file, "auto_build")


def _switch(table: Any, file: Path, key: str) -> bool | None:
    """A ``[semantics]`` key that is ``true`` or ``false`` (None when absent)."""
    value = table.get(key) if isinstance(table, dict) else None
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{table_label(file, 'semantics')} `{key}` must be true or false")
    return value


def _embedder(table: Any, file: Path) -> EmbedderConfig:
    accepted = tuple(f.name for f in fields(EmbedderConfig))
    where = open_table(table, file, "semantics.embedder", accepted, "OPENAI_API_KEY")
    values = {k: string_value(table, k, where) for k in accepted if k != "dimensions"}
    if values["precision"] is not None and values["precision"] not in PRECISIONS:
        raise ConfigError(
            f"{where} unknown precision `{values['precision']}`; accepted: {', '.join(PRECISIONS)}"
        )
    if values["runtime"] is not None and values["runtime"] not in RUNTIMES:
        raise ConfigError(
            f"{where} unknown runtime `{values['runtime']}`; accepted: {', '.join(RUNTIMES)}"
        )
    # Field-level checks only: flags may still complete the table, so the
    # provider-level ``check()`` runs on the resolved result (producer) or
    # before a live embedding (app).
    return EmbedderConfig(
        **{k: v for k, v in values.items() if v is not None},
        dimensions=positive_int(table, "dimensions", where),
    )


def _broken(config: ProducerConfig, message: str, tables: tuple[str, ...]) -> ProducerConfig:
    """A file none of whose tables can be read: each owned table refused, reported once."""
    config.errors = dict.fromkeys(tables, message)
    config.file_error = message
    return config


def load_producer_config(
    root: str | Path,
    readers: Mapping[str, TableReader] | None = None,
    make: Callable[..., ProducerConfig] = ProducerConfig,
) -> ProducerConfig:
    """Read ``ROOT/hql.toml``; refusals land in ``ProducerConfig.errors`` keyed by table.

    ``readers`` check the caller's own top-level tables (``hqltui.core.config``):
    each result is set as the attribute of that name on the ``ProducerConfig`` that
    ``make`` builds, each refusal lands in ``errors`` like the producer's own."""
    root = Path(root)
    file = root / CONFIG_NAME
    readers = readers or {}
    tables = (*TABLES, *readers)
    config = make(root=root, file=file)
    try:
        data = read_toml(file)
    except FileNotFoundError:
        return config
    except TomlFileError as exc:
        config.exists = exc.read
        config.file_fix = exc.fix
        return _broken(config, exc.message, tables)
    config.exists = True

    semantics = data.get("semantics")
    if semantics is not None:
        try:
            config.index = _semantics(root, semantics, file)
            config.passages = _passages(semantics, file)
            config.auto_build = _auto_build(semantics, file)
        except ConfigError as exc:
            config.errors["semantics"] = str(exc)
        if isinstance(semantics, dict) and "embedder" in semantics:
            try:
                config.embedder = _embedder(semantics["embedder"], file)
            except ConfigError as exc:
                config.errors["semantics.embedder"] = str(exc)
    for name, read in readers.items():
        if name in data:
            try:
                setattr(config, name, read(data[name], file))
            except ConfigError as exc:
                config.errors[name] = str(exc)
    return config
