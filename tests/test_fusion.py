"""The fusion methods (rrf, convex, adaptive): normalisations by hand, and RFC 0048's laws
for every method — not that any of them wins (that is measured: docs/ranking.md, benchmarks)."""

from __future__ import annotations

import numpy as np
import pytest

from hqltui.core.fusion import (
    AdaptiveParams,
    FusionConfig,
    QueryStats,
    adaptive_alpha,
    fuse_windows,
    identifier,
    name_share,
    normalise,
    parse_fusion,
    signals,
    sorted_union,
)
from hqltui.core.hybrid import ArmScores, fuse, fusion_summary, fusion_title
from hqltui.core.lexical import DocFreq, TermCounts
from hqltui.core.ranking import Retrieval

METHODS = [
    FusionConfig("rrf", k=60.0),
    FusionConfig("convex", alpha=0.6, norm="max"),
    FusionConfig("convex", alpha=0.6, norm="minmax"),
    FusionConfig("convex", alpha=0.6, norm="zscore"),
    FusionConfig("convex", alpha=0.6, norm="dbsf"),
    FusionConfig("adaptive", norm="zscore"),
    FusionConfig("adaptive", norm="dbsf"),
]
IDS = [c.label() for c in METHODS]


def arm(name: str, scores: dict[str, float], names: list[str]) -> ArmScores:
    arr = np.array([scores.get(n, 0.0) for n in names], dtype=np.float64)
    retrieval = Retrieval(name, "q", f"{name}-index", "m", "r1", "m",
                          query_vector_source="index" if name == "semantic" else "text")
    return ArmScores(name, arr, retrieval)


def fused(names, lex, sem, config, *, window=50, limit=None, query="q"):
    arms = [arm("bm25", lex, names), arm("semantic", sem, names)]
    stats = QueryStats(query, len(names), {})
    return fuse(arms, names, query=query, config=config, window=window, limit=limit,
                stats=stats)


# ------------------------------------------------------------------ normalisations


def test_each_normalisation_by_hand() -> None:
    s = np.array([4.0, 2.0, 1.0, 1.0])  # mean 2, population sigma sqrt(1.5)
    sigma = np.sqrt(1.5)
    assert normalise(s, "max").values.tolist() == [1.0, 0.5, 0.25, 0.25]
    assert normalise(s, "max").floor == 0.25
    assert normalise(s, "minmax").values.tolist() == [1.0, 1 / 3, 0.0, 0.0]
    assert normalise(s, "minmax").floor == 0.0
    z = normalise(s, "zscore")
    assert z.values == pytest.approx([2 / sigma, 0.0, -1 / sigma, -1 / sigma])
    assert z.floor == pytest.approx(-1 / sigma)
    d = normalise(s, "dbsf")
    assert d.values == pytest.approx([(4 - (2 - 3 * sigma)) / (6 * sigma),
                                      0.5, (1 - 2 + 3 * sigma) / (6 * sigma),
                                      (1 - 2 + 3 * sigma) / (6 * sigma)])


@pytest.mark.parametrize("norm", ["max", "minmax", "zscore", "dbsf"])
@pytest.mark.parametrize("scores", [[3.0], [2.0, 2.0, 2.0]])
def test_a_window_without_spread_gives_its_cards_1_and_the_rest_0(norm, scores) -> None:
    n = normalise(np.array(scores), norm)
    assert n.values.tolist() == [1.0] * len(scores) and n.floor == 0.0


def test_an_empty_window_contributes_nothing() -> None:
    n = normalise(np.array([]), "zscore")
    assert n.values.size == 0 and n.floor == 0.0


# ------------------------------------------------------------------ arithmetic


