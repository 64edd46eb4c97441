"""Writing an index: a fresh file beside the target, checked row by row, renamed over it.

A file is always written from scratch into a temporary file beside the target
(``.<name>.tmp-<pid>``), flushed to disk and renamed over the target, so a
reader sees either the previous index or the new one. Rows go in a fixed order
(cards by name, queries by text) with fixed page settings, so the same inputs
give the same bytes with the same SQLite library.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from producer.crash_points import pause_point
from producer.index_checks import is_unit, model_problems, not_unit_problem, width_problem
from producer.index_format import (
    CHUNK_SQL,
    PAGE_SIZE,
    SCHEMA_SQL,
    CardRow,
    ChunkRow,
    IndexContents,
    MetaRow,
    ModelRow,
    QueryRow,
    StoreError,
    temp_path_for,
    temp_prefix,
)
from producer.passages import Recipe


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
    problems = model_problems(model.dimensions, model.metric, model.normalized)
    if problems:
        raise StoreError(problems[0].message)


def check_row(
    name: str, blob: bytes, dimensions: int, *, query: bool = False, passage: int | None = None
) -> None:
    """Refuse a vector of the wrong width or not of unit length (``StoreError``): a build
    writes no row the reader would refuse or leave out."""
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
                    (
                        r.window,
                        r.overlap,
                        int(r.title_prefix),
                        r.max_per_card,
                        r.breaks,
                        r.version,
                        r.digest,
                    ),
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
