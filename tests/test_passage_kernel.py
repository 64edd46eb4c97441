"""Best-passage scoring split over threads, against the float32 answer worked out row by row.

``best_passage_scores`` splits its first pass (and its gathers of scattered rows) over
the CPUs once there are enough rows; these tests lower those thresholds and ask for an
odd number of parts, so the split runs on a small index on any machine, with cards of
every shape: many passages, none, absent from the index, and passages left out.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hqltui.core import passage_scores, threads
from hqltui.core.int8_codes import first_stage_bound, first_stage_error, held_codes, query_planes
from hqltui.core.passage_index import Float32Rows, PassageIndex
from hqltui.core.passage_scores import best_passage_scores, exact_dots, first_pass
from hqltui.core.ranking import rank_indices
from producer.index_format import pack
from producer.passages import DEFAULT_RECIPE
from tests.helpers.passage_rule import blended

DIMS = 384
WINDOW = 50


def random_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIMS))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def build(tmp_path: Path, seed: int, cards: int = 900) -> tuple[PassageIndex, np.ndarray,
                                                                  np.ndarray, np.ndarray]:
    """A ``PassageIndex`` as the reader holds one: random unit vectors (so thousands of
    scores lie near zero and near each other), 0 to 12 passages a card, every 9th card
    absent from the index (no vector, no passage), every 97th passage left out."""
    rng = np.random.default_rng(seed)
    present = np.arange(cards) % 9 != 4
    counts = np.where(present, rng.integers(0, 13, cards), 0)
    matrix = random_rows(rng, cards)
    matrix[~present] = 0.0
    rows = random_rows(rng, int(counts.sum()))
    valid = np.arange(rows.shape[0]) % 97 != 5
    index = held_index(tmp_path / f"chunk-{seed}.sqlite", matrix, counts, rows, valid)
    return index, matrix, present, rows


def held_index(path: Path, matrix: np.ndarray, counts: np.ndarray, rows: np.ndarray,
               valid: np.ndarray) -> PassageIndex:
    """The ``PassageIndex`` of these card vectors and passages (``counts`` a card, in card
    order), the left-out rows held as zeros, their float32 rows stored in ``path``."""
    n = rows.shape[0]
    held_rows = np.where(valid[:, None], rows, np.float32(0.0))
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("CREATE TABLE chunk (embedding BLOB NOT NULL)")
    conn.executemany("INSERT INTO chunk (rowid, embedding) VALUES (?, ?)",
                     ((i + 1, pack(rows[i])) for i in range(n)))
    conn.commit()
    bounds = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    card = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), counts)
    ordinal = np.arange(n, dtype=np.int64) - bounds[card]
    return PassageIndex(
        recipe=DEFAULT_RECIPE, digest="test", vectors=held_codes(held_rows, planes=2),
        cards=held_codes(matrix, planes=2), card=card, ordinal=ordinal, start=ordinal * 10,
        end=ordinal * 10 + 10, rowid=np.arange(1, n + 1, dtype=np.int64), valid=valid,
        bounds=bounds, source=Float32Rows(conn, DIMS), per_card_max=int(counts.max()),
        left_out=np.flatnonzero(~valid))


def float32_answer(index: PassageIndex, matrix: np.ndarray, present: np.ndarray,
                   rows: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each card's float32 score by the rule (``blended``: its card vector and its best
    kept passage) and the ordinal that answered (-1: the card vector)."""
    q64 = q.astype(np.float64)
    card_scores = exact_dots(matrix, q64)
    row_scores = exact_dots(rows, q64)
    want, won = np.empty(card_scores.size), np.full(card_scores.size, -1)
    for i in range(card_scores.size):
        lo, hi = int(index.bounds[i]), int(index.bounds[i + 1])
        kept = [(j - lo, row_scores[j]) for j in range(lo, hi) if index.valid[j]]
        want[i], won[i] = blended(card_scores[i], kept)
    want[~present] = 0.0
    return want, won


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three parts even on a small index and on a one-CPU machine."""
    monkeypatch.setattr(threads, "worker_count", lambda: 3)
    monkeypatch.setattr(passage_scores, "SPLIT_ROWS", 256)
    monkeypatch.setattr(passage_scores, "GATHER_SPLIT", 64)


@pytest.fixture
def one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second-plane bound too wide to pay: pass 1's doubtful cards go to pass 3."""
    monkeypatch.setattr(passage_scores, "second_stage_error", lambda *held: 1.0)


@pytest.mark.parametrize(("seed", "passes"), [(1, "three"), (2, "three"), (3, "one_pass")])
def test_split_scoring_ranks_and_counts_as_float32(tmp_path: Path, split: None,
                                                   seed: int, passes: str,
                                                   request: pytest.FixtureRequest) -> None:
    if passes == "one_pass":
        request.getfixturevalue("one_pass")
    index, matrix, present, rows = build(tmp_path, seed)
    assert len(passage_scores._parts(index)) == 3
    queries = random_rows(np.random.default_rng(100 + seed), 6)
    for q in queries:
        want, won = float32_answer(index, matrix, present, rows, q)
        scores, winners = best_passage_scores(matrix, present, index, q, WINDOW)
        chosen, total = rank_indices(scores, WINDOW)
        expected, expected_total = rank_indices(want, WINDOW)
        assert chosen.tolist() == expected.tolist()
        assert scores[chosen].tolist() == want[chosen].tolist()  # bit for bit
        assert total == expected_total  # every card's sign, near zero as well
        for i in chosen.tolist():
            got = winners[i]
            assert (-1 if got.ordinal is None else got.ordinal) == won[i]
            # a passage that won names the card vector beside it, with the rest of the weight
            assert (got.second is None) == (won[i] == -1)
    index.source.close()


