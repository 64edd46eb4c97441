"""Reciprocal rank fusion through hybrid.fuse: the arithmetic and the laws, not that it wins
(the other methods: tests/test_fusion.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hqltui.core.fusion import FusionConfig
from hqltui.core.hybrid import ArmScores, fuse
from hqltui.core.ranking import ArmScore, Refusal, Retrieval, Warning
from hqltui.core.session import Session
from tests.helpers.indexed_vaults import unit, write_test_index, write_vault


def arm(name: str, scores: dict[str, float], names: list[str], **kw) -> ArmScores:
    arr = np.array([scores.get(n, 0.0) for n in names], dtype=np.float64)
    retrieval = Retrieval(name, "q", f"{name}-index", f"{name}-model", "r1", "m",
                          query_vector_source="index" if name == "semantic" else "text")
    return ArmScores(name, arr, retrieval, **kw)


def rfc0048_arms() -> tuple[list[str], list[ArmScores]]:
    """X: lexical 1, semantic 101. A: lexical 2, semantic 100. Semantic 1..99 lexical-free."""
    sem = {f"s{i:03d}": 1000.0 - i for i in range(1, 100)}
    sem["a-card"] = 1000.0 - 100
    sem["x-card"] = 1000.0 - 101
    sem.update({f"t{i:03d}": 500.0 - i for i in range(50)})  # more below X
    lex = {"x-card": 2.0, "a-card": 1.0}
    names = sorted(set(sem) | set(lex))
    return names, [arm("bm25", lex, names), arm("semantic", sem, names)]


def fused(names, arms, *, window, limit, k=60.0, weights=None):
    w = weights or {"bm25": 1.0, "semantic": 1.0}
    config = FusionConfig("rrf", k=k, weights=(w["bm25"], w["semantic"]))
    return fuse(arms, names, query="q", config=config, window=window, limit=limit)


def test_rfc0048_counter_example_fixed_window_keeps_the_prefix() -> None:
    names, arms = rfc0048_arms()
    r100 = fused(names, arms, window=100, limit=100)
    r101 = fused(names, arms, window=100, limit=101)
    assert r101.names()[:100] == r100.names()
    a, x = r100.hit("a-card"), r101.hit("x-card")
    assert a is not None and a.score == 1 / 62 + 1 / 160
    assert x is not None and x.score == 1 / 61  # lexical only: semantic rank 101 is outside
    assert r100.names().index("a-card") < r101.names().index("x-card")


def test_rfc0048_a_window_sized_by_the_limit_would_change_the_winner() -> None:
    # The coupling that would break the stability law: window = max(limit, 100), limit 101.
    names, arms = rfc0048_arms()
    coupled = fused(names, arms, window=101, limit=101)
    fixed = fused(names, arms, window=100, limit=101)
    assert coupled.names().index("x-card") < coupled.names().index("a-card")
    assert fixed.names().index("a-card") < fixed.names().index("x-card")


def test_a_card_found_by_one_arm_scores_exactly_w_over_k_plus_rank() -> None:
    names = ["a", "b", "c", "d"]
    arms = [arm("bm25", {"a": 3.0, "b": 2.0}, names),
            arm("semantic", {"c": 0.9, "d": 0.8, "a": 0.1}, names)]
    r = fused(names, arms, window=10, limit=10, k=60.0,
              weights={"bm25": 0.7, "semantic": 1.3})
    b, d, a = r.hit("b"), r.hit("d"), r.hit("a")
    assert b is not None and b.score == 0.7 / (60 + 2)
    assert d is not None and d.score == 1.3 / (60 + 2)
    assert a is not None and a.score == 0.7 / (60 + 1) + 1.3 / (60 + 3)
    assert b.arms == {"bm25": ArmScore(2, 2.0), "semantic": None}
    assert a.arms == {"bm25": ArmScore(1, 3.0), "semantic": ArmScore(3, 0.1)}


def test_ties_at_a_windows_edge_are_cut_by_name() -> None:
    names = ["a", "b", "c", "d", "e"]
    arms = [arm("bm25", {"e": 0.9, "d": 0.5, "c": 0.5, "b": 0.5}, names),
            arm("semantic", {"a": 1.0}, names)]
    r = fused(names, arms, window=2, limit=10)
    chosen = {h.card for h in r.hits if h.arms["bm25"] is not None}
    assert chosen == {"e", "b"}  # b, c, d tie at rank 2; b wins by name
    assert r.hit("c") is None and r.hit("d") is None


def test_fused_ties_break_by_name() -> None:
    names = ["m", "n", "z"]
    arms = [arm("bm25", {"z": 1.0}, names), arm("semantic", {"n": 1.0}, names)]
    r = fused(names, arms, window=5, limit=5)
    assert r.names() == ["n", "z"] and r.hits[0].score == r.hits[1].score


def test_the_retrieval_records_k_weights_windows_and_both_arms() -> None:
    names, arms = rfc0048_arms()
    r = fused(names, arms, window=100, limit=5, k=30.0, weights={"bm25": 0.5, "semantic": 2.0})
    ret = r.retrieval
    assert ret is not None
    assert (ret.arm, ret.fusion, ret.k) == ("hybrid", "rrf", 30.0)
    assert dict(ret.weights or {}) == {"bm25": 0.5, "semantic": 2.0}
    assert dict(ret.windows or {}) == {"bm25": 100, "semantic": 100}
    assert [a.arm for a in ret.arms] == ["bm25", "semantic"]
    assert ret.query_vector_source == "index" and ret.approximate is False


def test_a_semantic_refusal_surfaces_in_hybrid_with_its_warnings() -> None:
    names = ["a"]
    stale = Warning("stale", "`a` is stale", ("a",))
    refusal = Refusal("the index holds no vector", "hql-semantics build --query \"q\"")
    arms = [arm("bm25", {"a": 1.0}, names),
            ArmScores("semantic", None, None, (stale,), refusal)]
    r = fused(names, arms, window=5, limit=5)
    assert r.refusal == refusal and r.hits == ()
    assert r.warnings == (stale,)


def test_through_a_session_the_limit_never_resizes_the_windows(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    words = ["owl", "heron", "fish", "dive", "nest", "weave", "night", "reed"]
    cards = {f"c{i:02d}": " ".join(rng.choice(words, 12)) for i in range(40)}
    root = write_vault(tmp_path / "v", cards,
                       extra_toml="[search]\nwindow = 7\nrrf_k = 10\nlimit = 3\n")
    # rrf_k without `fusion` keeps rrf
    vecs = {n: unit(rng.normal(size=8)) for n in cards}
    write_test_index(root, vecs, {"owl fish": unit(rng.normal(size=8))})
    session = Session.load(root, cache_dir=tmp_path / "cache")
    full = session.query("owl fish", limit=30).hybrid
    assert full.ok and 7 < len(full.hits) == full.total <= 14  # two windows of 7, overlapping
    for limit in range(1, len(full.hits) + 1):
        assert session.query("owl fish", limit=limit).hybrid.names() == full.names()[:limit]
    assert dict(full.retrieval.windows or {}) == {"bm25": 7, "semantic": 7}
    assert (full.retrieval.fusion, full.retrieval.k) == ("rrf", 10.0)
    assert session.query("owl fish").hybrid.names() == full.names()[:3]  # [search] limit
