"""Passage scoring: every card's score is the mean of its best two of its card vector
and its passages (``TOP``; a card with no passage: its card vector), exact (float32, bit
for bit) wherever it can decide the top of a ranking.

Why two: a card's single best window is often a short tail (a `See also` list, a
title and a few names) that sits close to a vague query; two of its texts must agree
before a long card outranks a card whose own vector answers (docs/passages.md, "How
the card score rule and the recipe were chosen").

Three passes over fewer rows each (``best_passage_scores``): the first int8 plane over
every row, two planes over the cards that could reach the cut, the stored float32 rows of
the passages that could still decide it. Each pass only chooses, within a proven bound
(``hqltui.core.int8_codes``), which cards the next must score: the mean of the best two
of some values moves by at most the most any value moves, so a bound on every row's
error bounds the card's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np

from hqltui.core import threads
from hqltui.core.int8_codes import (
    Codes,
    QueryPlanes,
    first_stage_error,
    query_planes,
    second_stage_error,
)
from hqltui.core.passage_index import PassageIndex
from hqltui.core.ranking import Passage, refine

# Rows per thread below which the first pass is not split (a thread's start costs more).
SPLIT_ROWS = 16384
# Rows per thread below which a gather of scattered rows (pass 2) is not split.
GATHER_SPLIT = 2048


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

    threads.split(run, rows.size, GATHER_SPLIT)
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
    k = max(1, min(threads.worker_count(), rows // SPLIT_ROWS))
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
               q_scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pass 1 of ``best_passage_scores``: each card's approximate score (``card_score`` of
    its own vector and its passages), its approximate second best (-inf for a card with
    one value) and each passage row's approximate score, in float64 on the first int8
    plane (one int8 product per row, scaled). Each thread scores its cards and their
    passages and takes its cards' best two while the scores are still in cache; left-out
    rows score -inf."""
    import numkong

    best = np.empty(passages.bounds.size - 1, dtype=np.float64)
    second = np.full(passages.bounds.size - 1, -np.inf, dtype=np.float64)
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
            top, next_ = _segment_top_two(scored, part.starts)
            high, low = _with_card(mine[part.has], top, next_)
            second[part.a + part.has] = low
            mine[part.has] = card_score(high, low)

    parts = _parts(passages)
    if len(parts) == 1:
        run(parts[0])
    else:
        for f in [threads.pool().submit(run, part) for part in parts]:
            f.result()
    return best, second, rows


