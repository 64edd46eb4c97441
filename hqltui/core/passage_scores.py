"""Passage scoring: every card's score is its card vector's, raised by ``WEIGHT`` of the
margin by which its best passage beats it (``card_score``), exact (float32, bit for bit)
wherever it can decide the top of a ranking.

Why not the best passage alone: a card's single best window is often a short tail (a
`See also` list, a title and a few names) that sits close to a vague query, and it then
outranks a card whose own text answers; the card vector keeps a fifth of the say
(docs/passages.md, "How the card score rule and the recipe were chosen").

Three passes over fewer rows each (``best_passage_scores``): the first int8 plane over
every row, two planes over the cards that could reach the cut, the stored float32 rows of
the passages that could still decide it. Each pass only chooses, within a proven bound
(``hqltui.core.int8_codes``; for the first pass, each card's own), which cards the next
must score. The score is
``(1 - WEIGHT)·card + WEIGHT·best``, so it moves by at most the most the card vector or
the best moves: each pass's bound carries over unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from hqltui.core import threads
from hqltui.core.int8_codes import (
    Codes,
    QueryPlanes,
    first_stage_bound,
    first_stage_error,
    query_planes,
    second_stage_error,
)
from hqltui.core.passage_index import PassageIndex
from hqltui.core.ranking import Passage, in_doubt, refine

# The best passage's share of a card's score; the card vector keeps the rest.
WEIGHT = 0.8
# Rows per thread below which the first pass is not split (a thread's start costs more).
SPLIT_ROWS = 16384
# Rows per thread below which a gather of scattered rows (pass 2) is not split.
GATHER_SPLIT = 2048
# Passage rows a sign-only card's leader-first order must spare before it pays for its
# own array work (about as much as gathering this many rows).
LEAD_FIRST_ROWS = 256


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
    """Pass 1 of ``best_passage_scores``: each card's approximate best (its own vector or a
    passage; -inf for a card with neither), its own vector's approximate score, and each
    passage row's approximate score, all in float64 on the first int8 plane (one int8
    product per row, scaled). Each thread scores its cards and their passages and takes
    its cards' maxima while the scores are still in cache; left-out rows score -inf."""
    import numkong

    best = np.empty(passages.bounds.size - 1, dtype=np.float64)
    own = np.empty(passages.bounds.size - 1, dtype=np.float64)
    rows = np.empty(passages.count, dtype=np.float64)
    q = q_codes[None, :]
    cards, vectors = passages.cards, passages.vectors

    def run(part: _Part) -> None:
        mine, scored = best[part.a : part.b], rows[part.lo : part.hi]
        if mine.size:
            numkong.cdist(q, cards.codes[part.a : part.b], metric="dot", out=mine[None, :])
            mine *= cards.scale[part.a : part.b]
            mine *= q_scale
            own[part.a : part.b] = mine
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
        for f in [threads.pool().submit(run, part) for part in parts]:
            f.result()
    return best, own, rows


def card_score(card: np.ndarray, best: np.ndarray) -> np.ndarray:
    """The rule: ``(1 - WEIGHT)·card + WEIGHT·best``, ``best`` the better of the card
    vector and its best passage (so a card whose own vector beats its passages scores
    that vector's score). Every pass and the reference compute it in this order."""
    return (1.0 - WEIGHT) * card + WEIGHT * best



