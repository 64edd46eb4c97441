"""The one rank order: score desc, ties by name, scores <= 0 dropped."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hqltui.core.ranking import (
    ArmScore,
    Hit,
    Ranking,
    Refusal,
    Retrieval,
    Warning,
    kth_largest,
    name_key,
    rank,
    rank_indices,
    refine,
)


def reference(scores: list[float], names: list[str], limit: int | None) -> list[str]:
    kept = [(s, n) for s, n in zip(scores, names, strict=True) if s > 0]
    kept.sort(key=lambda sn: (-sn[0], sn[1]))
    return [n for _, n in kept][:limit]


def test_scores_at_or_below_zero_and_nan_are_dropped() -> None:
    names = ["a", "b", "c", "d", "e"]
    hits, total = rank(np.array([0.0, -0.5, math.nan, 0.2, -0.0]), names)
    assert [h.card for h in hits] == ["d"]
    assert total == 1


def test_ties_break_by_name_and_ranks_are_one_based() -> None:
    names = ["a", "b", "c", "d"]
    hits, total = rank(np.array([0.5, 0.9, 0.5, 0.5]), names)
    assert [(h.card, h.rank) for h in hits] == [("b", 1), ("a", 2), ("c", 3), ("d", 4)]
    assert total == 4
    assert hits[0] == Hit("b", 0.9, 1)


def test_a_tie_straddling_the_limit_is_cut_by_name() -> None:
    # 10 cards all tied; argpartition alone would keep an arbitrary 3.
    names = [f"card-{i:02d}" for i in range(10)]
    scores = np.full(10, 0.25)
    hits, total = rank(scores, names, 3)
    assert [h.card for h in hits] == ["card-00", "card-01", "card-02"]
    assert total == 10
    reordered = scores[::-1].copy()
    names_rev = names[::-1]
    hits, _ = rank(reordered, names_rev, 3, key=name_key(names_rev))
    assert [h.card for h in hits] == ["card-00", "card-01", "card-02"]


def test_limit_zero_and_limit_beyond_the_total() -> None:
    names = ["a", "b"]
    assert rank(np.array([0.1, 0.2]), names, 0) == ((), 2)
    hits, total = rank(np.array([0.1, 0.2]), names, 10)
    assert [h.card for h in hits] == ["b", "a"] and total == 2


def test_only_the_limit_becomes_objects() -> None:
    scores = np.linspace(1.0, 2.0, 100_000)
    names = [f"n{i:06d}" for i in range(100_000)]
    hits, total = rank(scores, names, 5)
    assert len(hits) == 5 and total == 100_000
    assert hits[0].card == "n099999"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([-1.0, 0.0, 0.1, 0.2, 0.3, 0.5, 1.0]), min_size=0, max_size=40),
    st.one_of(st.none(), st.integers(min_value=0, max_value=45)),
    st.randoms(use_true_random=False),
)
def test_the_rank_order_matches_a_plain_sort(scores, limit, rnd) -> None:
    names = [f"c{i:02d}" for i in range(len(scores))]
    rnd.shuffle(names)
    got, total = rank(np.array(scores, dtype=np.float64), names, limit, key=name_key(names))
    assert [h.card for h in got] == reference(scores, names, limit)
    assert total == sum(1 for s in scores if s > 0)


def test_rank_indices_returns_positions() -> None:
    chosen, total = rank_indices(np.array([0.0, 3.0, 1.0, 3.0]), 2)
    assert chosen.tolist() == [1, 3] and total == 3


def test_refine_makes_the_cut_exact() -> None:
    exact = np.array([0.30000000000000004, 0.3, 0.1, 0.0])
    approx = exact + np.array([-1e-13, 1e-13, 0.0, 1e-14])  # the fast pass got the order wrong
    refined = refine(approx, lambda pos: exact[pos], 1, 1e-12)
    hits, total = rank(refined, ["a", "b", "c", "d"], 1)
    assert hits[0].card == "a" and hits[0].score == exact[0]
    assert total == 3


def test_refine_takes_each_positions_own_bound() -> None:
    """A bound per position: a card held far less closely than the others is still found
    when it can reach the cut, and the others are recomputed only where theirs says."""
    exact = np.array([1.0, 0.9, 0.92, 0.45, -0.01, 0.3])
    approx = np.array([0.995, 0.905, 0.74, 0.455, 0.005, 0.3])  # card 2 off by 0.18
    bound = np.array([0.01, 0.01, 0.2, 0.01, 0.02, 0.01])
    asked: list[int] = []

    def recompute(pos: np.ndarray) -> np.ndarray:
        asked.extend(pos.tolist())
        return exact[pos]

    refined = refine(approx, recompute, 2, 2 * bound, sign=bound)
    chosen, total = rank_indices(refined, 2)
    assert chosen.tolist() == [0, 2] and total == 5  # card 4 is below zero, found so
    assert sorted(asked) == [0, 1, 2, 4]  # 3 and 5 cannot reach the cut, signs sure
    # one narrow bound for all misses card 2: the per-position bound is what finds it
    narrow = rank_indices(refine(approx, lambda pos: exact[pos], 2, 0.02), 2)[0]
    assert narrow.tolist() == [0, 1]


def test_shapes_serialise() -> None:
    retrieval = Retrieval("hybrid", "q", "ix", "m", "r", "rrf", fusion="rrf", k=60.0,
                          weights={"bm25": 1.0, "semantic": 1.0},
                          windows={"bm25": 50, "semantic": 50})
    hit = Hit("a", 0.5, 1, {"bm25": ArmScore(1, 2.0), "semantic": None})
    ranking = Ranking((hit,), retrieval, (Warning("stale", "x", ("a",)),), None, 1)
    data = ranking.to_json()
    assert data["hits"][0]["arms"] == {"bm25": {"rank": 1, "score": 2.0}, "semantic": None}
    assert data["retrieval"]["k"] == 60.0 and data["retrieval"]["windows"]["bm25"] == 50
    assert data["warnings"][0] == {"kind": "stale", "message": "x", "cards": ["a"]}
    refused = Ranking.refused(Refusal("no", "fix it"))
    assert not refused.ok and refused.to_json()["refusal"] == {"message": "no", "fix": "fix it"}


@pytest.mark.parametrize("limit", [None, 1, 2])
def test_negative_zero_is_no_evidence(limit) -> None:
    assert rank(np.array([-0.0, 0.0]), ["a", "b"], limit) == ((), 0)


@pytest.mark.parametrize("size", [1, 7, 900, 8192, 40000])
def test_kth_largest_is_the_partitions_value(size: int) -> None:
    """The sampled shortcut gives what ``np.partition`` gives: on ties, on -inf, and
    when the largest values hide between the sample's points, and when they are the
    sample's points (so the shortcut must fall back to every value)."""
    rng = np.random.default_rng(size)
    cases = [rng.standard_normal(size), np.round(rng.standard_normal(size), 1),
             np.where(rng.random(size) < 0.9, -np.inf, rng.standard_normal(size))]
    hidden = rng.standard_normal(size) + 10
    hidden[::16] = -10.0
    exposed = rng.standard_normal(size) - 10
    exposed[::16] += 20  # the sample's points are the largest: too few reach its threshold
    cases += [hidden, exposed]
    for values in cases:
        for k in sorted({1, 2, 50, size // 3 + 1, size}):
            if k <= size:
                assert kth_largest(values, k) == np.partition(values, size - k)[size - k]