def test_convex_is_alpha_semantic_plus_one_minus_alpha_lexical_with_floors() -> None:
    names = ["a", "b", "c", "d"]
    r = fused(names, {"a": 4.0, "b": 2.0, "c": 1.0}, {"d": 0.8, "a": 0.4},
              FusionConfig("convex", alpha=0.25, norm="minmax"))
    got = {h.card: h for h in r.hits}
    # lexical minmax: a 1, b 1/3, c 0, floor 0; semantic minmax: d 1, a 0, floor 0
    assert got["a"].score == pytest.approx(0.75 * 1.0 + 0.25 * 0.0)
    assert got["b"].score == pytest.approx(0.75 / 3)
    assert got["d"].score == pytest.approx(0.25 * 1.0 + 0.75 * 0.0)  # lexical floor
    assert got["c"].score == 0.0  # ranked: it is in a window
    assert r.names() == ["a", "b", "d", "c"]
    for h in r.hits:
        assert sum(h.contributions.values()) == pytest.approx(h.score)
    assert got["d"].arms == {"bm25": None, "semantic": (1, 0.8)}
    assert got["d"].contributions == {"bm25": 0.0, "semantic": 0.25}


def test_a_card_outside_a_window_gets_that_windows_lowest_value() -> None:
    names = ["a", "b", "c", "z"]
    r = fused(names, {"a": 3.0, "b": 1.0}, {"z": 0.9, "c": 0.5, "a": 0.1},
              FusionConfig("convex", alpha=0.5, norm="max"))
    z = r.hit("z")
    assert z is not None and z.arms["bm25"] is None
    assert z.contributions["bm25"] == pytest.approx(0.5 * (1.0 / 3.0))  # lexical floor: 1/3


def test_zscore_fused_scores_may_be_negative_and_every_window_card_is_ranked() -> None:
    names = [f"c{i}" for i in range(6)]
    lex = {"c0": 9.0, "c1": 5.0, "c2": 1.0}
    sem = {"c3": 0.9, "c4": 0.8, "c2": 0.1}
    r = fused(names, lex, sem, FusionConfig("convex", alpha=0.5, norm="zscore"))
    assert r.total == 5 and len(r.hits) == 5  # the union of both windows; c5 is in none
    assert any(h.score < 0 for h in r.hits)
    assert r.hit("c5") is None


@pytest.mark.parametrize("config", METHODS, ids=IDS)
def test_scores_at_or_below_zero_never_enter_a_window(config) -> None:
    names = ["a", "b", "c"]
    r = fused(names, {"a": 1.0, "b": 0.0, "c": -2.0}, {"a": 0.5, "c": -0.1}, config)
    assert r.names() == ["a"]


# ------------------------------------------------------------------ the laws, every method


def rfc0048_windows() -> tuple[list[str], dict[str, float], dict[str, float]]:
    """X: lexical 1, semantic 101; A: lexical 2, semantic 100; semantic 1..99 lexical-free."""
    sem = {f"s{i:03d}": 1000.0 - i for i in range(1, 100)}
    sem["a-card"] = 1000.0 - 100
    sem["x-card"] = 1000.0 - 101
    sem.update({f"t{i:03d}": 500.0 - i for i in range(50)})
    lex = {"x-card": 2.0, "a-card": 1.0}
    return sorted(set(sem) | set(lex)), lex, sem


@pytest.mark.parametrize("config", METHODS, ids=IDS)
def test_asking_for_more_results_never_reorders_the_first_ones(config) -> None:
    names, lex, sem = rfc0048_windows()
    full = fused(names, lex, sem, config, window=100, limit=None)
    for limit in (1, 5, 99, 100, 101, 150):
        assert fused(names, lex, sem, config, window=100, limit=limit).names() == \
            full.names()[:limit]
    assert full.total == 101  # 100 semantic + x-card (lexical only)


@pytest.mark.parametrize("config", METHODS, ids=IDS)
def test_fused_ties_break_by_name(config) -> None:
    names = ["m", "n", "z"]
    r = fused(names, {"z": 1.0}, {"n": 1.0}, replace_alpha(config, 0.5))
    assert r.names() == ["n", "z"] and r.hits[0].score == r.hits[1].score