def exact_dots(rows32: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of float32 rows with the query: the same arithmetic for a
    row however many rows are asked at once (so a ranking is the same bit for bit)."""
    return np.einsum("ij,j->i", rows32.astype(np.float64), q64)


class Winners(Mapping[int, Passage]):
    """The answering passage of each card scored exactly, by vault position; a
    ``Passage`` is made only for the cards a ranking shows. Where a passage beat the card
    vector, the card vector is its ``second`` contributor (``WEIGHT`` and the rest)."""

    def __init__(self, positions: np.ndarray, ordinal: np.ndarray, start: np.ndarray,
                 end: np.ndarray, first_end: np.ndarray) -> None:
        self._positions = positions  # sorted
        self._ordinal, self._start, self._end = ordinal, start, end  # ordinal -1: the card
        self._first_end = first_end  # where the card's first passage ends (its vector's span)

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
        if ordinal < 0:
            return Passage(None, int(self._start[i]), int(self._end[i]))
        card = Passage(None, 0, int(self._first_end[i]))
        return Passage(ordinal, int(self._start[i]), int(self._end[i]), second=card,
                       weight=WEIGHT)

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


def _leaders(values: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per owner (``owner`` sorted), a mask of its largest value's row (the first of
    equal largest)."""
    out = np.zeros(values.size, dtype=bool)
    if values.size:
        firsts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        lengths = np.diff(np.r_[firsts, values.size])
        tops = np.flatnonzero(values == np.repeat(np.maximum.reduceat(values, firsts), lengths))
        out[tops[np.r_[True, owner[tops][1:] != owner[tops][:-1]]]] = True
    return out


def best_passage_scores(
    matrix: np.ndarray,
    present: np.ndarray,
    passages: PassageIndex,
    vector: np.ndarray,
    cut: int | None,
) -> tuple[np.ndarray, Winners]:
    """Every card's score (``card_score`` of its card vector and the best of that vector
    and its passages), exact where it can decide the top ``cut`` (and its sign); and, for
    those cards, which passage won.

    Three passes, each over fewer rows, each within a proven bound of the float32 score
    (the score moves by at most the most the card vector or the best moves):

    1. every card vector and passage, first int8 plane (``first_pass``,
       ``first_stage_error``), each card's best taken by the thread that scored it;
    2. the cards that could reach the cut or whose sign is in doubt by that (``in_doubt``,
       each card by its own first bound, ``PassageIndex.card_errors``: made of its own
       rows' errors, so a card held closely is not in doubt as long as the worst one):
       their card vectors, and the passages that could be their best, on two int8
       planes (``fine_dots``, ``second_stage_error``, about 1/100 of the first bound);
       a card surely outside the cut whose card vector is surely above
       zero needs no passage, and one whose card vector is surely below zero (only its
       sign asked) scores its first-pass best passage first, the others only when that
       one does not surely beat a quarter of the card vector;
    3. the cards that pass 2 cannot place (``refine`` again, twice the second bound,
       among pass 2's cards only: ``in_doubt`` proved every other card placed):
       their float32 card vectors and the stored float32 rows of the passages that could
       be their best, read back from the file, with ``exact_dots``.

    A card outside a pass's choice is provably outside the cut (and of known sign), so
    the ranking within the cut is the float32 one, bit for bit."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    q64 = q32.astype(np.float64)
    planes = query_planes(q32)
    k, t = planes.codes[0], planes.scale[0]
    # pass 2 overwrites the rows it reads in ``row_approx``; ``top`` stays pass 1's
    top, own, row_approx = first_pass(passages, k, t)
    best_approx = np.where(present, top, 0.0)
    # a card with no vector scores 0 in the end; -inf keeps it out of every pass's choice
    # (``in_doubt`` never picks it), so the passes below see only cards with a vector
    approx = np.where(present, card_score(own, top), -np.inf)
    bounds = passages.bounds
    first = first_stage_error(q32, planes.error, passages.cards, passages.vectors)
    # each card's own first-pass bound: at most ``first``, narrower for a card whose rows
    # were held closer than the worst row (its sign is in doubt only within it)
    own_first = np.asarray(first_stage_bound(
        planes.norm, planes.error, passages.card_errors(),
        max(passages.cards.length, passages.vectors.length)))
    second = second_stage_error(planes, passages.cards, passages.vectors)
    # per card, how far below its best a passage may score and still be its best
    near = 2 * own_first
    chosen: list[Winners] = []

    # The cards pass 1 cannot place, and a lower bound on the cut's score: a card whose
    # upper bound is below it is in doubt only for its sign, which its card vector settles
    # when that is surely above zero.
    doubtful, floor_of_cut = in_doubt(approx, cut, 2 * own_first, sign=own_first)

    def card_values(positions: np.ndarray) -> np.ndarray:
        """The card vectors' scores within ``second`` (two planes; exact without them)."""
        if passages.cards.fine is None:
            return exact_dots(np.take(matrix, positions, axis=0), q64)
        return fine_dots(passages.cards, positions, planes)

    def score_rows(picked: np.ndarray) -> None:
        """Pass 2's scores of passage rows, in place of their first-pass ones."""
        if not picked.size:
            return
        values = fine_dots(passages.vectors, picked, planes)
        values[~passages.valid[picked]] = -np.inf
        row_approx[picked] = values

    def finer(positions: np.ndarray) -> np.ndarray:
        out = card_values(positions)
        outside = approx[positions] + own_first[positions] < floor_of_cut
        # outside the cut, surely above zero: the card vector says both
        full = ~(outside & (out > second))
        rest = positions[full]
        if rest.size:
            rows, owner = _rows_of(bounds, rest)
            card = out[full]
            # The rows that could be the card's best and could be above zero: a row below
            # minus the card's bound is negative, so it neither decides the sign nor beats
            # a positive best; one more than twice the bound below the card's first-pass
            # best cannot be it. A row left out keeps its first-pass -inf.
            bound = own_first[rest]
            floor = np.maximum(best_approx[rest] - 2 * bound, -bound)
            # Outside the cut with its card vector surely below zero, only the card's sign
            # is asked: it is above zero exactly when its best passage beats
            # ``-card·(1 - WEIGHT)/WEIGHT`` (a quarter of the card vector), so a row surely
            # below that cannot change it. If one of them is the card's best, the card is
            # below zero and pass 3 may score it below its float32 score: the sign holds.
            sign_only = outside[full] & (card + second < 0)
            beats = -(card + second) * (1.0 - WEIGHT) / WEIGHT - bound
            floor = np.where(sign_only, np.maximum(floor, beats), floor)
            keep = np.take(row_approx, rows) >= floor[owner]
            picked, picked_owner = rows[keep], owner[keep]
            settled = np.zeros(rest.size, dtype=bool)
            lead = np.full(rest.size, -np.inf)
            asked = sign_only[picked_owner]
            if np.count_nonzero(asked) - np.count_nonzero(sign_only) > LEAD_FIRST_ROWS:
                # A sign-only card scores its first-pass best row first: that row alone
                # settles most of them, when it surely beats a quarter of the card vector
                # (the card is then above zero, and its other rows need not be read).
                # Pass 1's scores are still in ``row_approx``: the best row is the one
                # equal to the card's best.
                leading = ~asked | (np.take(row_approx, picked)
                                    == best_approx[rest][picked_owner])
                score_rows(picked[leading])
                lead = _group_max(row_approx[picked[leading]], picked_owner[leading],
                                  rest.size)
                settled = sign_only & (lead - second
                                       > -(card - second) * (1.0 - WEIGHT) / WEIGHT)
                score_rows(picked[~leading & ~settled[picked_owner]])
            else:
                score_rows(picked)
            # a settled card's other rows keep their first-pass scores: pass 3, should it
            # read the card, looks as far below its best as pass 1's bound
            near[rest[~settled]] = 2 * second
            # The best among the rows scored: a row not picked cannot be the card's best
            # unless every row is below zero, or (sign-only) none beats a quarter of the
            # card vector, and the card is below zero either way. A settled card's best
            # is its leader's: a lower bound within ``second`` of its float32 one, above
            # zero, and, like every card outside the cut, exact only in its sign.
            best = np.maximum(card, np.where(settled, lead, _group_max(
                np.take(row_approx, picked), picked_owner, rest.size)))
            out[full] = card_score(card, best)
        return out

    def exact(positions: np.ndarray) -> np.ndarray:
        card = exact_dots(np.take(matrix, positions, axis=0), q64)
        out = card.copy()  # the best of the card vector and its passages, then the score
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
            # the first of equal best (lowest ordinal) in each card
            first_top = np.flatnonzero(_leaders(scores, owner))
            group_max = scores[first_top]
            mine = owner[first_top]
            won = group_max >= out[mine]  # a tie: the passage, which says where
            at, j = mine[won], rows[first_top[won]]
            out[at] = group_max[won]
            ordinal[at], start[at], end[at] = (passages.ordinal[j], passages.start[j],
                                               passages.end[j])
        first_end = np.zeros(positions.size, dtype=np.int64)
        first_end[counts > 0] = passages.end[lo[counts > 0]]
        chosen.append(Winners(positions, ordinal, start, end, first_end))
        return card_score(card, out)

    # Every card outside ``doubtful`` is provably outside the cut and of known sign
    # already, so the later passes look only among those cards. Pass 2 pays only when its
    # bound is well inside the first (always, for unit rows): a card pass 1 left out must
    # stay below what pass 3's choice can reach.
    scores = approx.copy()
    two_passes = passages.vectors.fine is not None and first >= 3 * second
    if doubtful.size and two_passes:
        scores[doubtful] = refine(finer(doubtful), lambda at: exact(doubtful[at]), cut,
                                  2 * second)
    elif doubtful.size:
        scores[doubtful] = exact(doubtful)
    scores[~present] = 0.0
    empty = np.zeros(0, dtype=np.int64)
    return scores, chosen[0] if chosen else Winners(empty, empty, empty, empty, empty)
