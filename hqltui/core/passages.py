"""Passages of the semantic index: read once, scored by best passage.

An index built with passages (``producer.passages``) has a ``chunk`` table: each
card's passages with their character offsets in the card's text, and a
``chunk_recipe`` row. ``read_passages`` loads them, grouped by card in the
vault's order, with the vectors held as float32, or past ``FLOAT32_BUDGET`` as
int16 with one float32 scale per row (half the memory; see ``quantise``). Held
as int16 the file stays open: the float32 vectors of the few passages that can
decide a ranking are read back from it at query time (``Float32Rows``). Either
way, within the cut the ranking is the one the stored float32 vectors give, bit
for bit (``best_passage_scores``).

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
from collections.abc import Iterator, Mapping
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

# Rows fetched (and converted) per step while loading: bounds the blobs held at once
# whatever the number of passages.
LOAD_BATCH = 8192
# int16 rows converted to float32 per step of the approximate pass: 1.5 MB of float32,
# a buffer that stays in cache and is reused.
SCORE_BLOCK = 1024
# Passages are held as float32 while that matrix stays within this many bytes
# (a man-page vault's ~100k passages: 154 MB), else as int16 with a scale per row
# (half the memory). int16, not float16: numpy has no SIMD float16 conversion here,
# so a float16 pass cost ~8x the float32 product per row; an int16 block converts at
# about the float32 product's own cost (benchmarks/bench_passages.py). Either way the
# ranking within the cut is the float32 one. ``HOLD`` forces one (tests, benchmarks).
FLOAT32_BUDGET = 768 * 2**20
HOLD: str | None = None  # None | "float32" | "int16"
INT16_MAX = 32767


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows as int16 codes and a float32 scale per row, ``row ≈ scale · codes``:
    each component is off by at most ``scale`` (half a step, and the rounding of the
    division), the bound ``int16_error`` builds on."""
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(rows.shape[0], np.float32)
    usable = np.isfinite(peak) & (peak > 0)
    with np.errstate(invalid="ignore", over="ignore"):
        step = np.where(usable, peak / INT16_MAX, 1.0).astype(np.float32)
        codes = np.rint(rows / step[:, None])
    codes = np.nan_to_num(codes, nan=0.0, posinf=0.0, neginf=0.0)  # left out anyway (valid)
    # a zero (or left-out) row scores 0 and must not widen the error bound: scale 0
    scale = np.where(usable, step, 0.0).astype(np.float32)
    return np.clip(codes, -INT16_MAX, INT16_MAX).astype(np.int16), scale


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
    vectors: np.ndarray  # (passages, dims) float32 or int16, grouped by card in vault order
    card: np.ndarray  # int64: the vault position of each passage's card
    ordinal: np.ndarray  # int64
    start: np.ndarray  # int64: character offsets into the card's text
    end: np.ndarray
    rowid: np.ndarray  # int64: the row in the file, where its float32 vector is read
    valid: np.ndarray  # bool: finite and unit length (others are left out)
    bounds: np.ndarray  # int64 (cards + 1): card i's passages are bounds[i]:bounds[i+1]
    source: Float32Rows | None  # int16 held: where the float32 rows are read at the cut
    scale: np.ndarray | None = None  # int16 held: float32 (passages,), row = scale · codes
    uncovered_names: tuple[str, ...] = ()  # cards with a vector and no passage
    orphans: tuple[str, ...] = ()  # names of passages' cards not in the vault
    invalid: tuple[tuple[str, int], ...] = ()  # (card, ordinal) left out
    per_card_max: int = 0

    @property
    def count(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def held(self) -> str:
        """How the vectors are held in memory: ``float32`` or ``int16``."""
        return str(self.vectors.dtype)

    def retrieval(self) -> dict[str, object]:
        """What the retrieval says of the passages that scored: the recipe and its digest
        (worked out once: it is the same for every query)."""
        said = self.__dict__.get("_said")
        if said is None:
            said = {**self.recipe.to_json(), "digest": self.digest, "count": self.count}
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
    hold = HOLD or ("float32" if total * dims * 4 <= FLOAT32_BUDGET else "int16")
    vectors = np.empty((total, dims), dtype=np.int16 if hold == "int16" else np.float32)
    scale = np.empty(total, dtype=np.float32) if hold == "int16" else None
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
        if scale is not None:
            vectors[kept : kept + len(batch)], scale[kept : kept + len(batch)] = quantise(f32)
        else:
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
    if scale is not None and kept < total:
        scale = scale[:kept]

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
        scale = None if scale is None else scale[order]
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
        source=Float32Rows(conn, dims) if scale is not None else None,
        scale=scale,
        uncovered_names=uncovered,
        orphans=tuple(sorted(orphans)),
        invalid=tuple(sorted(invalid)),
        per_card_max=int(counts.max()) if counts.size else 0,
    )


# ------------------------------------------------------------------ scoring

def int16_error(scale_max: float, q: np.ndarray) -> float:
    """A bound on |approximate - exact| for one passage score held as int16: each
    component is off by at most its row's scale, so the product by the query is off by
    at most ``scale · |q|₁``; the float32 product of codes and query and its scaling add
    at most (d + 2)·2⁻²³ (the codes' norm is about 1 / scale)."""
    return scale_max * float(np.abs(q.astype(np.float64)).sum()) + (q.size + 2) * 2.0**-23


