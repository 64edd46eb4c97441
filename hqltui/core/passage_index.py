"""Passages of the semantic index: read once, then each card scored by its vector and
its best passage (``hqltui.core.passage_scores``).

An index built with passages (``producer.passages``) has a ``chunk`` table: each
card's passages with their character offsets in the card's text, and a
``chunk_recipe`` row. ``read_passages`` loads them, grouped by card in the
vault's order, held in memory as two planes of int8 codes, each with one float32
scale per row (half of float32's memory; see ``two_planes``), and the card vectors
beside them the same way. The pass over every row reads the first plane only; the
second is read for the few cards that plane cannot place. The file stays open: the
stored float32 vectors of the passages that can still decide a ranking are read back
from it at query time (``Float32Rows``). Within the cut the ranking is the one the
stored float32 vectors give, bit for bit (``best_passage_scores``): each int8 pass
only chooses, with a proven error bound, which cards the next must score.

The rules for stale, absent and orphan rows are the cards' (``index_reader``):
a stale card's passages are stale with it (ranked, warned once per card);
a card with a vector and no passages is scored by its card vector alone (counted
in one warning); passages of no card in the vault are orphans (counted).
Passages whose vector is not finite and unit length are left out, by name.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from hqltui.core.int8_codes import LOAD_BATCH, Codes, held_codes, two_planes

# the loading body below keeps its name for the pool until the one index reader replaces it
from hqltui.core.threads import pool as _pool
from producer.index_checks import (
    offsets_problem,
    ordinal_problem,
    recipe_problem,
    unit_rows,
    width_problem,
)
from producer.index_format import unpack as unpack_vectors
from producer.index_reader import chunk_count, chunk_rows, has_chunks, read_recipe
from producer.passages import Recipe

# How the semantic arm makes a card's score from its passages (``passage_scores``), as
# every retrieval with passages says it.
CARD_SCORE = "0.2 × the card vector + 0.8 × the best of the card vector and its passages"


class Float32Rows:
    """The index's passage vectors as stored (float32), read by rowid from the file
    this snapshot was loaded from. The connection is the one the passages were
    read through, so a rebuild that renames a new file into place is not seen."""

    def __init__(self, conn: sqlite3.Connection, dims: int) -> None:
        self._conn = conn
        self._dims = dims
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, conn.close)

    def read(self, rowids: np.ndarray) -> np.ndarray:
        """(len(rowids), dims) float32, in the order of ``rowids``."""
        ids = [int(r) for r in rowids]
        out = np.empty((len(ids), self._dims), dtype=np.float32)
        if not ids:
            return out
        where = {r: i for i, r in enumerate(ids)}
        found: list[int] = []
        blobs: list[bytes] = []
        ordered = sorted(where)  # the table's own order: fewer pages visited
        with self._lock:
            for start in range(0, len(ordered), 900):  # under SQLite's bound-parameter limit
                part = ordered[start : start + 900]
                marks = ",".join("?" * len(part))
                for rowid, blob in self._conn.execute(
                    f"SELECT rowid, embedding FROM chunk WHERE rowid IN ({marks})", part
                ):
                    found.append(where[rowid])
                    blobs.append(blob)
        if blobs:
            out[found] = unpack_vectors(b"".join(blobs)).reshape(len(blobs), self._dims)
        return out

    def close(self) -> None:
        self._finalizer()


@dataclass(frozen=True, eq=False)
class PassageIndex:
    recipe: Recipe
    digest: str
    vectors: Codes  # the passages as int8, grouped by card in vault order
    cards: Codes  # the card vectors as int8, in vault order (zero rows where absent)
    card: np.ndarray  # int64: the vault position of each passage's card
    ordinal: np.ndarray  # int64
    start: np.ndarray  # int64: character offsets into the card's text
    end: np.ndarray
    rowid: np.ndarray  # int64: the row in the file, where its float32 vector is read
    valid: np.ndarray  # bool: finite and unit length (others are left out)
    bounds: np.ndarray  # int64 (cards + 1): card i's passages are bounds[i]:bounds[i+1]
    source: Float32Rows  # where the stored float32 rows are read at the cut
    uncovered_names: tuple[str, ...] = ()  # cards with a vector and no passage
    orphans: tuple[str, ...] = ()  # names of passages' cards not in the vault
    invalid: tuple[tuple[str, int], ...] = ()  # (card, ordinal) left out
    per_card_max: int = 0
    left_out: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def count(self) -> int:
        return int(self.vectors.codes.shape[0])

    @property
    def held(self) -> str:
        """How the vectors are held in memory (the first pass's precision)."""
        return "int8"

    def card_errors(self) -> np.ndarray:
        """Per card, the largest first-plane error norm of its vector and its passages
        (float64): the first pass's bound for that card is made of it (worked out once per
        index). A card's score moves by at most the most one of its rows moves."""
        made = self.__dict__.get("_card_errors")
        if made is None:
            made = self.cards.row_errors().copy()
            rows = self.vectors.row_errors()
            has = np.flatnonzero(self.bounds[1:] > self.bounds[:-1])
            if has.size:
                top = np.maximum.reduceat(rows, self.bounds[:-1][has])
                made[has] = np.maximum(made[has], top)
            object.__setattr__(self, "_card_errors", made)
        return made

    def retrieval(self) -> dict[str, object]:
        """What the retrieval says of the passages that scored: the recipe and its digest
        (worked out once: it is the same for every query)."""
        said = self.__dict__.get("_said")
        if said is None:
            said = {**self.recipe.to_json(), "digest": self.digest, "count": self.count,
                    "card_score": CARD_SCORE}
            object.__setattr__(self, "_said", said)
        return dict(said)


@dataclass
class _Columns:
    card: list[np.ndarray] = field(default_factory=list)
    ordinal: list[np.ndarray] = field(default_factory=list)
    start: list[np.ndarray] = field(default_factory=list)
    end: list[np.ndarray] = field(default_factory=list)
    rowid: list[np.ndarray] = field(default_factory=list)
    valid: list[np.ndarray] = field(default_factory=list)


def read_passages(
    conn: sqlite3.Connection,
    dims: int,
    position: dict[str, int],
    present: np.ndarray,
    names: list[str],
    lengths: np.ndarray | None = None,
    matrix: np.ndarray | None = None,
) -> PassageIndex | str | None:
    """The passages of an open index: ``None`` without a chunk table, a refusal's
    message when they cannot be used, else a ``PassageIndex`` that owns ``conn``.

    ``position`` maps a vault card's name to its row; ``present`` says which cards
    have a usable card vector (passages of other cards are not scored); ``lengths``
    each card's text length, -1 where the text indexed is not at hand (a stale card):
    a passage's offsets must lie inside it (``producer.index_checks``), else the
    passages are refused. ``matrix`` holds the card vectors (vault order; zero rows
    where absent), held beside the passages as int8 for the first pass."""
    if not has_chunks(conn):
        return None
    import numkong  # noqa: F401  (the first pass's kernel: loaded with the passages, not
    # at the first query, and never for an index without them)

    stored = read_recipe(conn)
    problem = recipe_problem(stored.known, stored.rows)
    if problem:
        return problem.message
    assert stored.recipe is not None
    total = chunk_count(conn)
    vectors = np.empty((total, dims), dtype=np.int8)
    scale = np.empty(total, dtype=np.float32)
    fine = np.empty((total, dims), dtype=np.int8)
    fine_scale = np.empty(total, dtype=np.float32)
    errors = np.empty(total, dtype=np.float64)  # each row's first-plane error norm
    widest = [0.0, 0.0, 0.0, 0.0]  # max error, length, fine error, fine length
    pending: list[tuple[slice, Future[tuple[np.ndarray, ...]]]] = []

    def settle() -> None:
        part, job = pending.pop()
        c, sc, e, n, c2, sc2, e2, n2 = job.result()
        vectors[part], scale[part], fine[part], fine_scale[part] = c, sc, c2, sc2
        errors[part] = e
        for i, values in enumerate((e, n, e2, n2)):
            widest[i] = max(widest[i], float(values.max()))

    cols = _Columns()
    kept = 0
    orphans: set[str] = set()
    invalid: list[tuple[str, int]] = []
    cursor = chunk_rows(conn)
    while rows := cursor.fetchmany(LOAD_BATCH):
        batch = []
        for rowid, card, ordinal, a, b, blob in rows:
            wrong = width_problem(str(card), blob, dims, passage=ordinal)
            if wrong:
                return wrong.message
            at = position.get(card)
            if not (type(ordinal) is int and type(a) is int and type(b) is int  # noqa: E721
                    and ordinal >= 0 and 0 <= a < b):
                length = None if at is None or lengths is None or lengths[at] < 0 else lengths[at]
                found = ordinal_problem(str(card), ordinal) or offsets_problem(
                    str(card), ordinal, a, b, None if length is None else int(length))
                if found:
                    return found.message
            if at is None or not present[at]:
                orphans.add(str(card))
                continue
            batch.append((at, ordinal, a, b, rowid, bytes(blob)))
        if not batch:
            continue
        f32 = unpack_vectors(b"".join(r[5] for r in batch)).reshape(len(batch), dims)
        good = unit_rows(f32)
        f32[~good] = 0.0  # left out; zeros keep NaN and inf out of every product
        if pending:
            settle()
        # quantised in the pool while this thread reads the next batch (one batch ahead:
        # the scratch stays bounded)
        pending.append((slice(kept, kept + len(batch)), _pool().submit(two_planes, f32)))
        del f32
        kept += len(batch)
        cols.card.append(np.fromiter((r[0] for r in batch), np.int64, len(batch)))
        cols.ordinal.append(np.fromiter((r[1] for r in batch), np.int64, len(batch)))
        cols.start.append(np.fromiter((r[2] for r in batch), np.int64, len(batch)))
        cols.end.append(np.fromiter((r[3] for r in batch), np.int64, len(batch)))
        cols.rowid.append(np.fromiter((r[4] for r in batch), np.int64, len(batch)))
        cols.valid.append(good)
        invalid += [(names[r[0]], int(r[1])) for r, ok in zip(batch, good.tolist(), strict=True)
                    if not ok]
    if pending:
        settle()
    error, length, fine_error, fine_length = widest
    if kept < total:
        vectors, scale, fine, fine_scale = (vectors[:kept], scale[:kept], fine[:kept],
                                            fine_scale[:kept])
        errors = errors[:kept]

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    card = joined(cols.card, np.int64)
    ordinal = joined(cols.ordinal, np.int64)
    order = None
    if card.size and np.any((np.diff(card) < 0) | ((np.diff(card) == 0) & (np.diff(ordinal) <= 0))):
        order = np.lexsort((ordinal, card))  # names sorted otherwise than SQLite's order
    arrays = [card, ordinal, joined(cols.start, np.int64), joined(cols.end, np.int64),
              joined(cols.rowid, np.int64), joined(cols.valid, bool)]
    if order is not None:
        arrays = [a[order] for a in arrays]
        vectors, scale = vectors[order], scale[order]
        fine, fine_scale = fine[order], fine_scale[order]
        errors = errors[order]
    card, ordinal, start, end, rowid, valid = arrays
    if lengths is not None and card.size:
        limit = lengths[card]
        outside = np.flatnonzero((limit >= 0) & (end > limit))
        if outside.size:
            j = int(outside[0])
            found = offsets_problem(names[card[j]], int(ordinal[j]), int(start[j]), int(end[j]),
                                    int(limit[j]))
            assert found is not None
            return found.message
    counts = np.bincount(card, minlength=len(names)) if card.size else np.zeros(len(names), int)
    bounds = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    uncovered = tuple(names[i] for i in np.flatnonzero(present & (counts == 0)).tolist())
    if matrix is None:
        matrix = np.zeros((len(names), dims), dtype=np.float32)
    return PassageIndex(
        recipe=stored.recipe,
        digest=stored.digest,
        vectors=Codes(vectors, scale, error, length, fine, fine_scale, fine_error, fine_length,
                      errors),
        cards=held_codes(matrix, planes=2),
        card=card,
        ordinal=ordinal,
        start=start,
        end=end,
        rowid=rowid,
        valid=valid,
        bounds=bounds,
        source=Float32Rows(conn, dims),
        uncovered_names=uncovered,
        orphans=tuple(sorted(orphans)),
        invalid=tuple(sorted(invalid)),
        per_card_max=int(counts.max()) if counts.size else 0,
        left_out=np.flatnonzero(~valid),
    )