def replace_alpha(config: FusionConfig, alpha: float) -> FusionConfig:
    """Symmetric settings, so two mirror cards tie exactly under every method."""
    from dataclasses import replace

    if config.method == "adaptive":
        return replace(config, adaptive=AdaptiveParams(alpha_keyword=alpha, alpha_prose=alpha,
                                                       gap_weight=0.0))
    return replace(config, alpha=alpha)


@pytest.mark.parametrize("config", METHODS, ids=IDS)
def test_ties_at_a_windows_edge_are_cut_by_name(config) -> None:
    names = ["a", "b", "c", "d", "e"]
    r = fused(names, {"e": 0.9, "d": 0.5, "c": 0.5, "b": 0.5}, {"a": 1.0}, config, window=2)
    assert {h.card for h in r.hits if h.arms["bm25"] is not None} == {"e", "b"}
    assert r.hit("c") is None and r.hit("d") is None


@pytest.mark.parametrize("config", METHODS, ids=IDS)
def test_every_hit_carries_both_arms_and_the_retrieval_the_method(config) -> None:
    names, lex, sem = rfc0048_windows()
    r = fused(names, lex, sem, config, window=100, limit=10)
    assert all(set(h.arms) == {"bm25", "semantic"} for h in r.hits)
    ret = r.retrieval
    assert ret is not None and ret.fusion == config.method
    assert ret.fusion_config == config.label() and dict(ret.parameters or {})
    assert dict(ret.windows or {}) == {"bm25": 100, "semantic": 100}
    if config.method == "rrf":
        assert ret.k == 60.0 and ret.alpha is None and ret.signals is None
    elif config.method == "convex":
        assert ret.k is None and ret.alpha == 0.6 and ret.signals is None
    else:
        assert ret.alpha is not None and set(ret.signals or {}) >= {"words", "code", "idf"}


# ------------------------------------------------------------------ adaptive


def test_adaptive_alpha_follows_the_querys_shape() -> None:
    p = AdaptiveParams(gap_weight=0.0)  # the shape alone
    def alpha(text: str) -> float:
        sig = signals(QueryStats(text, 100, {}), np.array([]), np.array([]), np.array([]))
        return adaptive_alpha(p, sig)
    assert alpha("TIOCGWINSZ") == pytest.approx(p.alpha_keyword)  # short and code-shaped
    assert alpha("--max-depth") == pytest.approx(p.alpha_keyword)
    assert alpha("show what files a folder holds") == pytest.approx(p.alpha_prose)
    assert alpha("barn owl") == pytest.approx((p.alpha_keyword + p.alpha_prose) / 2)
    assert alpha("night hunting birds") == pytest.approx(p.alpha_prose - 0.6 * 0.25)


def test_the_idf_cue_raises_keywordness_only_when_weighted() -> None:
    rare = QueryStats("alpha beta gamma delta", 1000, {"alpha": 1, "beta": 1, "gamma": 1,
                                                       "delta": 1})
    sig = signals(rare, np.array([]), np.array([]), np.array([]))
    assert sig["idf"] == pytest.approx(1.0) and sig["known"] == 1.0
    assert adaptive_alpha(AdaptiveParams(gap_weight=0.0), sig) == pytest.approx(0.8)
    assert adaptive_alpha(AdaptiveParams(idf_weight=1.0, gap_weight=0.0),
                          sig) == pytest.approx(0.2)


def test_window_signals_gap_and_overlap() -> None:
    sig = signals(QueryStats("q", 10, {}), np.array([1, 2, 3]), np.array([3, 4]),
                  np.array([4.0, 1.0, 0.5]))
    assert sig["gap"] == pytest.approx(0.75) and sig["overlap"] == pytest.approx(0.5)
    one = signals(QueryStats("q", 10, {}), np.array([1]), np.array([3]), np.array([4.0]))
    none = signals(QueryStats("q", 10, {}), np.array([]), np.array([3]), np.array([]))
    assert one["gap"] == 1.0 and none["gap"] == 0.0  # nothing else matched / nothing at all


