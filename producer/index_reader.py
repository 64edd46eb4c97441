"""Reading an index: the one reader of its tables, for the producer and the app.

``read_index`` loads every row (a build's previous index, ``verify``,
``inspect``); the app's reader (``hqltui.core.index_reader``) and its passage
loader (``hqltui.core.passage_index``) read the same tables through the row
functions here (``meta_row``, ``model_rows``, ``card_rows``, ``query_rows``,
``chunk_cursor``), so each table is read by one piece of code. Checks and
their wording are ``producer.index_checks``'.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from producer.index_checks import (
    NO_METADATA,
    NO_MODEL,
    NOT_A_FILE,
    model_count_problem,
    schema_problem,
    width_problem,
)
from producer.index_format import (
    LOCK_WAIT_SECONDS,
    CardRow,
    ChunkRow,
    IndexContents,
    MetaRow,
    ModelRow,
    QueryRow,
    StoredRecipe,
    StoreError,
    UnknownSchema,
)
from producer.index_holders import busy_error, is_busy
from producer.passages import Recipe


def connect_readonly(path: str | os.PathLike[str], *, shared: bool = False) -> sqlite3.Connection:
    """Open an index read-only (never creates a file, never writes). A lock held by
    another process is waited for up to ``LOCK_WAIT_SECONDS``, then ``IndexBusy``.
    ``shared``: usable from other threads (the caller serialises its use)."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"{p}: {NOT_A_FILE}")
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
        return sorted({t for (t,) in conn.execute("SELECT text FROM query") if isinstance(t, str)})
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def read_schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT schema_version FROM index_meta").fetchone()
    if row is None:
        raise sqlite3.OperationalError("index_meta is empty")
    return row[0]


def _blob(
    path: str | os.PathLike[str], name: str, value: object, query: bool, passage: int | None = None
) -> bytes:
    if not isinstance(value, bytes):
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


# ----------------------------------------------------------------- the tables, raw
# One statement per table, for every reader: values come as stored (any type a
# tampered file holds); the callers check them with ``index_checks``.


def meta_row(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
    """``index_meta``'s row: (schema_version, vault, built_at, tool_version); None if empty."""
    return conn.execute(
        "SELECT schema_version, vault, built_at, tool_version FROM index_meta"
    ).fetchone()


def model_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every ``model`` row: (id, revision, dimensions, metric, normalized)."""
    return conn.execute("SELECT id, revision, dimensions, metric, normalized FROM model").fetchall()


def card_rows(conn: sqlite3.Connection, *, by_name: bool = True) -> sqlite3.Cursor:
    """(name, path, content_hash, embedding) per ``card`` row; ``by_name=False`` takes
    the table's own order (no sort: the app's load, which places rows by name itself)."""
    order = " ORDER BY name" if by_name else ""
    return conn.execute(f"SELECT name, path, content_hash, embedding FROM card{order}")


def query_rows(conn: sqlite3.Connection, *, by_text: bool = True) -> sqlite3.Cursor:
    """(text, embedding) per ``query`` row."""
    order = " ORDER BY text" if by_text else ""
    return conn.execute(f"SELECT text, embedding FROM query{order}")


def chunk_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM chunk").fetchone()[0]


def chunk_rows(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """(rowid, card, ordinal, start_char, end_char, embedding) per ``chunk`` row, by card
    then ordinal (the rowid is where a passage's float32 row is read again later)."""
    return conn.execute(
        "SELECT rowid, card, ordinal, start_char, end_char, embedding FROM chunk "
        "ORDER BY card, ordinal"
    )


def read_index(path: str | os.PathLike[str]) -> IndexContents:
    """Every row of an index, raw: no checks on vectors (``verify`` makes those, with
    ``index_checks``; the schema and the model count are checked here, by it too).

    Raises ``StoreError`` when the file is not a readable schema-1 index.
    Cards come ordered by name, queries by text.
    """
    conn = connect_readonly(path)
    try:
        with _reading(path, NO_METADATA):
            mrow = meta_row(conn)
        if mrow is None:
            raise StoreError(f"{path}: {NO_METADATA}: index_meta is empty")
        problem = schema_problem(mrow[0])
        if problem:
            raise UnknownSchema(f"{path}: {problem.message}", mrow[0])
        meta = MetaRow(
            schema_version=mrow[0], vault=mrow[1], built_at=mrow[2], tool_version=mrow[3]
        )
        with _reading(path, NO_MODEL):
            rows = model_rows(conn)
        problem = model_count_problem(len(rows))
        if problem:
            raise StoreError(f"{path}: {problem.message}")
        model = ModelRow(*rows[0])
        with _reading(path, "the index cannot be walked"):
            cards = [CardRow(n, p, h, _blob(path, n, e, False)) for n, p, h, e in card_rows(conn)]
            queries = [QueryRow(t, _blob(path, t, e, True)) for t, e in query_rows(conn)]
            recipe, chunks = read_chunks(conn, path) if has_chunks(conn) else (None, [])
            doubled = doubled_passages(conn) if recipe is not None else []
        return IndexContents(
            model=model,
            meta=meta,
            cards=cards,
            queries=queries,
            recipe=recipe,
            chunks=chunks,
            doubled_chunks=doubled,
        )
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
        "ORDER BY card, ordinal LIMIT ?",
        (limit,),
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
            for _, c, o, a, b, e in chunk_rows(conn)
        ]
    return recipe, chunks
