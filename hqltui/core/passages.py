"""Passages of the semantic index: read once, scored by best passage.

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

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from hqltui.core.ranking import Passage, refine
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

# Rows fetched (and converted) per step while loading: bounds the blobs held at once
# whatever the number of passages.
LOAD_BATCH = 8192
# Held as int8 codes, symmetric (-127..127: no -128, so no SIMD pairwise sum can saturate).
# int8 rather than int16 or float16: the first pass reads every passage once a query, and
# that pass is bound by the bytes read (int8: a quarter of float32's, about twice the
# card vectors' at 7 passages a card) once a SIMD kernel multiplies int8 directly
# (``numkong``, imported only when passages are read); numpy converts int16 or float16 to
# float32 before any product, which cost as much as the float32 pass it replaced.
CODE_MAX = 127
# Rows per thread below which the first pass is not split (a thread's start costs more).
SPLIT_ROWS = 16384
# Rows per thread below which a gather of scattered rows (pass 2) is not split.
GATHER_SPLIT = 2048
# Rounding in the first pass and in the norms the bound is made of is below 1e-13 for any
# unit vectors of at most 8192 dimensions; the bound adds far more than that.
SLACK = 1e-9


@dataclass(frozen=True, eq=False)
class Codes:
    """float32 rows held as int8 codes, ``row ≈ scale · codes``, with what the error bound
    needs: the largest Euclidean norm of a row's error (``row - scale · codes``) and of a
    row as held (``scale · codes``), each worked out in float64 from the stored row."""

    codes: np.ndarray  # (rows, dims) int8
    scale: np.ndarray  # (rows,) float32; 0 for a zero (or left-out) row
    error: float  # max over rows of |row - scale · codes|₂
    length: float  # max over rows of |scale · codes|₂
    # The second plane (passages only): the first plane's remainder as int8 codes of its
    # own scale, ``row ≈ scale · codes + fine_scale · fine``; read only for the rows of
    # the few cards the first pass cannot place, never in the pass over every row.
    fine: np.ndarray | None = None
    fine_scale: np.ndarray | None = None
    fine_error: float = 0.0  # max |row - scale · codes - fine_scale · fine|₂
    fine_length: float = 0.0  # max |scale · codes + fine_scale · fine|₂

    @property
    def nbytes(self) -> int:
        planes = [self.codes, self.scale, self.fine, self.fine_scale]
        return int(sum(a.nbytes for a in planes if a is not None))


# Rows quantised (and their norms worked out in float64) per step: the float64 scratch of
# a step stays within a few MB, in cache, whatever the number of rows.
NORM_STEP = 512


def _finite_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows with every row that is not finite zeroed (they get scale 0), and the
    mask of the rows kept. A copy only when some row is not finite."""
    rows = np.asarray(rows, dtype=np.float32)
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(rows.shape[0], np.float32)
    usable = np.isfinite(peak) & (peak > 0)
    if not usable.all():
        rows = np.where(usable[:, None], rows, np.float32(0.0))
    return rows, usable