def _alpha_of(text: str, lexical: dict[str, float], semantic: dict[str, float],
              params: AdaptiveParams | None = None) -> float:
    """The α adaptive uses for one query over two synthetic windows (card -> score)."""
    r = fused(sorted({*lexical, *semantic}), lexical, semantic,
              FusionConfig("adaptive", norm="max", adaptive=params or AdaptiveParams()),
              query=text)
    assert r.retrieval is not None and r.retrieval.alpha is not None
    return r.retrieval.alpha


# One code-shaped word each (the same shape, α 0.2 from the shape alone): in the first
# the lexical arm's top card stands far above its second; in the second its top cards tie.
SURE = {"push": 9.0, "fetch": 3.0, "pull": 2.5}
TIED = {"ssh": 3.0, "sshd": 3.0, "scp": 2.9}
SEM = {"sshd": 0.5, "ssh": 0.45, "push": 0.44}


def test_a_confident_lexical_top_gets_lexical_weight_and_a_tie_semantic_weight() -> None:
    sure = _alpha_of("--force-with-lease", SURE, SEM)
    tied = _alpha_of("authorized_keys", TIED, SEM)
    # gap (9 − 3) / 9 = 0.67 ≥ gap_full 0.4: α = 0.2 + 0.5 · (0.5 − 1) = −0.05 -> 0
    assert sure == 0.0
    # gap 0: α = 0.2 + 0.5 · 0.5
    assert tied == pytest.approx(0.45)
    # the shape alone (gap_weight 0) gives both the same α
    shape = AdaptiveParams(gap_weight=0.0)
    assert _alpha_of("--force-with-lease", SURE, SEM, shape) == pytest.approx(0.2)
    assert _alpha_of("authorized_keys", TIED, SEM, shape) == pytest.approx(0.2)


def test_the_gap_moves_alpha_linearly_up_to_gap_full_and_within_0_and_1() -> None:
    p = AdaptiveParams(gap_weight=0.4, gap_full=0.5)
    prose = "show what files a folder holds"  # shape α 0.8
    half = _alpha_of(prose, {"a": 4.0, "b": 3.0}, {"a": 0.3}, p)  # gap 0.25: confidence ½
    assert half == pytest.approx(0.8)
    assert _alpha_of(prose, {"a": 4.0, "b": 4.0}, {"a": 0.3}, p) == pytest.approx(1.0)
    assert _alpha_of(prose, {"a": 4.0, "b": 1.0}, {"a": 0.3}, p) == pytest.approx(0.6)
    high = _alpha_of(prose, {"a": 4.0, "b": 4.0}, {"a": 0.3}, AdaptiveParams(gap_weight=1.0))
    assert high == 1.0  # 0.8 + 0.5 clipped


def test_a_confident_lexical_top_hit_wins_the_fused_top_and_a_tie_lets_semantic_win() -> None:
    # the same two-word query (shape α 0.5) and the same semantic window, sure of `x`
    sem = {"x": 0.9, "c": 0.3}
    cfg = FusionConfig("adaptive", norm="max")
    sure = fused(["a", "b", "c", "x"], {"a": 9.0, "b": 2.0, "c": 1.0}, sem, cfg,
                 query="barn owl")
    tied = fused(["a", "b", "c", "x"], {"a": 3.0, "b": 2.95, "c": 1.0}, sem, cfg,
                 query="barn owl")
    assert sure.retrieval is not None and tied.retrieval is not None
    assert sure.retrieval.alpha == pytest.approx(0.25)  # gap 0.78: 0.5 − 0.25
    assert tied.retrieval.alpha == pytest.approx(0.5 + 0.5 * (0.5 - (0.05 / 3) / 0.4))
    assert sure.names()[0] == "a" and tied.names()[0] == "x"
    # every hit still carries both arms' ranks, and its two parts sum to its score
    for hit in (*sure.hits, *tied.hits):
        assert set(hit.arms) == {"bm25", "semantic"}
        assert sum(hit.contributions.values()) == pytest.approx(hit.score)


