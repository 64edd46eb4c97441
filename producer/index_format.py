"""The embedding index's format, schema 1: tables, rows, vector packing, errors.

This module is the one home of the on-disk format. It imports only the standard
library and numpy, so the app's reader can use ``pack``/``unpack`` and the
constants without pulling in torch. Reading is ``producer.index_reader``,
writing ``producer.index_writer``, the build lock ``producer.index_lock``.

Format (SQLite, four tables; two more only in an index built with passages):

* ``model``      one row: id, revision, dimensions, metric, normalized
* ``index_meta`` one row: schema_version, vault, built_at, tool_version
* ``card``       name, vault-relative POSIX path, content_hash, embedding
* ``query``      text, embedding
* ``chunk_recipe`` (passages only) one row: how cards were cut
  (``producer.passages.Recipe``: window, overlap, title_prefix, max_per_card,
  breaks, version) and its digest
* ``chunk``      (passages only) card, ordinal, start_char, end_char, embedding:
  each card's passages, with character offsets into the card's text

Every embedding is ``dimensions`` little-endian float32 values. The first four
tables are HQL-0002's, unchanged, so an index with passages still reads as a
card-level index to a reader that knows only them.

A file is always written from scratch into a temporary file beside the target
(``.<name>.tmp-<pid>``), flushed to disk and renamed over the target, so a
reader sees either the previous index or the new one. Rows go in a fixed order
(cards by name, queries by text) with fixed page settings, so the same inputs
give the same bytes with the same SQLite library.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from producer.passages import Recipe

SCHEMA_VERSION = 1

TOOL_VERSION = "hql-semantics 0.1.0"

METRIC = "cosine"

MAX_DIMENSIONS = 8192

# |norm - 1| allowed for a stored vector to count as unit length.
UNIT_TOLERANCE = 1e-5

# Fixed page size: part of what makes the bytes of a build reproducible.
PAGE_SIZE = 4096


SCHEMA_SQL = """\
CREATE TABLE model (
    id          TEXT    PRIMARY KEY,
    revision    TEXT    NOT NULL,
    dimensions  INTEGER NOT NULL,
    metric      TEXT    NOT NULL,
    normalized  INTEGER NOT NULL
);
CREATE TABLE index_meta (
    schema_version INTEGER NOT NULL,
    vault          TEXT    NOT NULL,
    built_at       TEXT    NOT NULL,
    tool_version   TEXT    NOT NULL
);
CREATE TABLE card (
    name         TEXT PRIMARY KEY,
    path         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    embedding    BLOB NOT NULL
);
CREATE TABLE query (
    text      TEXT PRIMARY KEY,
    embedding BLOB NOT NULL
);
"""

CHUNK_SQL = """\
CREATE TABLE chunk_recipe (
    window       INTEGER NOT NULL,
    overlap      INTEGER NOT NULL,
    title_prefix INTEGER NOT NULL,
    max_per_card INTEGER NOT NULL,
    breaks       TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    digest       TEXT    NOT NULL
);
CREATE TABLE chunk (
    card       TEXT    NOT NULL,
    ordinal    INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char   INTEGER NOT NULL,
    embedding  BLOB    NOT NULL,
    PRIMARY KEY (card, ordinal)
);
"""

# How long a reader waits for another process's lock on the index before refusing.
LOCK_WAIT_SECONDS = 5.0

# The first bytes of every SQLite database file.
SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreError(Exception):
    """The index cannot be read or written; the message is meant for the user.

    ``fix`` (optional) is what the user can do about it, kept apart so ``--json``
    output can carry it as its own field."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


class IndexBusy(StoreError):
    """Another process holds the index locked (SQLite busy) past ``LOCK_WAIT_SECONDS``."""


class UnknownSchema(StoreError):
    """The index's ``schema_version`` is not the one this tool reads."""

    def __init__(self, message: str, version: object) -> None:
        super().__init__(message)
        self.version = version

    @property
    def newer(self) -> bool:
        """Written by a newer tool: rewriting it would downgrade the user's index."""
        return isinstance(self.version, int) and self.version > SCHEMA_VERSION


# ----------------------------------------------------------------- vectors


def pack(vector: Iterable[float] | np.ndarray) -> bytes:
    """Little-endian float32 bytes of a 1-D vector."""
    arr = np.asarray(vector, dtype="<f4")
    if arr.ndim != 1:
        raise ValueError(f"pack takes one vector, got shape {arr.shape}")
    return arr.tobytes()