def exact_dots(rows32: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of float32 rows with the query: the same arithmetic for a
    row however many rows are asked at once (so a ranking is the same bit for bit)."""
    return np.einsum("ij,j->i", rows32.astype(np.float64), q64)


def approximate(passages: PassageIndex, q32: np.ndarray) -> np.ndarray:
    """Every passage's float32 score (int16 rows converted a block at a time into one
    reused buffer); left-out passages score -inf."""
    held = passages.vectors
    if passages.scale is None:
        out = held @ q32
    else:
        out = np.empty(held.shape[0], dtype=np.float32)
        buffer = np.empty((min(SCORE_BLOCK, held.shape[0]), held.shape[1]), dtype=np.float32)
        for a in range(0, held.shape[0], SCORE_BLOCK):
            block = buffer[: min(SCORE_BLOCK, held.shape[0] - a)]
            block[...] = held[a : a + block.shape[0]]
            np.matmul(block, q32, out=out[a : a + block.shape[0]])
        out *= passages.scale
    out[~passages.valid] = -np.inf
    return out


class Winners(Mapping[int, Passage]):
    """The answering passage of each card scored exactly, by vault position; a
    ``Passage`` is made only for the cards a ranking shows."""

    def __init__(self, positions: np.ndarray, ordinal: np.ndarray, start: np.ndarray,
                 end: np.ndarray) -> None:
        self._positions = positions  # sorted
        self._ordinal, self._start, self._end = ordinal, start, end  # ordinal -1: the card

    def _at(self, key: object) -> int:
        if not isinstance(key, (int, np.integer)):
            return -1
        i = int(np.searchsorted(self._positions, key))
        return i if i < self._positions.size and self._positions[i] == key else -1

    def __getitem__(self, key: int) -> Passage:
        i = self._at(key)
        if i < 0:
            raise KeyError(key)
        ordinal = int(self._ordinal[i])
        return Passage(None if ordinal < 0 else ordinal, int(self._start[i]), int(self._end[i]))

    def __contains__(self, key: object) -> bool:
        return self._at(key) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._positions.tolist())

    def __len__(self) -> int:
        return int(self._positions.size)


def best_passage_scores(
    matrix: np.ndarray,
    present: np.ndarray,
    passages: PassageIndex,
    vector: np.ndarray,
    cut: int | None,
) -> tuple[np.ndarray, Winners]:
    """Every card's score, the best of its card vector and its passages, exact where it
    can decide the top ``cut``; and, for those cards, which passage won.

    The approximate pass multiplies the passages (float32, or int16 converted a block
    at a time) and the float32 card vectors by the query; one ``maximum.reduceat`` over
    the card-contiguous rows gives each card's best. Every card that could reach the
    cut by that approximation (``refine``, with twice the error bound) is scored again
    from the stored float32 vectors of the passages that could be its best, with
    ``exact_dots``: the ranking within the cut is the float32 one."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    q64 = q32.astype(np.float64)
    card_approx = (matrix @ q32).astype(np.float64)
    pass_approx = approximate(passages, q32)
    bounds = passages.bounds
    has = bounds[1:] > bounds[:-1]
    best = np.full(len(present), -np.inf, dtype=np.float64)
    if passages.count:
        best[has] = np.maximum.reduceat(pass_approx, bounds[:-1][has]).astype(np.float64)
    approx = np.where(present, np.maximum(card_approx, best), 0.0)
    dims = q32.size
    error = dims * 2.0**-23
    if passages.scale is not None and passages.count:
        error = max(error, int16_error(float(passages.scale.max()), q32))
    chosen: list[Winners] = []

    def exact(positions: np.ndarray) -> np.ndarray:
        out = exact_dots(matrix[positions], q64)
        lo, hi = bounds[positions], bounds[positions + 1]
        counts = hi - lo
        owner = np.repeat(np.arange(positions.size), counts)
        rows = np.arange(int(counts.sum())) + np.repeat(lo - (np.cumsum(counts) - counts), counts)
        near = passages.valid[rows] & (pass_approx[rows] >= best[positions][owner] - 2 * error)
        rows, owner = rows[near], owner[near]
        ordinal = np.full(positions.size, -1, dtype=np.int64)  # -1: the card's own vector
        start = np.zeros(positions.size, dtype=np.int64)
        end = np.zeros(positions.size, dtype=np.int64)  # the card vector reads the beginning
        end[counts > 0] = passages.end[lo[counts > 0]]
        if rows.size:
            if passages.source is not None:  # int16 held: the stored float32 rows
                scores = exact_dots(passages.source.read(passages.rowid[rows]), q64)
            else:
                scores = exact_dots(passages.vectors[rows], q64)
            firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            group_max = np.maximum.reduceat(scores, firsts)
            lengths = np.diff(np.r_[firsts, rows.size])
            tops = np.flatnonzero(scores == np.repeat(group_max, lengths))
            # the first of equal best (lowest ordinal) in each card
            first_top = tops[np.r_[True, owner[tops][1:] != owner[tops][:-1]]]
            mine = owner[firsts]
            won = group_max >= out[mine]  # a tie: the passage, which says where
            at, j = mine[won], rows[first_top[won]]
            out[at] = group_max[won]
            ordinal[at], start[at], end[at] = (passages.ordinal[j], passages.start[j],
                                               passages.end[j])
        live = present[positions]
        out[~live] = 0.0
        chosen.append(Winners(positions[live], ordinal[live], start[live], end[live]))
        return out

    scores = refine(approx, exact, cut, 2 * error)
    scores[~present] = 0.0
    empty = np.zeros(0, dtype=np.int64)
    return scores, chosen[0] if chosen else Winners(empty, empty, empty, empty)