def test_adaptive_records_this_querys_alpha_in_the_summary_and_title() -> None:
    names = ["a", "b"]
    r = fused(names, {"a": 2.0, "b": 1.0}, {"b": 0.9, "a": 0.1},
              FusionConfig("adaptive", norm="dbsf"), query="SIGCHLD")
    ret = r.retrieval
    # shape 0.2; lexical gap (2 − 1) / 2 = 0.5, fully confident: 0.2 − 0.25, kept at 0
    assert ret is not None and ret.alpha == pytest.approx(0.0)
    assert fusion_summary(ret) == ("adaptive alpha=0.00 (words 1, code 1, idf 0, gap 0.5, name 0, "
                                   "ident 0) · norm dbsf")
    assert fusion_title(ret, "") == "adaptive α 0.00"


def test_name_share_is_the_share_of_the_query_that_spells_the_whole_card_name() -> None:
    assert name_share("pthread_join", "pthread_join.3") == 1.0  # the query is the name
    assert name_share("sort --version-sort", "sort.1") == 0.5  # tokens: sort, version
    assert name_share("gcloud compute ssh --tunnel-through-iap",
                      "gcloud_compute_ssh.1") == 0.5  # 3 of its 6 tokens
    assert name_share("kms encrypt", "gcloud_kms_encrypt.1") == 0.0  # `gcloud` missing
    # six tokens (one-letter pieces are not tokens): `make` here is a verb, a sixth
    assert name_share("make a running program use less CPU", "make.1") == pytest.approx(1 / 6)
    assert name_share("sort", "tsort.1") == 0.0  # whole tokens, not substrings
    assert name_share("", "sort.1") == 0.0 and name_share("sort", "1") == 0.0  # nothing to spell


def test_the_name_signal_reads_the_lexical_top_cards_name_only() -> None:
    names = ["sort.1", "tsort.1"]
    stats = QueryStats("sort --version-sort", 2, {})
    lex, sem = np.array([0, 1]), np.array([1, 0])
    assert signals(stats, lex, sem, np.array([11.7, 10.6]), names)["name"] == 0.5
    # the same query when the lexical arm's top is tsort: no name in it
    assert signals(stats, sem, lex, np.array([11.7, 10.6]), names)["name"] == 0.0
    # without names (or an empty lexical window) the signal is 0
    assert signals(stats, lex, sem, np.array([11.7, 10.6]))["name"] == 0.0
    assert signals(stats, np.array([]), sem, np.array([]), names)["name"] == 0.0


def test_the_name_moves_alpha_towards_lexical_by_name_weight() -> None:
    sig = signals(QueryStats("sort --version-sort", 2, {}), np.array([0, 1]), np.array([1, 0]),
                  np.array([11.7, 11.4]), ["sort.1", "tsort.1"])
    off = adaptive_alpha(AdaptiveParams(name_weight=0.0), sig)
    # shape 0.8 − 0.6 · 0.75 = 0.35; gap 0.026 / 0.4: 0.35 + 0.5 · (0.5 − 0.064)
    assert off == pytest.approx(0.35 + 0.5 * (0.5 - (0.3 / 11.7) / 0.4))
    assert adaptive_alpha(AdaptiveParams(), sig) == pytest.approx(off - 0.5)  # name 0.5
    assert adaptive_alpha(AdaptiveParams(name_weight=0.4), sig) == pytest.approx(off - 0.2)