def test_the_first_pass_split_is_the_single_pass_bit_for_bit(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    index, matrix, present, rows = build(tmp_path, 3)
    planes = query_planes(random_rows(np.random.default_rng(7), 1)[0])
    whole_best, whole_own, whole_rows = first_pass(index, planes.codes[0], planes.scale[0])
    assert len(passage_scores._parts(index)) == 1
    object.__delattr__(index, "_parts")
    monkeypatch.setattr(threads, "worker_count", lambda: 3)
    monkeypatch.setattr(passage_scores, "SPLIT_ROWS", 256)
    split_best, split_own, split_rows = first_pass(index, planes.codes[0], planes.scale[0])
    assert len(passage_scores._parts(index)) == 3
    assert split_best.tobytes() == whole_best.tobytes()
    assert split_own.tobytes() == whole_own.tobytes()
    assert split_rows.tobytes() == whole_rows.tobytes()
    assert np.all(np.isneginf(split_rows[index.left_out]))
    empty = (index.bounds[1:] == index.bounds[:-1]) & present
    assert empty.any()  # cards with a vector and no passage: scored by the vector alone
    index.source.close()


def test_each_card_is_bounded_by_its_own_rows(tmp_path: Path) -> None:
    """A card's first-pass bound is made of the largest error of its own rows (its vector
    and its passages), worked out from the float32 rows here: every card's first-pass
    score lies within it, and it is narrower than the one bound for all rows."""
    index, matrix, present, rows = build(tmp_path, 4)
    held_rows = np.where(index.valid[:, None], rows, np.float32(0.0)).astype(np.float64)

    def error(row: np.ndarray, codes: np.ndarray, scale: np.float32) -> float:
        return float(np.linalg.norm(row - codes.astype(np.float64) * np.float64(scale)))

    for i in range(matrix.shape[0]):
        lo, hi = int(index.bounds[i]), int(index.bounds[i + 1])
        own = [error(matrix[i].astype(np.float64), index.cards.codes[i], index.cards.scale[i])]
        own += [error(held_rows[j], index.vectors.codes[j], index.vectors.scale[j])
                for j in range(lo, hi)]
        assert index.card_errors()[i] == pytest.approx(max(own), rel=1e-12, abs=1e-15)
    for q in random_rows(np.random.default_rng(40), 4):
        planes = query_planes(q)
        best, own_vector, _ = first_pass(index, planes.codes[0], planes.scale[0])
        approx = passage_scores.card_score(own_vector, best)
        want, _ = float32_answer(index, matrix, present, rows, q)
        bound = first_stage_bound(planes.norm, planes.error, index.card_errors(),
                                  max(index.cards.length, index.vectors.length))
        off = np.abs(approx - want)[present]
        assert np.all(off <= bound[present])
        everyone = first_stage_error(q, planes.error, index.cards, index.vectors)
        assert np.median(bound[present]) < 0.9 * everyone
    index.source.close()


def scored_as(q: np.ndarray, scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """float32 unit rows whose products with the unit query ``q`` are ``scores`` (to
    float32's rounding): ``s·q`` plus a random direction orthogonal to it."""
    q64 = q.astype(np.float64)
    noise = rng.standard_normal((scores.size, q.size))
    noise -= np.outer(noise @ q64, q64)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    rows = scores[:, None] * q64 + np.sqrt(1 - scores[:, None] ** 2) * noise
    return rows.astype(np.float32)


@pytest.mark.parametrize("seed", [1, 2])
def test_cards_whose_sign_hangs_on_one_of_several_close_passages_count_as_float32(
        tmp_path: Path, seed: int) -> None:
    """Cards far outside the cut, each with its card vector below zero and passages
    within a few thousandths of a quarter of its magnitude (the score's sign turns on
    whether one of them beats it): the first int8 pass cannot tell them apart, so their
    order there is not their float32 order. The count above zero is still the float32
    one: a card is settled by the passage pass 1 put first only when that passage surely
    beats the quarter, and otherwise every close passage is scored."""
    rng = np.random.default_rng(seed)
    q = random_rows(rng, 1)[0]
    top, doubtful, per_card = 60, 1500, 4
    card_scores = np.r_[rng.uniform(0.5, 0.7, top), rng.uniform(-0.06, -0.01, doubtful)]
    quarter = -card_scores[top:] * (1 - passage_scores.WEIGHT) / passage_scores.WEIGHT
    passage_at = (np.repeat(quarter, per_card)
                  + rng.uniform(-0.006, 0.0015, doubtful * per_card))
    counts = np.r_[np.zeros(top, dtype=np.int64), np.full(doubtful, per_card)]
    matrix = scored_as(q, card_scores, rng)
    rows = scored_as(q, passage_at, rng)
    index = held_index(tmp_path / "close.sqlite", matrix, counts, rows,
                       np.ones(rows.shape[0], dtype=bool))
    present = np.ones(matrix.shape[0], dtype=bool)
    want, _ = float32_answer(index, matrix, present, rows, q)
    positive = int((want[top:] > 0).sum())
    assert 0.2 * doubtful < positive < 0.8 * doubtful  # the signs really are in question
    for cut in (5, WINDOW):
        scores, _ = best_passage_scores(matrix, present, index, q, cut)
        chosen, total = rank_indices(scores, cut)
        assert chosen.tolist() == rank_indices(want, cut)[0].tolist()
        assert scores[chosen].tolist() == want[chosen].tolist()
        assert total == top + positive
        assert np.array_equal(scores > 0, want > 0)  # card by card, not only the count
    index.source.close()
