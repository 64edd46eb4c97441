"""The embedding index, schema 1: tables, vector packing, atomic writing, build lock.

This module is the one home of the on-disk format. It imports only the standard
library and numpy, so the app's reader can use ``pack``/``unpack`` and the
constants without pulling in torch.

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

import fcntl
import math
import os
import shlex
import sqlite3
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
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

# Environment hook used by the crash tests: ``<point>:<marker path>`` makes a
# build write the marker file and sleep at that point, so a test can kill it
# there. Points: ``embedding``, ``writing``, ``rename``.
PAUSE_ENV = "HQL_SEMANTICS_TEST_PAUSE"


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


class LockHeld(StoreError):
    """Another build holds the lock of this index."""

    def __init__(self, index: Path, holder: str) -> None:
        self.index = index
        self.holder = holder
        who = holder or "a process that has not yet said who it is"
        super().__init__(f"another build of {index} is running ({who}); wait for it to finish")


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


def is_unit(blob: bytes) -> bool:
    """Finite and of unit length, by the one rule (``index_checks.unit_rows``)."""
    from producer.index_checks import unit_blobs

    return len(blob) % 4 == 0 and bool(unit_blobs([blob], len(blob) // 4)[0])


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


# ----------------------------------------------------------------- reading


def is_busy(exc: sqlite3.Error) -> bool:
    """Did SQLite refuse because another connection holds a lock?"""
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc)


def lock_holders(path: str | os.PathLike[str]) -> list[str]:
    """``pid N (command)`` for every other process with ``path`` open, where the OS
    lets us see it (Linux ``/proc``, this user's processes); else an empty list."""
    try:
        target = os.path.realpath(path)
        pids = [d for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != target:
                    continue
            except OSError:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
            except OSError:
                argv = []
            command = shlex.join(argv)[:120] if argv else "command unknown"
            found.append(f"pid {pid} ({command})")
            break
    return found


def busy_error(path: str | os.PathLike[str]) -> IndexBusy:
    """The refusal for an index another process keeps locked, naming it when we can."""
    holders = lock_holders(path)
    who = (
        "held open by " + ", ".join(holders)
        if holders
        else "the process holding it cannot be seen from here"
    )
    return IndexBusy(
        f"{path}: is locked by another process (database is locked; waited "
        f"{LOCK_WAIT_SECONDS:g} s; {who})",
        "try again once that process has finished or closed the index",
    )


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


def connect_readonly(path: str | os.PathLike[str], *, shared: bool = False) -> sqlite3.Connection:
    """Open an index read-only (never creates a file, never writes). A lock held by
    another process is waited for up to ``LOCK_WAIT_SECONDS``, then ``IndexBusy``.
    ``shared``: usable from other threads (the caller serialises its use)."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"{p}: is a directory, not an index file")
    if not p.is_file():
        if p.exists():
            raise StoreError(f"{p}: is not a regular file (a FIFO, socket or device)")
        raise StoreError(
            f"{p}: no such index file", "build it with `hql-semantics build`, or name another"
        )
    uri = p.resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=LOCK_WAIT_SECONDS, check_same_thread=not shared
        )
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        if is_busy(exc):
            raise busy_error(p) from None
        raise StoreError(f"{p}: cannot be read as an index ({exc})") from None
    return conn


def readable_query_texts(path: str | os.PathLike[str]) -> list[str]:
    """The stored query texts that can still be read from a damaged index (may be none)."""
    try:
        conn = connect_readonly(path)
    except StoreError:
        return []
    try:
        return sorted(
            {t for (t,) in conn.execute("SELECT text FROM query") if isinstance(t, str)}
        )
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def read_schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT schema_version FROM index_meta").fetchone()
    if row is None:
        raise sqlite3.OperationalError("index_meta is empty")
    return row[0]


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


def _blob(path: str | os.PathLike[str], name: str, value: object, query: bool,
          passage: int | None = None) -> bytes:
    if not isinstance(value, bytes):
        from producer.index_checks import width_problem

        problem = width_problem(name, value, 0, query=query, passage=passage)
        assert problem is not None
        raise StoreError(f"{path}: {problem.message}")
    return value


@contextmanager
def _reading(path: str | os.PathLike[str], failure: str) -> Iterator[None]:
    """An SQLite error while reading: the lock holder when busy, else ``failure: error``."""
    try:
        yield
    except sqlite3.Error as exc:
        if is_busy(exc):
            raise busy_error(path) from None
        raise StoreError(f"{path}: {failure}: {exc}") from None


def read_index(path: str | os.PathLike[str]) -> IndexContents:
    """Every row of an index, raw: no checks on vectors (``verify`` makes those, with
    ``index_checks``; the schema and the model count are checked here, by it too).

    Raises ``StoreError`` when the file is not a readable schema-1 index.
    Cards come ordered by name, queries by text.
    """
    conn = connect_readonly(path)
    try:
        with _reading(path, "the index has no readable metadata"):
            mrow = conn.execute(
                "SELECT schema_version, vault, built_at, tool_version FROM index_meta"
            ).fetchone()
        if mrow is None:
            raise StoreError(f"{path}: the index has no readable metadata: index_meta is empty")
        from producer.index_checks import model_count_problem, schema_problem

        problem = schema_problem(mrow[0])
        if problem:
            raise UnknownSchema(f"{path}: {problem.message}", mrow[0])
        meta = MetaRow(
            schema_version=mrow[0], vault=mrow[1], built_at=mrow[2], tool_version=mrow[3]
        )
        with _reading(path, "the index names no model"):
            rows = conn.execute(
                "SELECT id, revision, dimensions, metric, normalized FROM model"
            ).fetchall()
        problem = model_count_problem(len(rows))
        if problem:
            raise StoreError(f"{path}: {problem.message}")
        model = ModelRow(*rows[0])
        with _reading(path, "the index cannot be walked"):
            cards = [
                CardRow(n, p, h, _blob(path, n, e, False))
                for n, p, h, e in conn.execute(
                    "SELECT name, path, content_hash, embedding FROM card ORDER BY name"
                )
            ]
            queries = [
                QueryRow(t, _blob(path, t, e, True))
                for t, e in conn.execute("SELECT text, embedding FROM query ORDER BY text")
            ]
            recipe, chunks = read_chunks(conn, path) if has_chunks(conn) else (None, [])
            doubled = doubled_passages(conn) if recipe is not None else []
        return IndexContents(model=model, meta=meta, cards=cards, queries=queries,
                             recipe=recipe, chunks=chunks, doubled_chunks=doubled)
    finally:
        conn.close()


def has_chunks(conn: sqlite3.Connection) -> bool:
    """Does this index hold passages (a ``chunk`` table)?"""
    row = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chunk'"
    ).fetchone()
    return bool(row and row[0])


def doubled_passages(conn: sqlite3.Connection, limit: int = -1) -> list[tuple[object, object, int]]:
    """(card, ordinal, rows) of each passage stored in more than one row, by card and
    ordinal. The schema's primary key makes that impossible, so only a chunk table
    rebuilt without a unique key on (card, ordinal) is scanned."""
    for _, name, unique, *_ in conn.execute("PRAGMA index_list(chunk)").fetchall():
        columns = [r[0] for r in conn.execute("SELECT name FROM pragma_index_info(?)", (name,))]
        if unique and columns == ["card", "ordinal"]:
            return []
    return conn.execute(
        "SELECT card, ordinal, count(*) FROM chunk GROUP BY card, ordinal HAVING count(*) > 1 "
        "ORDER BY card, ordinal LIMIT ?", (limit,)
    ).fetchall()


def read_recipe(conn: sqlite3.Connection) -> StoredRecipe:
    """The stored passage recipe (``known`` says whether this tool can trust it)."""
    try:
        rows = conn.execute(
            "SELECT window, overlap, title_prefix, max_per_card, breaks, version, digest "
            "FROM chunk_recipe"
        ).fetchall()
    except sqlite3.Error:
        return StoredRecipe(None, "", 0)
    if len(rows) != 1:
        return StoredRecipe(None, "", len(rows))
    window, overlap, title, cap, breaks, version, digest = rows[0]
    ints = (window, overlap, title, cap, version)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints) or not isinstance(
        breaks, str
    ):
        return StoredRecipe(None, str(digest))
    recipe = Recipe(window, overlap, bool(title), cap, breaks, version)
    return StoredRecipe(recipe, str(digest))


def read_chunks(
    conn: sqlite3.Connection, path: str | os.PathLike[str]
) -> tuple[StoredRecipe, list[ChunkRow]]:
    """The recipe and every passage row, raw, ordered by card then ordinal."""
    recipe = read_recipe(conn)
    with _reading(path, "the passages cannot be walked"):
        chunks = [
            ChunkRow(c, o, a, b, _blob(path, c, e, False, passage=o))
            for c, o, a, b, e in conn.execute(
                "SELECT card, ordinal, start_char, end_char, embedding FROM chunk "
                "ORDER BY card, ordinal"
            )
        ]
    return recipe, chunks


# ----------------------------------------------------------------- writing


def temp_prefix(target: Path) -> str:
    return f".{target.name}.tmp-"


def temp_path_for(target: Path, pid: int | None = None) -> Path:
    return target.with_name(f"{temp_prefix(target)}{os.getpid() if pid is None else pid}")


def lock_path_for(target: Path) -> Path:
    return target.with_name(target.name + ".lock")


def pause_point(point: str) -> None:
    """Crash-test hook: see ``PAUSE_ENV``. Does nothing unless the variable names ``point``."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    name, _, marker = spec.partition(":")
    if name != point:
        return
    if marker:
        Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    while True:  # killed here by the test
        time.sleep(1)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_model(model: ModelRow) -> None:
    """Refuse a model row the reader would refuse (``StoreError``, ``index_checks`` wording)."""
    from producer.index_checks import model_problems

    problems = model_problems(model.dimensions, model.metric, model.normalized)
    if problems:
        raise StoreError(problems[0].message)


def check_row(
    name: str, blob: bytes, dimensions: int, *, query: bool = False, passage: int | None = None
) -> None:
    """Refuse a vector of the wrong width or not of unit length (``StoreError``): a build
    writes no row the reader would refuse or leave out."""
    from producer.index_checks import not_unit_problem, width_problem

    wrong = width_problem(name, blob, dimensions, query=query, passage=passage)
    if wrong:
        raise StoreError(wrong.message)
    if not is_unit(blob):
        raise StoreError(not_unit_problem(name, query=query, passage=passage).message)


class IndexWriter:
    """A fresh index written row by row into a temporary file beside ``target``.

    A build streams its rows in (cards in name order, then queries in text
    order) as they are embedded, so no build holds every vector at once; the
    order is enforced, which keeps the bytes a function of the rows. ``commit``
    flushes the file to disk and renames it over ``target``; leaving the
    ``with`` block any other way removes the temporary file, and the previous
    index stays untouched. Every row is checked (width, unit length) as it is
    added.
    """

    def __init__(
        self,
        target: str | os.PathLike[str],
        model: ModelRow,
        meta: MetaRow,
        recipe: Recipe | None = None,
    ) -> None:
        self.target = Path(target)
        check_model(model)
        self.model, self.meta, self.recipe = model, meta, recipe
        self._last_chunk: tuple[str, int] | None = None
        self.tmp = temp_path_for(self.target)
        self._conn: sqlite3.Connection | None = None
        self._last_card: str | None = None
        self._last_query: str | None = None
        self._queries_started = False

    def __enter__(self) -> IndexWriter:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        _remove_quietly(self.tmp)
        try:
            conn = sqlite3.connect(self.tmp, isolation_level=None)
            self._conn = conn
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            conn.execute("PRAGMA auto_vacuum = NONE")
            conn.execute("PRAGMA encoding = 'UTF-8'")
            conn.execute("PRAGMA journal_mode = DELETE")
            # Durability comes from the fsync before the rename, not from SQLite.
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("BEGIN")
            schema = SCHEMA_SQL + (CHUNK_SQL if self.recipe is not None else "")
            for stmt in schema.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            if self.recipe is not None:
                r = self.recipe
                conn.execute(
                    "INSERT INTO chunk_recipe (window, overlap, title_prefix, max_per_card, "
                    "breaks, version, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (r.window, r.overlap, int(r.title_prefix), r.max_per_card, r.breaks,
                     r.version, r.digest),
                )
            model, meta = self.model, self.meta
            conn.execute(
                "INSERT INTO model (id, revision, dimensions, metric, normalized) "
                "VALUES (?, ?, ?, ?, ?)",
                (model.id, model.revision, model.dimensions, model.metric, int(model.normalized)),
            )
            conn.execute(
                "INSERT INTO index_meta (schema_version, vault, built_at, tool_version) "
                "VALUES (?, ?, ?, ?)",
                (meta.schema_version, meta.vault, meta.built_at, meta.tool_version),
            )
        except BaseException as exc:
            self._abort()
            self._raise_store(exc)
            raise
        return self

    def add_cards(self, cards: Iterable[CardRow]) -> None:
        """Append card rows; names must come in ascending order, before any query."""
        rows = []
        for c in cards:
            if self._queries_started or (self._last_card is not None and c.name <= self._last_card):
                raise ValueError(f"card `{c.name}` is out of order")
            check_row(c.name, c.embedding, self.model.dimensions)
            self._last_card = c.name
            rows.append((c.name, c.path, c.content_hash, c.embedding))
        self._execute(
            "INSERT INTO card (name, path, content_hash, embedding) VALUES (?, ?, ?, ?)", rows
        )

    def add_chunks(self, chunks: Iterable[ChunkRow]) -> None:
        """Append passage rows, in (card, ordinal) order; only with a recipe."""
        if self.recipe is None:
            raise ValueError("passages need a recipe: this index is written without them")
        rows = []
        for c in chunks:
            key = (c.card, c.ordinal)
            if self._last_chunk is not None and key <= self._last_chunk:
                raise ValueError(f"passage {c.ordinal} of `{c.card}` is out of order")
            check_row(c.card, c.embedding, self.model.dimensions, passage=c.ordinal)
            self._last_chunk = key
            rows.append((c.card, c.ordinal, c.start, c.end, c.embedding))
        self._execute(
            "INSERT INTO chunk (card, ordinal, start_char, end_char, embedding) "
            "VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    def add_queries(self, queries: Iterable[QueryRow]) -> None:
        """Append query rows; texts must come in ascending order."""
        self._queries_started = True
        rows = []
        for q in queries:
            if self._last_query is not None and q.text <= self._last_query:
                raise ValueError(f"query {q.text!r} is out of order")
            check_row(q.text, q.embedding, self.model.dimensions, query=True)
            self._last_query = q.text
            rows.append((q.text, q.embedding))
        self._execute("INSERT INTO query (text, embedding) VALUES (?, ?)", rows)

    def _execute(self, sql: str, rows: list[tuple]) -> None:
        assert self._conn is not None, "IndexWriter used outside its with block"
        try:
            self._conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.target}: cannot be written: {exc}") from None

    def commit(self) -> None:
        """Make the new index the one at ``target`` (atomically)."""
        assert self._conn is not None, "IndexWriter used outside its with block"
        try:
            pause_point("writing")
            self._conn.execute("COMMIT")
            self._conn.close()
            self._conn = None
            fd = os.open(self.tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            pause_point("rename")
            os.replace(self.tmp, self.target)
            _fsync_dir(self.target.parent)
        except BaseException as exc:
            self._abort()
            self._raise_store(exc)
            raise

    def _raise_store(self, exc: BaseException) -> None:
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"{self.target}: cannot be written: {exc}") from None
        if isinstance(exc, OSError):
            raise StoreError(f"{self.target}: cannot be written: {exc.strerror or exc}") from None

    def _abort(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        _remove_quietly(self.tmp)

    def __exit__(self, *exc: object) -> None:
        self._abort()  # after commit the temporary file is gone already


def write_index(target: str | os.PathLike[str], contents: IndexContents) -> None:
    """Write ``contents`` as a fresh index and atomically put it at ``target``.

    Rows are validated first (width matches the model, every vector unit
    length), so a bad vector raises ``StoreError`` before anything is written.
    The previous file at ``target`` stays untouched until the final rename.
    """
    check_model(contents.model)
    d = contents.model.dimensions
    for c in contents.cards:
        check_row(c.name, c.embedding, d)
    for q in contents.queries:
        check_row(q.text, q.embedding, d, query=True)
    recipe = contents.recipe.recipe if contents.recipe is not None else None
    with IndexWriter(target, contents.model, contents.meta, recipe) as writer:
        writer.add_cards(sorted(contents.cards, key=lambda c: c.name))
        if recipe is not None:
            writer.add_chunks(sorted(contents.chunks, key=lambda c: (c.card, c.ordinal)))
        writer.add_queries(sorted(contents.queries, key=lambda q: q.text))
        writer.commit()


def _remove_quietly(tmp: Path) -> None:
    for p in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass


def leftovers(target: str | os.PathLike[str]) -> list[Path]:
    """Temporary files (and their SQLite journals) of builds of ``target``."""
    target = Path(target)
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    prefix = temp_prefix(target)
    return sorted(target.parent / n for n in names if n.startswith(prefix))


def remove_leftovers(target: str | os.PathLike[str]) -> list[Path]:
    """Delete what killed builds left beside ``target``. Call only while holding the lock."""
    removed = []
    for p in leftovers(target):
        try:
            p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


# ----------------------------------------------------------------- locking


class BuildLock:
    """An exclusive, non-blocking ``flock`` on ``<index>.lock``.

    The OS drops the lock when the holding process dies, however it dies. The
    file holds the holder's pid and command line so a refused build can say who
    is building. ``acquire`` raises ``LockHeld`` at once rather than waiting.
    On acquiring, what a killed build left behind is removed.
    """

    def __init__(self, target: str | os.PathLike[str], command: str | None = None) -> None:
        self.target = Path(target)
        self.path = lock_path_for(self.target)
        self.command = (
            command if command is not None else shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
        )
        self._fd: int | None = None

    def acquire(self) -> BuildLock:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: cannot create the build lock: {exc.strerror or exc}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_holder(fd)
                os.close(fd)
                raise LockHeld(self.target, holder) from None
            # The previous holder may have unlinked the file between our open and
            # our flock; then we hold a lock on a file nobody else will see.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()}: {self.command}\n".encode())
        except OSError as exc:  # e.g. the disk is full: say which file could not be written
            os.close(fd)
            raise StoreError(
                f"{self.path}: cannot write the build lock ({exc.strerror or exc})",
                "free some space on that disk, then build again",
            ) from None
        self._fd = fd
        remove_leftovers(self.target)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> BuildLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 4096)
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()