def test_a_query_spelling_the_lexical_top_cards_name_keeps_it_first() -> None:
    # man1's `sort --version-sort`: bm25 is sure of sort.1 by a hair over tsort.1, which
    # semantic prefers; by the shape and gap alone (α 0.57) hybrid put tsort.1 first
    names = ["sort.1", "tsort.1", "basename.1"]
    lex = {"sort.1": 11.74, "tsort.1": 10.56, "basename.1": 11.4}
    sem = {"tsort.1": 0.631, "sort.1": 0.545, "basename.1": 0.501}
    off = FusionConfig("adaptive", norm="max", adaptive=AdaptiveParams(name_weight=0.0))
    on = FusionConfig("adaptive", norm="max")
    before = fused(names, lex, sem, off, query="sort --version-sort")
    after = fused(names, lex, sem, on, query="sort --version-sort")
    assert before.names()[0] == "tsort.1" and after.names()[0] == "sort.1"
    assert after.retrieval is not None and after.retrieval.signals is not None
    assert after.retrieval.signals["name"] == 0.5  # recorded, like the gap
    assert "name 0.5" in fusion_summary(after.retrieval)
    # a prose query with the same cards and no card's name in it is not moved
    prose = fused(names, lex, sem, on, query="order lines of text")
    assert prose.retrieval is not None and prose.retrieval.signals is not None
    assert prose.retrieval.signals["name"] == 0.0


def test_name_weight_is_a_share_within_0_and_1() -> None:
    assert parse_fusion("adaptive:name_weight=0").adaptive.name_weight == 0.0
    with pytest.raises(ValueError, match="`name_weight` must be between 0 and 1"):
        parse_fusion("adaptive:name_weight=1.5")


# ------------------------------------------------------------------ the identifier signal

# man2 + man3's `TIOCGWINSZ window size`, small: one card holds the ioctl, many hold
# "window" and "size" (the X toolkit pages), and semantic prefers one of those
IDENT_TEXTS = {
    "ioctl_tty.2": "TIOCGWINSZ get the window size of the terminal",
    "XtConfigureWidget.3": "configure a widget window size and position",
    "XtCreateWindow.3": "create the window of a widget with its size",
    "getunwind.2": "get the size of the unwind data",
    **{f"X{i}.3": f"window size border {i}" for i in range(8)},
    **{f"misc{i}.3": f"unrelated page number {i} about other calls" for i in range(40)},
}


def ident_stats(query: str) -> tuple[list[str], QueryStats]:
    names = sorted(IDENT_TEXTS)
    counts = DocFreq(TermCounts([IDENT_TEXTS[n] for n in names]))
    return names, QueryStats(query, counts.size, counts.of(query), counts.holds)


def test_doc_freq_says_which_card_holds_a_term() -> None:
    names, stats = ident_stats("TIOCGWINSZ")
    assert stats.holds is not None
    at = names.index("ioctl_tty.2")
    assert stats.holds(at, "tiocgwinsz") and stats.holds(at, "window")
    assert not stats.holds(names.index("getunwind.2"), "tiocgwinsz")
    assert not stats.holds(at, "absent") and not stats.holds(len(names), "window")


def test_the_identifier_signal_needs_a_rare_code_word_only_lexical_top_holds() -> None:
    names, stats = ident_stats("TIOCGWINSZ window size")
    ioctl, unwind, widget = (names.index(n) for n in
                             ("ioctl_tty.2", "getunwind.2", "XtConfigureWidget.3"))
    assert identifier(stats, ioctl, unwind) == 1.0  # semantic's best lacks the ioctl
    assert identifier(stats, ioctl, None) == 1.0  # semantic found nothing
    assert identifier(stats, ioctl, ioctl) == 0.0  # semantic's best holds it too
    assert identifier(stats, widget, unwind) == 0.0  # lexical's best lacks it
    # the same rare token typed as a plain word is not an identifier
    _, plain = ident_stats("tiocgwinsz window size")
    assert identifier(plain, ioctl, unwind) == 0.0
    # a code-shaped word of common tokens (here in 11 of 52 cards) is not rare
    _, common = ident_stats("WINDOW_SIZE")
    assert identifier(common, ioctl, unwind) == 0.0
    # without the cards' terms the signal is 0
    bare = QueryStats(stats.text, stats.cards, stats.df)
    assert identifier(bare, ioctl, unwind) == 0.0


