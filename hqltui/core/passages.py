"""Passages of the semantic index: read once, scored by best passage.

An index built with passages (``producer.passages``) has a ``chunk`` table: each
card's passages with their character offsets in the card's text, and a
``chunk_recipe`` row. ``read_passages`` loads them, grouped by card in the
vault's order, with the vectors held as float32, or as float16 past
``FLOAT32_BUDGET`` (half the memory). With float16 the file stays open: the
float32 vectors of the few passages that can decide a ranking are read back
from it at query time (``Float32Rows``). Either way, within the cut the
ranking is the one the stored float32 vectors give, bit for bit
(``best_passage_scores``).

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
from dataclasses import dataclass, field

import numpy as np

from hqltui.core.ranking import Passage, refine
from producer.index import has_chunks, read_recipe
from producer.index import unpack as unpack_vectors
from producer.index_checks import (
    offsets_problem,
    ordinal_problem,
    recipe_problem,
    unit_rows,
    width_problem,
)
from producer.passages import Recipe

# Rows fetched (and converted to float16) per step while loading: bounds the blobs
# held at once whatever the number of passages.
LOAD_BATCH = 8192
# Rows converted to float32 per step of the approximate pass.
SCORE_BLOCK = 32768
# Passages are held as float32 while that matrix stays within this many bytes
# (a man-page vault's ~100k passages: 154 MB), else as float16 (half the memory;
# numpy converts float16 to float32 without SIMD, ~7x the cost of the float32
# product per query, measured in benchmarks/bench_passages.py). Either way the
# ranking within the cut is the float32 one. ``HOLD`` forces one (tests, benchmarks).
FLOAT32_BUDGET = 768 * 2**20
HOLD: str | None = None  # None | "float32" | "float16"


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
        with self._lock:
            for start in range(0, len(ids), 900):  # under SQLite's bound-parameter limit
                part = ids[start : start + 900]
                marks = ",".join("?" * len(part))
                for rowid, blob in self._conn.execute(
                    f"SELECT rowid, embedding FROM chunk WHERE rowid IN ({marks})", part
                ):
                    out[where[rowid]] = unpack_vectors(blob, self._dims)
        return out

    def close(self) -> None:
        self._finalizer()


@dataclass(frozen=True, eq=False)
class PassageIndex:
    recipe: Recipe
    digest: str
    vectors: np.ndarray  # (passages, dims) float32 or float16, grouped by card in vault order
    card: np.ndarray  # int64: the vault position of each passage's card
    ordinal: np.ndarray  # int64
    start: np.ndarray  # int64: character offsets into the card's text
    end: np.ndarray
    rowid: np.ndarray  # int64: the row in the file, where its float32 vector is read
    valid: np.ndarray  # bool: finite and unit length (others are left out)
    bounds: np.ndarray  # int64 (cards + 1): card i's passages are bounds[i]:bounds[i+1]
    source: Float32Rows | None  # float16 held: where the float32 rows are read at the cut
    uncovered_names: tuple[str, ...] = ()  # cards with a vector and no passage
    orphans: tuple[str, ...] = ()  # names of passages' cards not in the vault
    invalid: tuple[tuple[str, int], ...] = ()  # (card, ordinal) left out
    per_card_max: int = 0

    @property
    def count(self) -> int:
        return int(self.vectors.shape[0])

    def retrieval(self) -> dict[str, object]:
        """What the retrieval says of the passages that scored: the recipe and its digest."""
        return {**self.recipe.to_json(), "digest": self.digest, "count": self.count}


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
) -> PassageIndex | str | None:
    """The passages of an open index: ``None`` without a chunk table, a refusal's
    message when they cannot be used, else a ``PassageIndex`` that owns ``conn``.

    ``position`` maps a vault card's name to its row; ``present`` says which cards
    have a usable card vector (passages of other cards are not scored); ``lengths``
    each card's text length, -1 where the text indexed is not at hand (a stale card):
    a passage's offsets must lie inside it (``producer.index_checks``), else the
    passages are refused."""
    if not has_chunks(conn):
        return None
    stored = read_recipe(conn)
    problem = recipe_problem(stored.known, stored.rows)
    if problem:
        return problem.message
    assert stored.recipe is not None
    total = conn.execute("SELECT count(*) FROM chunk").fetchone()[0]
    hold = HOLD or ("float32" if total * dims * 4 <= FLOAT32_BUDGET else "float16")
    vectors = np.empty((total, dims), dtype=np.float16 if hold == "float16" else np.float32)
    cols = _Columns()
    kept = 0
    orphans: set[str] = set()
    invalid: list[tuple[str, int]] = []
    cursor = conn.execute(
        "SELECT rowid, card, ordinal, start_char, end_char, embedding FROM chunk "
        "ORDER BY card, ordinal"
    )
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
        vectors[kept : kept + len(batch)] = f32
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
    vectors = vectors[:kept] if kept < total else vectors

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
        vectors = vectors[order]
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
    return PassageIndex(
        recipe=stored.recipe,
        digest=stored.digest,
        vectors=vectors,
        card=card,
        ordinal=ordinal,
        start=start,
        end=end,
        rowid=rowid,
        valid=valid,
        bounds=bounds,
        source=Float32Rows(conn, dims) if vectors.dtype == np.float16 else None,
        uncovered_names=uncovered,
        orphans=tuple(sorted(orphans)),
        invalid=tuple(sorted(invalid)),
        per_card_max=int(counts.max()) if counts.size else 0,
    )


# ------------------------------------------------------------------ scoring

# float16 keeps 11 significant bits: each stored component is off by at most 2^-11
# of itself (2^-25 absolutely below float16's normal range), so for a unit query and
# a unit passage |Σ δ_i q_i| ≤ 2^-11 + d·2^-25 (Cauchy–Schwarz); the float32 products
# and sums of the approximate pass add at most d·2^-23.
def float16_error(dims: int) -> float:
    """A bound on |approximate - exact| for one passage score."""
    return 2.0**-11 + dims * (2.0**-25 + 2.0**-23)


def exact_dots(rows32: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of float32 rows with the query: the same arithmetic for a
    row however many rows are asked at once (so a ranking is the same bit for bit)."""
    return np.einsum("ij,j->i", rows32.astype(np.float64), q64)


