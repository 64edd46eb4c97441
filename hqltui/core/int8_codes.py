"""float32 rows held as int8 codes with a proven error bound on any score made of them.

The passages' first pass reads every row once a query, and is bound by the bytes read:
int8 is a quarter of float32's, and a SIMD kernel (``numkong``) multiplies int8 directly
(numpy converts int16 or float16 to float32 before any product, which cost as much as the
float32 pass it replaced). Each row keeps one float32 scale; a second plane of codes
holds the first plane's remainder for the few rows a first pass cannot place. The bounds
(``first_stage_error``, ``second_stage_error``) are worked out in float64 from the codes
as held, so whatever the codes, a ranking chosen within them is the float32 one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Rows quantised per step (and fetched per step while loading): bounds the scratch and the
# blobs held at once whatever the number of rows.
LOAD_BATCH = 8192
# Held as int8 codes, symmetric (-127..127: no -128, so no SIMD pairwise sum can saturate).
CODE_MAX = 127
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
    # Each row's own |row - scale · codes|₂ (float64), for bounds narrower than ``error``
    # where only some rows count (``row_errors``); ``None``: every row counts as ``error``.
    errors: np.ndarray | None = None

    def row_errors(self) -> np.ndarray:
        """Each row's first-plane error norm, ``error`` for every row when not kept."""
        if self.errors is not None:
            return self.errors
        return np.full(self.codes.shape[0], self.error, dtype=np.float64)

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
    errors = np.zeros(n, dtype=np.float64)
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
        errors[part] = e
        error, length = max(error, float(e.max())), max(length, float(m.max()))
    return Codes(codes, scale, error, length, fine, fine_scale, fine_error, fine_length,
                 errors)


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


def first_stage_error(q32: np.ndarray, q_error: float, *held: Codes) -> float:
    """A bound on |approximate - exact| for any one row's score (card or passage).

    For a stored row ``p = s·c + e`` and the query ``q = t·k + f`` (codes c, k; errors
    e, f), ``q·p - s·t·(k·c) = q·e + (s·c)·f``, so by Cauchy–Schwarz it is at most
    ``|q|₂·max|e|₂ + max|s·c|₂·|f|₂``. The integer product ``k·c`` is exact (int32 sums);
    ``SLACK`` covers the float64 rounding of the scaling, the norms and the exact score."""
    qn = float(np.linalg.norm(q32.astype(np.float64)))
    error = max((h.error for h in held), default=0.0)
    length = max((h.length for h in held), default=0.0)
    return float(first_stage_bound(qn, q_error, error, length))


def first_stage_bound(qn: float, q_error: float, error: float | np.ndarray,
                      length: float) -> float | np.ndarray:
    """``first_stage_error`` for rows whose error norms are at most ``error`` (a number,
    or one per group of rows: a card's vector and passages, ``PassageIndex.card_errors``):
    the same bound, narrower where a group's rows were held closer than the worst row."""
    return (qn * error + length * q_error) * (1 + SLACK) + SLACK