def test_the_identifier_moves_alpha_by_ident_weight_and_keeps_its_card_first() -> None:
    names, stats = ident_stats("TIOCGWINSZ window size")
    lex = {"ioctl_tty.2": 9.66, "XtConfigureWidget.3": 8.56, "XtCreateWindow.3": 7.28,
           **{f"X{i}.3": 7.0 - 0.1 * i for i in range(8)}}
    sem = {"getunwind.2": 0.439, "XtConfigureWidget.3": 0.427, "XtCreateWindow.3": 0.406,
           **{f"X{i}.3": 0.33 - 0.01 * i for i in range(8)}}

    def run(params: AdaptiveParams):
        arms = [arm("bm25", lex, names), arm("semantic", sem, names)]
        return fuse(arms, names, query=stats.text, window=50, limit=None, stats=stats,
                    config=FusionConfig("adaptive", norm="max", adaptive=params))

    off, on = run(AdaptiveParams(ident_weight=0.0)), run(AdaptiveParams())
    assert off.retrieval is not None and on.retrieval is not None
    assert on.retrieval.signals is not None and on.retrieval.signals["ident"] == 1.0
    assert on.retrieval.alpha == pytest.approx(off.retrieval.alpha - 0.5)
    assert off.names()[0] == "XtConfigureWidget.3" and on.names()[0] == "ioctl_tty.2"
    assert "ident 1" in fusion_summary(on.retrieval)


def test_ident_weight_is_a_share_within_0_and_1() -> None:
    assert parse_fusion("adaptive:ident_weight=0").adaptive.ident_weight == 0.0
    with pytest.raises(ValueError, match="`ident_weight` must be between 0 and 1"):
        parse_fusion("adaptive:ident_weight=2")


# ------------------------------------------------------------------ parsing --fusion


def test_labels_parse_back_to_the_same_config() -> None:
    for config in METHODS + [FusionConfig("rrf", k=10, weights=(0.5, 2.0))]:
        assert parse_fusion(config.label()) == config


@pytest.mark.parametrize(
    "text,message",
    [
        ("borda", "unknown fusion `borda`; accepted: rrf, convex, adaptive"),
        ("convex:alpha=2", "`alpha` must be between 0 and 1"),
        ("convex:norm=l2", "unknown norm `l2`; accepted: max, minmax, zscore, dbsf"),
        ("convex:k=3", "`k=3` is not a parameter of convex; accepted: alpha, norm"),
        ("rrf:k=0", "`k` must be between 0.001 and 1e+06"),
        ("rrf:wlex=1.7e308", "`wlex` must be between 0 and 1e+06"),
        ("rrf:k=abc", "`k` must be a number, not `abc`"),
        ("adaptive:idf_low=0.9", "`idf_low` must be below `idf_high`"),
    ],
)
def test_a_bad_fusion_is_one_line_naming_it(text, message) -> None:
    with pytest.raises(ValueError) as err:
        parse_fusion(text)
    assert str(err.value) == message


def test_fuse_windows_directly_matches_rrf_by_hand() -> None:
    out = fuse_windows(FusionConfig("rrf", k=10, weights=(1.0, 2.0)),
                       (np.array([2, 0]), np.array([5.0, 3.0])),
                       (np.array([0]), np.array([0.7])))
    assert out.positions.tolist() == [0, 2]
    assert out.scores.tolist() == [1 / 12 + 2 / 11, 1 / 11]


def test_the_windows_union_is_numpys_union1d() -> None:
    rng = np.random.default_rng(7)
    cases = [(np.array([], dtype=np.int64), np.array([], dtype=np.int64)),
             (np.array([3]), np.array([], dtype=np.int64)), (np.array([2, 2]), np.array([2]))]
    cases += [(rng.integers(0, 40, rng.integers(0, 25)), rng.integers(0, 40, rng.integers(0, 25)))
              for _ in range(100)]
    for a, b in cases:
        union = sorted_union(a, b)
        assert union.dtype == np.int64
        assert union.tolist() == np.union1d(a, b).astype(np.int64).tolist()