def best_passage_scores(
    matrix: np.ndarray,
    present: np.ndarray,
    passages: PassageIndex,
    vector: np.ndarray,
    cut: int | None,
) -> tuple[np.ndarray, dict[int, Passage]]:
    """Every card's score, the best of its card vector and its passages, exact where it
    can decide the top ``cut``; and, for those cards, which passage won.

    The approximate pass multiplies the float16 passages (converted a block at a
    time) and the float32 card vectors by the query. Every card that could reach the
    cut by that approximation (``refine``, with twice the float16 error bound) is
    scored again from the stored float32 vectors of the passages that could be its
    best, with ``exact_dots``: the ranking within the cut is the float32 one."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    q64 = q32.astype(np.float64)
    card_approx = (matrix @ q32).astype(np.float64)
    n_pass = passages.count
    half = passages.vectors.dtype == np.float16
    if half:
        pass_approx = np.empty(n_pass, dtype=np.float32)
        for a in range(0, n_pass, SCORE_BLOCK):
            block = passages.vectors[a : a + SCORE_BLOCK].astype(np.float32)
            pass_approx[a : a + block.shape[0]] = block @ q32
    else:
        pass_approx = passages.vectors @ q32
    pass_approx[~passages.valid] = -np.inf
    bounds = passages.bounds
    has = bounds[1:] > bounds[:-1]
    best = np.full(len(present), -np.inf, dtype=np.float64)
    if n_pass:
        best[has] = np.maximum.reduceat(pass_approx, bounds[:-1][has]).astype(np.float64)
    approx = np.where(present, np.maximum(card_approx, best), 0.0)
    dims = q32.size
    error = float16_error(dims) if half else dims * 2.0**-23
    winners: dict[int, Passage] = {}

    def exact(positions: np.ndarray) -> np.ndarray:
        out = exact_dots(matrix[positions], q64)
        spans = [(bounds[p], bounds[p + 1]) for p in positions.tolist()]
        candidates = [
            np.arange(a, b)[passages.valid[a:b] & (pass_approx[a:b] >= best[p] - 2 * error)]
            for p, (a, b) in zip(positions.tolist(), spans, strict=True)
        ]
        flat = np.concatenate(candidates) if candidates else np.zeros(0, dtype=np.int64)
        if not flat.size:
            scores = np.zeros(0)
        elif passages.source is not None:  # float16 held: the stored float32 rows
            scores = exact_dots(passages.source.read(passages.rowid[flat]), q64)
        else:
            scores = exact_dots(passages.vectors[flat], q64)
        at = 0
        for i, (p, cand) in enumerate(zip(positions.tolist(), candidates, strict=True)):
            mine = scores[at : at + cand.size]
            at += cand.size
            if not present[p]:
                out[i] = 0.0
                continue
            if mine.size and mine.max() >= out[i]:  # a tie: the passage, which says where
                j = int(cand[int(np.argmax(mine))])  # the first of equal best: lowest ordinal
                out[i] = float(mine.max())
                winners[p] = Passage(int(passages.ordinal[j]), int(passages.start[j]),
                                     int(passages.end[j]))
            else:  # the card's own vector: it reads the card's beginning
                a, b = spans[i]
                winners[p] = Passage(None, 0, int(passages.end[a]) if b > a else 0)
        return out

    scores = refine(approx, exact, cut, 2 * error)
    scores[~present] = 0.0
    return scores, winners