def unpack(blob: bytes, dimensions: int | None = None) -> np.ndarray:
    """The float32 vector stored in ``blob``.

    With ``dimensions`` the blob must be exactly ``dimensions * 4`` bytes;
    without it, its length must be a multiple of 4. Raises ``ValueError``.
    """
    if dimensions is not None and len(blob) != dimensions * 4:
        raise ValueError(f"{len(blob)}-byte vector where {dimensions * 4} were declared")
    if len(blob) % 4:
        raise ValueError(f"{len(blob)}-byte vector is not a whole number of float32 values")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def vector_norm(blob: bytes) -> float:
    """The L2 norm of a packed vector, computed in float64."""
    v = np.frombuffer(blob, dtype="<f4").astype(np.float64)
    return float(math.sqrt(float(v @ v)))


def same_vault(recorded: str, root: str | os.PathLike[str]) -> bool:
    """Is an index recorded for ``recorded`` this vault? The same string, or the
    resolved vault directory's name equals the recorded string's last component
    (so a copy elsewhere, or the vault opened as ``.``, still matches)."""
    if recorded in (str(root), Path(root).as_posix()):
        return True
    last = [p for p in recorded.replace("\\", "/").split("/") if p]
    return bool(last) and last[-1] == Path(root).resolve().name


# ----------------------------------------------------------------- rows


@dataclass(frozen=True)
class ModelRow:
    id: str
    revision: str
    dimensions: int
    metric: str = METRIC
    normalized: int = 1


@dataclass(frozen=True)
class MetaRow:
    vault: str
    built_at: str
    schema_version: int = SCHEMA_VERSION
    tool_version: str = TOOL_VERSION


@dataclass(frozen=True)
class CardRow:
    name: str
    path: str
    content_hash: str
    embedding: bytes


@dataclass(frozen=True)
class QueryRow:
    text: str
    embedding: bytes


@dataclass(frozen=True)
class ChunkRow:
    card: str
    ordinal: int
    start: int  # character offsets into the card's text
    end: int
    embedding: bytes


@dataclass(frozen=True)
class StoredRecipe:
    """The ``chunk_recipe`` row as stored, and whether its digest is the recipe's own."""

    recipe: Recipe | None  # None: the row's fields do not make a recipe
    digest: str
    rows: int = 1

    @property
    def known(self) -> bool:
        return (
            self.rows == 1
            and self.recipe is not None
            and self.recipe.problem() is None
            and self.recipe.digest == self.digest
        )


@dataclass
class IndexContents:
    model: ModelRow
    meta: MetaRow
    cards: list[CardRow] = field(default_factory=list)
    queries: list[QueryRow] = field(default_factory=list)
    recipe: StoredRecipe | None = None  # None: no passages
    chunks: list[ChunkRow] = field(default_factory=list)  # by card, then ordinal
    # (card, ordinal, rows) of each passage in several rows (``doubled_passages``)
    doubled_chunks: list[tuple[object, object, int]] = field(default_factory=list)


# ----------------------------------------------------------------- files and values


def is_sqlite_file(path: str | os.PathLike[str]) -> bool | None:
    """True for an SQLite file, False for any other existing file (a FIFO or device
    included: never opened), None when absent."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(mode):
        return False
    with open(path, "rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    return not head or head == SQLITE_MAGIC


def aside_path(path: str | os.PathLike[str], now: datetime | None = None) -> Path:
    """Where an unreadable index is moved so a build can start afresh:
    ``<index>.unreadable-<UTC stamp>``."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    p = Path(path)
    return p.with_name(f"{p.name}.unreadable-{stamp}")


def move_aside(path: str | os.PathLike[str], aside: str | os.PathLike[str]) -> None:
    """Move an unreadable index to ``aside`` (``aside_path``), never over a file already
    there: nothing is deleted. ``OSError`` (``FileExistsError`` for a taken name)."""
    target = Path(aside)
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    Path(path).rename(target)


def sql_value(value: object) -> str:
    """A stored value as a user reads it: NULL, a number, quoted text; never a Python
    type or ``None``."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"a {len(value)}-byte blob"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def temp_prefix(target: Path) -> str:
    return f".{target.name}.tmp-"


def temp_path_for(target: Path, pid: int | None = None) -> Path:
    return target.with_name(f"{temp_prefix(target)}{os.getpid() if pid is None else pid}")


def lock_path_for(target: Path) -> Path:
    return target.with_name(target.name + ".lock")