def _codes(rows: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and the float32 scale of finite rows (the largest component of a row
    maps to ±127; a row not ``usable`` gets codes 0 and scale 0)."""
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(rows.shape[0], np.float32)
    step = np.where(usable, peak / np.float32(CODE_MAX), np.float32(1.0)).astype(np.float32)
    codes = np.rint(rows / step[:, None])
    np.clip(codes, -CODE_MAX, CODE_MAX, out=codes)
    return codes.astype(np.int8), np.where(usable, step, np.float32(0.0)).astype(np.float32)


def _norms(exact: np.ndarray, *planes: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Per row, in float64: ``|exact - held|₂`` and ``|held|₂`` where ``held`` is the sum of
    ``scale · codes`` over ``planes``; ``exact`` is the stored row (float64)."""
    held = np.zeros(exact.shape, dtype=np.float64)
    for codes, scale in planes:
        held += codes.astype(np.float64) * scale.astype(np.float64)[:, None]
    diff = exact - held
    return (np.sqrt(np.einsum("ij,ij->i", diff, diff)),
            np.sqrt(np.einsum("ij,ij->i", held, held)))


def _exact64(raw: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """The stored rows in float64 as the bound sees them: a row that is not finite counts
    by its finite values (NaN as 0, ±inf as the largest float, so its error is infinite and
    every bound made with it is too: nothing is ever settled on it)."""
    exact = np.asarray(raw).astype(np.float64)
    if not usable.all():
        exact[~usable] = np.nan_to_num(exact[~usable])
    return exact


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """float32 rows as int8 codes and a float32 scale per row (the largest component maps
    to ±127), with each row's error norm ``|row - scale · codes|₂`` and held norm
    ``|scale · codes|₂`` in float64. A zero row gets scale 0 and widens nothing."""
    clean, usable = _finite_rows(rows)
    codes, scale = _codes(clean, usable)
    error = np.empty(codes.shape[0], dtype=np.float64)
    length = np.empty(codes.shape[0], dtype=np.float64)
    for a in range(0, codes.shape[0], NORM_STEP):
        b = a + NORM_STEP
        error[a:b], length[a:b] = _norms(_exact64(rows[a:b], usable[a:b]),
                                         (codes[a:b], scale[a:b]))
    return codes, scale, error, length


def two_planes(rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """``quantise`` twice: the rows, then what the first codes leave; with each row's
    first-plane error and held norms, and its two-plane error and held norms.

    The second plane's codes are cut from the remainder in float32 (any codes would do:
    they only choose an approximation); every norm the bounds are made of is worked out
    afterwards in float64 from the codes as held, so the bounds stay proven."""
    clean, usable = _finite_rows(rows)
    codes, scale = _codes(clean, usable)
    rest = clean - codes.astype(np.float32) * scale[:, None]
    rest_clean, rest_usable = _finite_rows(rest)
    fine, fine_scale = _codes(rest_clean, rest_usable)
    n = codes.shape[0]
    error, length, fine_error, fine_length = (np.empty(n, dtype=np.float64) for _ in range(4))
    for a in range(0, n, NORM_STEP):
        b = a + NORM_STEP
        exact = _exact64(rows[a:b], usable[a:b])
        error[a:b], length[a:b] = _norms(exact, (codes[a:b], scale[a:b]))
        fine_error[a:b], fine_length[a:b] = _norms(
            exact, (codes[a:b], scale[a:b]), (fine[a:b], fine_scale[a:b]))
    return codes, scale, error, length, fine, fine_scale, fine_error, fine_length


def held_codes(rows: np.ndarray, planes: int = 1) -> Codes:
    """``quantise`` (``planes`` 1) or ``two_planes`` (2) over a whole matrix, a batch of
    rows at a time (bounded scratch)."""
    n = rows.shape[0]
    codes = np.empty(rows.shape, dtype=np.int8)
    scale = np.empty(n, dtype=np.float32)
    fine = np.empty(rows.shape, dtype=np.int8) if planes == 2 else None
    fine_scale = np.empty(n, dtype=np.float32) if planes == 2 else None
    error = length = fine_error = fine_length = 0.0
    for a in range(0, n, LOAD_BATCH):
        part = slice(a, min(n, a + LOAD_BATCH))
        if fine is None or fine_scale is None:
            codes[part], scale[part], e, m = quantise(rows[part])
        else:
            codes[part], scale[part], e, m, fine[part], fine_scale[part], e2, m2 = \
                two_planes(rows[part])
            fine_error, fine_length = max(fine_error, float(e2.max())), max(fine_length,
                                                                               float(m2.max()))
        error, length = max(error, float(e.max())), max(length, float(m.max()))
    return Codes(codes, scale, error, length, fine, fine_scale, fine_error, fine_length)


def query_codes(q32: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The query as int8 codes, its scale and its error norm (float64), as ``quantise``."""
    codes, scale, error, _ = quantise(q32[None, :])
    return codes[0], float(scale[0]), float(error[0])


@dataclass(frozen=True)
class QueryPlanes:
    """The query in two int8 planes, ``q ≈ t·k + t2·k2``, and both planes' error norms."""

    codes: np.ndarray  # (2, dims) int8: k, k2
    scale: tuple[float, float]  # t, t2
    error: float  # |q - t·k|₂
    fine_error: float  # |q - t·k - t2·k2|₂
    norm: float  # |q|₂


def query_planes(q32: np.ndarray) -> QueryPlanes:
    (codes, scale, error, _, fine, fine_scale, fine_error, _) = two_planes(q32[None, :])
    return QueryPlanes(np.vstack([codes, fine]), (float(scale[0]), float(fine_scale[0])),
                       float(error[0]), float(fine_error[0]),
                       float(np.linalg.norm(q32.astype(np.float64))))


def second_stage_error(q: QueryPlanes, *held: Codes) -> float:
    """``first_stage_error`` for two planes on both sides: ``q·p - (t·k + t2·k2)·(s·c + s2·c2)``
    is at most ``|q|₂·max|e2|₂ + max|s·c + s2·c2|₂·|f2|₂`` (e2, f2: the two-plane errors),
    the maxima over every row of ``held``."""
    error = max((h.fine_error for h in held), default=0.0)
    length = max((h.fine_length for h in held), default=0.0)
    return (q.norm * error + length * q.fine_error) * (1 + SLACK) + SLACK


def fine_dots(held: Codes, rows: np.ndarray, q: QueryPlanes) -> np.ndarray:
    """Two-plane approximate scores of ``rows`` (float64): four exact integer products
    per row, scaled. Many rows are split over the CPUs: gathering rows scattered over a
    large matrix waits on memory, and two threads wait side by side."""
    import numkong

    assert held.fine is not None and held.fine_scale is not None
    codes, fine_codes = held.codes, held.fine
    scale, fine_scale = held.scale, held.fine_scale
    t, t2 = q.scale
    out = np.empty(rows.size, dtype=np.float64)

    def run(a: int, b: int) -> None:
        mine = rows[a:b]
        # ``take`` copies whole rows; fancy indexing of a 2-D array is slower
        coarse = np.asarray(numkong.cdist(q.codes, np.take(codes, mine, axis=0), metric="dot"))
        fine = np.asarray(numkong.cdist(q.codes, np.take(fine_codes, mine, axis=0),
                                        metric="dot"))
        out[a:b] = (np.take(scale, mine) * (t * coarse[0] + t2 * coarse[1])
                    + np.take(fine_scale, mine) * (t * fine[0] + t2 * fine[1]))

    _split(run, rows.size, GATHER_SPLIT)
    return out


def _split(run: Callable[[int, int], None], n: int, least: int) -> None:
    """``run(a, b)`` over ``0:n`` in one part per CPU (in the pool), or at once when the
    parts would be smaller than ``least``."""
    parts = max(1, min(_threads(), n // least))
    if parts == 1:
        if n:
            run(0, n)
        return
    cuts = [n * i // parts for i in range(parts + 1)]
    for f in [_pool().submit(run, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]:
        f.result()


def first_stage_error(q32: np.ndarray, q_error: float, *held: Codes) -> float:
    """A bound on |approximate - exact| for any one row's score (card or passage).

    For a stored row ``p = s·c + e`` and the query ``q = t·k + f`` (codes c, k; errors
    e, f), ``q·p - s·t·(k·c) = q·e + (s·c)·f``, so by Cauchy–Schwarz it is at most
    ``|q|₂·max|e|₂ + max|s·c|₂·|f|₂``. The integer product ``k·c`` is exact (int32 sums);
    ``SLACK`` covers the float64 rounding of the scaling, the norms and the exact score."""
    qn = float(np.linalg.norm(q32.astype(np.float64)))
    error = max((h.error for h in held), default=0.0)
    length = max((h.length for h in held), default=0.0)
    return (qn * error + length * q_error) * (1 + SLACK) + SLACK


_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _threads() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # not Linux
        return max(1, min(8, os.cpu_count() or 1))


def _pool() -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(_threads(), thread_name_prefix="hql-passages"))
        return _POOL[0]


def code_dots(held: Codes, q_codes: np.ndarray, q_scale: float) -> np.ndarray:
    """Every row's approximate score in float64: the exact integer product of its int8
    codes with the query's, times both scales. Split over the CPUs (the kernel releases
    the GIL)."""
    import numkong

    n = held.codes.shape[0]
    out = np.empty(n, dtype=np.float64)
    q = q_codes[None, :]

    def run(a: int, b: int) -> None:
        numkong.cdist(q, held.codes[a:b], metric="dot", out=out[None, a:b])
        out[a:b] *= held.scale[a:b]
        out[a:b] *= q_scale

    _split(run, n, SPLIT_ROWS)
    return out


@dataclass(frozen=True)
class _Part:
    """One thread's share of the first pass: cards ``a:b`` and their passage rows
    ``lo:hi``; ``has`` the cards of it with a passage and ``starts`` their first rows, and
    ``left`` its left-out rows (all relative to ``a`` and ``lo``)."""

    a: int
    b: int
    lo: int
    hi: int
    has: np.ndarray
    starts: np.ndarray
    left: np.ndarray


def _parts(passages: PassageIndex) -> tuple[_Part, ...]:
    """The first pass's split over the CPUs, at card boundaries, rows balanced (cards'
    own vectors counted): worked out once per index."""
    made = passages.__dict__.get("_parts")
    if made is not None:
        return made
    bounds = passages.bounds
    cards = bounds.size - 1
    rows = int(bounds[-1]) + cards
    k = max(1, min(_threads(), rows // SPLIT_ROWS))
    weight = bounds[:-1] + np.arange(cards)  # rows before card i, its own vector counted
    cuts = [0, *np.searchsorted(weight, [rows * j // k for j in range(1, k)]).tolist(), cards]
    parts = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        lo, hi = int(bounds[a]), int(bounds[b])
        has = np.flatnonzero(bounds[a + 1 : b + 1] > bounds[a:b])
        left = passages.left_out[(passages.left_out >= lo) & (passages.left_out < hi)] - lo
        parts.append(_Part(a, b, lo, hi, has, bounds[a:b][has] - lo, left))
    made = tuple(parts)
    object.__setattr__(passages, "_parts", made)
    return made


def first_pass(passages: PassageIndex, q_codes: np.ndarray,
               q_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Pass 1 of ``best_passage_scores``: each card's approximate best (its own vector or a
    passage; -inf for a card with neither) and each passage row's approximate score, both
    in float64 on the first int8 plane (``code_dots``' arithmetic, bit for bit). Each thread
    scores its cards and their passages and takes its cards' maxima while the scores are
    still in cache; left-out rows score -inf."""
    import numkong

    best = np.empty(passages.bounds.size - 1, dtype=np.float64)
    rows = np.empty(passages.count, dtype=np.float64)
    q = q_codes[None, :]
    cards, vectors = passages.cards, passages.vectors

    def run(part: _Part) -> None:
        mine, scored = best[part.a : part.b], rows[part.lo : part.hi]
        if mine.size:
            numkong.cdist(q, cards.codes[part.a : part.b], metric="dot", out=mine[None, :])
            mine *= cards.scale[part.a : part.b]
            mine *= q_scale
        if scored.size:
            numkong.cdist(q, vectors.codes[part.lo : part.hi], metric="dot", out=scored[None, :])
            scored *= vectors.scale[part.lo : part.hi]
            scored *= q_scale
            scored[part.left] = -np.inf
        if part.has.size:
            top = np.maximum.reduceat(scored, part.starts)
            mine[part.has] = np.maximum(mine[part.has], top)

    parts = _parts(passages)
    if len(parts) == 1:
        run(parts[0])
    else:
        for f in [_pool().submit(run, part) for part in parts]:
            f.result()
    return best, rows


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
    widest = [0.0, 0.0, 0.0, 0.0]  # max error, length, fine error, fine length
    pending: list[tuple[slice, Future[tuple[np.ndarray, ...]]]] = []

    def settle() -> None:
        part, job = pending.pop()
        c, sc, e, n, c2, sc2, e2, n2 = job.result()
        vectors[part], scale[part], fine[part], fine_scale[part] = c, sc, c2, sc2
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
        vectors=Codes(vectors, scale, error, length, fine, fine_scale, fine_error, fine_length),
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


# ------------------------------------------------------------------ scoring

def exact_dots(rows32: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of float32 rows with the query: the same arithmetic for a
    row however many rows are asked at once (so a ranking is the same bit for bit)."""
    return np.einsum("ij,j->i", rows32.astype(np.float64), q64)


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


def _rows_of(bounds: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The passage rows of the cards at ``positions`` (each card's rows contiguous, in
    order) and, for each row, the index into ``positions`` of its card."""
    lo, hi = bounds[positions], bounds[positions + 1]
    counts = hi - lo
    owner = np.repeat(np.arange(positions.size), counts)
    rows = np.arange(int(counts.sum())) + np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return rows, owner


def _group_max(values: np.ndarray, owner: np.ndarray, size: int) -> np.ndarray:
    """Per owner (0..size-1, ``owner`` sorted) the largest of its values; -inf for none."""
    out = np.full(size, -np.inf, dtype=np.float64)
    if values.size:
        firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        out[owner[firsts]] = np.maximum.reduceat(values, firsts)
    return out


def best_passage_scores(
    matrix: np.ndarray,
    present: np.ndarray,
    passages: PassageIndex,
    vector: np.ndarray,
    cut: int | None,
) -> tuple[np.ndarray, Winners]:
    """Every card's score, the best of its card vector and its passages, exact where it
    can decide the top ``cut`` (and its sign); and, for those cards, which passage won.

    Three passes, each over fewer rows, each within a proven bound of the float32 score:

    1. every card vector and passage, first int8 plane (``first_pass``,
       ``first_stage_error``), each card's best taken by the thread that scored it;
    2. the cards that could reach the cut or whose sign is in doubt by that (``refine``,
       twice the first bound): their card vectors, and the passages that could be their
       best, on two int8 planes (``fine_dots``, ``second_stage_error``, about 1/100 of
       the first bound); a card surely outside the cut whose card vector is surely above
       zero needs no passage;
    3. the cards that pass 2 cannot place (``refine`` again, twice the second bound):
       their float32 card vectors and the stored float32 rows of the passages that could
       be their best, read back from the file, with ``exact_dots``.

    A card outside a pass's choice is provably outside the cut (and of known sign), so
    the ranking within the cut is the float32 one, bit for bit."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    q64 = q32.astype(np.float64)
    planes = query_planes(q32)
    k, t = planes.codes[0], planes.scale[0]
    # pass 2 overwrites the rows it reads in ``row_approx``; ``top`` stays pass 1's
    top, row_approx = first_pass(passages, k, t)
    approx = np.where(present, top, 0.0)
    bounds = passages.bounds
    first = first_stage_error(q32, planes.error, passages.cards, passages.vectors)
    second = second_stage_error(planes, passages.cards, passages.vectors)
    # per card, how far below its best a passage may score and still be its best
    near = np.full(len(present), 2 * first, dtype=np.float64)
    chosen: list[Winners] = []

    # A lower bound on the cut's score: a card whose upper bound is below it is in doubt
    # only for its sign, which its card vector settles when that is surely above zero.
    lower = np.where(present, approx - first, -np.inf)
    floor_of_cut = -np.inf
    if cut is not None and 0 < cut <= lower.size:
        floor_of_cut = float(np.partition(lower, lower.size - cut)[lower.size - cut])

    def card_values(positions: np.ndarray) -> np.ndarray:
        """The card vectors' scores within ``second`` (two planes; exact without them)."""
        if passages.cards.fine is None:
            return exact_dots(np.take(matrix, positions, axis=0), q64)
        return fine_dots(passages.cards, positions, planes)

    def finer(positions: np.ndarray) -> np.ndarray:
        out = card_values(positions)
        # outside the cut, surely above zero: the card vector says both
        settled = (approx[positions] + first < floor_of_cut) & (out > second)
        rest = positions[~settled]
        if rest.size:
            rows, owner = _rows_of(bounds, rest)
            # The rows that could be the card's best and could be above zero: a row below
            # ``-first`` is negative, so it neither decides the sign nor beats a positive
            # best; one more than ``2·first`` below the card's first-pass best cannot be it.
            # A row left out keeps its first-pass -inf.
            floor = np.maximum(approx[rest] - 2 * first, -first)
            picked = rows[row_approx[rows] >= floor[owner]]
            values = fine_dots(passages.vectors, picked, planes)
            values[~passages.valid[picked]] = -np.inf
            row_approx[picked] = values
            near[rest] = 2 * second
            out[~settled] = np.maximum(out[~settled],
                                       _group_max(row_approx[rows], owner, rest.size))
        out[~present[positions]] = 0.0
        return out

    def exact(positions: np.ndarray) -> np.ndarray:
        out = exact_dots(np.take(matrix, positions, axis=0), q64)
        rows, owner = _rows_of(bounds, positions)
        lo, counts = bounds[positions], bounds[positions + 1] - bounds[positions]
        top = _group_max(row_approx[rows], owner, positions.size)
        keep = passages.valid[rows] & (row_approx[rows] >= (top - near[positions])[owner])
        rows, owner = rows[keep], owner[keep]
        ordinal = np.full(positions.size, -1, dtype=np.int64)  # -1: the card's own vector
        start = np.zeros(positions.size, dtype=np.int64)
        end = np.zeros(positions.size, dtype=np.int64)  # the card vector reads the beginning
        end[counts > 0] = passages.end[lo[counts > 0]]
        if rows.size:
            scores = exact_dots(passages.source.read(passages.rowid[rows]), q64)
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

    # Pass 2 pays only when its bound is well inside the first (always, for unit rows):
    # a card pass 1 left out must stay below what pass 3's choice can reach.
    if passages.vectors.fine is not None and first >= 3 * second:
        scores = refine(refine(approx, finer, cut, 2 * first, sign=first), exact, cut,
                        2 * second)
    else:
        scores = refine(approx, exact, cut, 2 * first)
    scores[~present] = 0.0
    empty = np.zeros(0, dtype=np.int64)
    return scores, chosen[0] if chosen else Winners(empty, empty, empty, empty)