def _segment_top_two(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per contiguous segment of ``values`` (each non-empty, from ``starts``) its largest
    and second largest value (the largest again when it occurs twice; -inf for one)."""
    top = np.maximum.reduceat(values, starts)
    lengths = np.diff(np.r_[starts, values.size])
    is_top = values == np.repeat(top, lengths)
    twice = np.add.reduceat(is_top, starts) >= 2
    rest = np.maximum.reduceat(np.where(is_top, -np.inf, values), starts)
    return top, np.where(twice, top, rest)


def _with_card(card: np.ndarray, top: np.ndarray,
               next_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best and second best of a card's own value and its passages' best two."""
    return np.maximum(card, top), np.maximum(np.minimum(card, top), next_)


def card_score(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The rule: the mean of a card's best two values, its best alone when it has one
    (``low`` -inf). ``(a + b) * 0.5`` is exact to the bit whichever order a and b come in,
    so every pass and the reference agree on it."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(low), high, (high + low) * 0.5)


def exact_dots(rows32: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of float32 rows with the query: the same arithmetic for a
    row however many rows are asked at once (so a ranking is the same bit for bit)."""
    return np.einsum("ij,j->i", rows32.astype(np.float64), q64)


@dataclass(frozen=True)
class _Contributor:
    """One of each card's best two, card by card: ``ordinal`` -1 for the card's own
    vector (its span is then the card's first passage, which it reads), -2 for none."""

    ordinal: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, passages: PassageIndex, ordinal: np.ndarray, row: np.ndarray,
           first_end: np.ndarray) -> _Contributor:
        is_row = row >= 0
        at = np.where(is_row, row, 0)
        start = np.where(is_row, passages.start[at] if passages.start.size else 0, 0)
        end = np.where(is_row, passages.end[at] if passages.end.size else 0, first_end)
        return cls(ordinal, start, end)

    def only(self, keep: np.ndarray) -> _Contributor:
        return _Contributor(self.ordinal[keep], self.start[keep], self.end[keep])

    def passage(self, i: int) -> Passage | None:
        ordinal = int(self.ordinal[i])
        if ordinal == -2:
            return None
        return Passage(None if ordinal < 0 else ordinal, int(self.start[i]), int(self.end[i]))


class Winners(Mapping[int, Passage]):
    """What gave each card scored exactly its score, by vault position: its best
    passage (or its own vector), with the other of its best two beside it
    (``Passage.second``, weight 1/2 each). A ``Passage`` is made only for the cards a
    ranking shows."""

    def __init__(self, positions: np.ndarray, best: _Contributor, second: _Contributor) -> None:
        self._positions = positions  # sorted
        self._best, self._second = best, second

    @classmethod
    def none(cls) -> Winners:
        empty = np.zeros(0, dtype=np.int64)
        nobody = _Contributor(empty, empty, empty)
        return cls(empty, nobody, nobody)

    def _at(self, key: object) -> int:
        if not isinstance(key, (int, np.integer)):
            return -1
        i = int(np.searchsorted(self._positions, key))
        return i if i < self._positions.size and self._positions[i] == key else -1

    def __getitem__(self, key: int) -> Passage:
        i = self._at(key)
        if i < 0:
            raise KeyError(key)
        best = self._best.passage(i)
        assert best is not None
        return replace(best, second=self._second.passage(i))

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


def _second_of(card: np.ndarray, values: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per owner (``owner`` sorted, some owners without values) the second best of its
    card value and its ``values``."""
    top = np.full(card.size, -np.inf)
    next_ = np.full(card.size, -np.inf)
    if values.size:
        firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        a, b = _segment_top_two(values, firsts)
        top[owner[firsts]], next_[owner[firsts]] = a, b
    return _with_card(card, top, next_)[1]


def best_passage_scores(
    matrix: np.ndarray,
    present: np.ndarray,
    passages: PassageIndex,
    vector: np.ndarray,
    cut: int | None,
) -> tuple[np.ndarray, Winners]:
    """Every card's score, the mean of its best two of its card vector and its passages
    (``card_score``), exact where it can decide the top ``cut`` (and its sign); and, for
    those cards, which passages gave it.

    Three passes, each over fewer rows, each within a proven bound of the float32 score
    (the mean of the best two moves by at most the most any value moves):

    1. every card vector and passage, first int8 plane (``first_pass``,
       ``first_stage_error``), each card's best two taken by the thread that scored it;
    2. the cards that could reach the cut or whose sign is in doubt by that (``refine``,
       twice the first bound): their card vectors, and the passages that could be among
       their best two (within twice the bound of the card's second best), on two int8
       planes (``fine_dots``, ``second_stage_error``, about 1/100 of the first bound);
    3. the cards that pass 2 cannot place (``refine`` again, twice the second bound):
       their float32 card vectors and the stored float32 rows of the passages that could
       be among their best two, read back from the file, with ``exact_dots``.

    A card outside a pass's choice is provably outside the cut (and of known sign), so
    the ranking within the cut is the float32 one, bit for bit."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    q64 = q32.astype(np.float64)
    planes = query_planes(q32)
    k, t = planes.codes[0], planes.scale[0]
    # pass 2 overwrites the rows it reads in ``row_approx``
    top, second_best, row_approx = first_pass(passages, k, t)
    approx = np.where(present, top, 0.0)
    bounds = passages.bounds
    first = first_stage_error(q32, planes.error, passages.cards, passages.vectors)
    second = second_stage_error(planes, passages.cards, passages.vectors)
    # per card, how far below its second best a row may score and still be among its two
    near = np.full(len(present), 2 * first, dtype=np.float64)
    chosen: list[Winners] = []

    def card_values(positions: np.ndarray) -> np.ndarray:
        """The card vectors' scores within ``second`` (two planes; exact without them)."""
        if passages.cards.fine is None:
            return exact_dots(np.take(matrix, positions, axis=0), q64)
        return fine_dots(passages.cards, positions, planes)

    def finer(positions: np.ndarray) -> np.ndarray:
        own = card_values(positions)
        rows, owner = _rows_of(bounds, positions)
        # A row more than twice the first bound below the card's second best is below
        # it exactly, so it is not among the card's best two; left-out rows stay -inf.
        floor = second_best[positions] - 2 * first
        picked = rows[row_approx[rows] >= floor[owner]]
        values = fine_dots(passages.vectors, picked, planes)
        values[~passages.valid[picked]] = -np.inf
        row_approx[picked] = values
        near[positions] = 2 * second
        high = np.full(positions.size, -np.inf)
        low = np.full(positions.size, -np.inf)
        if rows.size:
            firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            a, b = _segment_top_two(row_approx[rows], firsts)
            high[owner[firsts]], low[owner[firsts]] = a, b
        out = card_score(*_with_card(own, high, low))
        out[~present[positions]] = 0.0
        return out

    def exact(positions: np.ndarray) -> np.ndarray:
        own = exact_dots(np.take(matrix, positions, axis=0), q64)
        rows, owner = _rows_of(bounds, positions)
        lo, counts = bounds[positions], bounds[positions + 1] - bounds[positions]
        floor = _second_of(own, row_approx[rows], owner) - near[positions]
        keep = passages.valid[rows] & (row_approx[rows] >= floor[owner])
        rows, owner = rows[keep], owner[keep]
        scores = exact_dots(passages.source.read(passages.rowid[rows]), q64)
        # every candidate value of every card: its passages, then its own vector (-1);
        # sorted by card, value (high first), then a passage before the card vector and
        # the lowest ordinal first (a tie is given to the passage, which says where)
        values = np.r_[scores, own]
        whose = np.r_[owner, np.arange(positions.size)]
        ordinal = np.r_[passages.ordinal[rows], np.full(positions.size, -1)]
        row = np.r_[rows, np.full(positions.size, -1)]
        order = np.lexsort((np.where(ordinal < 0, np.iinfo(np.int64).max, ordinal),
                            -values, whose))
        values, whose, ordinal, row = values[order], whose[order], ordinal[order], row[order]
        firsts = np.flatnonzero(np.r_[True, whose[1:] != whose[:-1]])
        has_two = np.r_[firsts[1:], whose.size] - firsts >= 2
        high = values[firsts]
        low = np.where(has_two, values[np.minimum(firsts + 1, whose.size - 1)], -np.inf)
        out = card_score(high, low)
        # the card vector's span: the card's first passage, which it reads
        first_end = np.zeros(positions.size, dtype=np.int64)
        first_end[counts > 0] = passages.end[lo[counts > 0]]
        best = _Contributor.of(passages, ordinal[firsts], row[firsts], first_end)
        next_ = _Contributor.of(passages, np.where(has_two, ordinal[np.minimum(
            firsts + 1, whose.size - 1)], -2), np.where(has_two, row[np.minimum(
                firsts + 1, whose.size - 1)], -1), first_end)
        live = present[positions]
        out[~live] = 0.0
        chosen.append(Winners(positions[live], best.only(live), next_.only(live)))
        return out

    # Pass 2 pays only when its bound is well inside the first (always, for unit rows):
    # a card pass 1 left out must stay below what pass 3's choice can reach.
    if passages.vectors.fine is not None and first >= 3 * second:
        scores = refine(refine(approx, finer, cut, 2 * first, sign=first), exact, cut,
                        2 * second)
    else:
        scores = refine(approx, exact, cut, 2 * first)
    scores[~present] = 0.0
    return scores, chosen[0] if chosen else Winners.none()
