"""The fusion methods: how hybrid turns two arms' windows into one fused score per card.

Each method exists once, here; ``hqltui.core.hybrid`` applies the laws around it
(windows, the union of candidates, ties by name, refusals) and ``names.FUSIONS``
lists them. A method sees only the two windows (each arm's best cards with a
score above 0, at most ``[search] window`` of them, in rank order) and the
query's cheap signals; it never sees labels.

* ``rrf`` — ``Σ_arm weight_arm / (k + rank_arm)``, 1-based ranks. A card outside
  an arm's window has rank ∞ there, so that arm adds ``1/(k + ∞) = 0``: the
  lowest value the method gives (the same sum the engine's SQL computes).
* ``convex`` — ``α · N(semantic) + (1 − α) · N(lexical)``; ``N`` normalises an
  arm's scores over its own window (``NORMS``). A card outside an arm's window
  gets that window's lowest normalised value (its floor).
* ``adaptive`` — ``convex`` with α set per query by ``adaptive_alpha`` from cheap
  signals of the query (its shape: how many words, how many look like code; and,
  off by default, its tokens' IDF profile) and of the lexical window (how far its
  top card stands above the second: a lexical arm sure of one card gets more
  weight, one whose top cards tie gets less) and of the lexical top card's name
  (the query spells it out: the user typed that card's name, so lexical gets
  more weight) and of the two top cards' terms (the query holds a rare
  identifier that the lexical top card holds and the semantic top card lacks:
  the embedding model cannot read identifiers, so lexical gets more weight)
  (``signals``); this query's α and every signal value are recorded.

Normalisations over one window of scores ``s``: ``max`` = s / max;
``minmax`` = (s − min) / (max − min); ``zscore`` = (s − μ) / σ; ``dbsf`` =
(s − (μ − 3σ)) / 6σ (σ the population standard deviation). A window without
spread (one card, or all scores equal: σ = 0, max = min) cannot be scaled: every
card of it gets 1 and a card outside it gets 0, whatever the normalisation — its
cards are all that arm found, equally (a one-card bm25 window is an exact
identifier match; making outsiders equal to it would throw that away). An empty
window (no card above 0) contributes 0 to every card.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hqltui.core.lexical import tokens
from hqltui.core.names import ADAPTIVE, CONVEX, METHODS, RRF

NORMS: tuple[str, ...] = ("max", "minmax", "zscore", "dbsf")
FLAT_VALUE, FLAT_FLOOR = 1.0, 0.0  # a window without spread: its cards, and the rest


@dataclass(frozen=True)
class AdaptiveParams:
    """How ``adaptive`` sets α (``adaptive_alpha``): ``alpha_prose`` for a query that
    reads like a sentence, ``alpha_keyword`` for one that looks like a name, flag or
    identifier, and in between by how keyword-like it is; then moved by up to
    ``gap_weight / 2`` towards lexical when the lexical arm's top card stands clear
    of its second (``gap`` at ``gap_full`` or more) and towards semantic when they tie;
    then moved towards lexical by ``name_weight`` × the share of the query's tokens
    that spell the lexical top card's name (when the query holds all of its name),
    and by ``ident_weight`` when the query holds a rare identifier that the lexical
    top card holds and the semantic top card lacks (``ident``)."""

    alpha_keyword: float = 0.2  # α when the query is all keyword cues (short, code-shaped)
    alpha_prose: float = 0.8  # α when it has none (four words or more of plain prose)
    words_short: float = 2.0  # this many words or fewer: fully short
    words_long: float = 4.0  # this many or more: not short at all
    idf_weight: float = 0.0  # share of the rare-token cue (0: off, see docs/ranking.md)
    idf_low: float = 0.35  # mean normalised idf at or below which tokens are common
    idf_high: float = 0.65  # ... and at or above which they are rare
    gap_weight: float = 0.5  # how far the lexical arm's confidence moves α (0: not at all)
    gap_full: float = 0.4  # lexical top-score gap at or above which it is fully confident
    name_weight: float = 1.0  # how far the lexical top card's name in the query moves α (0: off)
    ident_weight: float = 0.5  # how far a rare identifier only lexical's top card holds moves α


@dataclass(frozen=True)
class FusionConfig:
    """One fusion with its parameters. ``weights`` are (lexical, semantic) and serve
    ``rrf``; ``alpha`` and ``norm`` serve ``convex``; ``norm`` and ``adaptive`` serve
    ``adaptive``."""

    method: str = RRF
    k: float = 60.0
    weights: tuple[float, float] = (1.0, 1.0)
    alpha: float = 0.5
    norm: str = "zscore"
    adaptive: AdaptiveParams = field(default_factory=AdaptiveParams)

    def parameters(self) -> dict[str, Any]:
        """The parameters this method reads (what its provenance states)."""
        if self.method == RRF:
            return {"k": self.k, "weights": {"lexical": self.weights[0],
                                             "semantic": self.weights[1]}}
        if self.method == CONVEX:
            return {"alpha": self.alpha, "norm": self.norm}
        return {"norm": self.norm, **self.adaptive.__dict__}

    def label(self) -> str:
        """``method:key=value,...`` — what ``eval --fusion`` reads and its JSON keys use."""
        flat = {k: v for k, v in self.parameters().items() if k != "weights"}
        if self.method == RRF and self.weights != (1.0, 1.0):
            flat["wlex"], flat["wsem"] = self.weights
        return f"{self.method}:" + ",".join(f"{k}={_fmt(v)}" for k, v in flat.items())


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# adaptive's parameters that are shares, each within 0..1
UNIT_KEYS = ("alpha_keyword", "alpha_prose", "idf_weight", "gap_weight", "name_weight",
             "ident_weight")

# `eval --fusion` keys and the config keys they set.
_KEYS = {
    RRF: ("k", "wlex", "wsem"),
    CONVEX: ("alpha", "norm"),
    ADAPTIVE: ("norm", *AdaptiveParams.__dataclass_fields__),
}


def parse_fusion(text: str, base: FusionConfig | None = None) -> FusionConfig:
    """``rrf``, ``convex:alpha=0.7,norm=zscore``, ``adaptive:alpha_low=0.9`` …; unset
    parameters come from ``base``. ``ValueError`` with one line naming what is wrong."""
    base = base or FusionConfig()
    method, _, rest = text.strip().partition(":")
    if method not in METHODS:
        raise ValueError(f"unknown fusion `{method}`; accepted: {', '.join(METHODS)}")
    config = replace(base, method=method)
    adaptive = config.adaptive
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in _KEYS[method]:
            raise ValueError(
                f"`{item}` is not a parameter of {method}; accepted: {', '.join(_KEYS[method])}"
            )
        value = value.strip()
        if key == "norm":
            if value not in NORMS:
                raise ValueError(f"unknown norm `{value}`; accepted: {', '.join(NORMS)}")
            config = replace(config, norm=value)
            continue
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"`{key}` must be a number, not `{value}`") from None
        if not math.isfinite(number):
            raise ValueError(f"`{key}` must be a finite number")
        if key == "k":
            config = replace(config, k=check_rrf_k(number, key))
        elif key in ("wlex", "wsem"):
            check_weight(number, key)
            w = config.weights
            config = replace(config, weights=(number, w[1]) if key == "wlex" else (w[0], number))
        elif key == "alpha":
            config = replace(config, alpha=check_alpha(number, key))
        else:
            if key in UNIT_KEYS:
                check_alpha(number, key)
            adaptive = replace(adaptive, **{key: number})
    config = replace(config, adaptive=adaptive)
    check_adaptive(config.adaptive)
    return config


# rrf's bounds: w / (k + rank) stays a finite float (and fusion keeps its meaning)
# for every k and w within them; 1e-300 or 1.7e308 would make scores infinite.
RRF_K_RANGE = (1e-3, 1e6)
WEIGHT_MAX = 1e6


def check_rrf_k(value: float, key: str = "rrf_k") -> float:
    low, high = RRF_K_RANGE
    if not low <= value <= high:
        raise ValueError(f"`{key}` must be between {low:g} and {high:g}")
    return value


def check_weight(value: float, key: str) -> float:
    if not 0.0 <= value <= WEIGHT_MAX:
        raise ValueError(f"`{key}` must be between 0 and {WEIGHT_MAX:g}")
    return value


def check_alpha(value: float, key: str = "alpha") -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"`{key}` must be between 0 and 1")
    return value


def check_adaptive(params: AdaptiveParams) -> None:
    """One line naming the first inconsistent pair of ``params``."""
    if not params.idf_low < params.idf_high:
        raise ValueError("`idf_low` must be below `idf_high`")
    if not 0 < params.words_short < params.words_long:
        raise ValueError("`words_short` must be above 0 and below `words_long`")
    if not 0 < params.gap_full <= 1:
        raise ValueError("`gap_full` must be above 0 and at most 1")


# ------------------------------------------------------------------ the grids

# The one list of documented fusion grids: what `tune --grid NAME` searches and
# `eval --fusion grid` (`default`) or `--fusion grid:NAME` adds. Parameters not
# named come from the vault's `[search]`.
GRIDS: dict[str, tuple[str, ...]] = {
    # rrf k; convex alpha x every norm; adaptive: its two alphas x how far the
    # lexical top gap moves alpha x three norms (words_long, gap_full, name_weight and
    # ident_weight as configured: the name and identifier signals are not grid
    # dimensions, they are on in every row unless `[search.adaptive]` sets them to 0)
    "default": (
        *(f"rrf:k={k}" for k in (10, 30, 60)),
        *(f"convex:alpha={a / 10:g},norm={n}" for n in NORMS for a in range(1, 10)),
        *(f"adaptive:norm={n},alpha_keyword={lo},alpha_prose={hi},gap_weight={g}"
          for n in ("max", "dbsf", "minmax") for lo in (0.1, 0.2, 0.3)
          for hi in (0.7, 0.8, 0.9) for g in (0, 0.5, 1)),
    ),
    # one point per method and norm: quick
    "small": ("rrf:k=60", *(f"convex:alpha=0.7,norm={n}" for n in NORMS),
              *(f"adaptive:norm={n}" for n in NORMS)),
}


def grid(name: str, base: FusionConfig | None = None) -> list[FusionConfig]:
    """The named grid's configurations, each once, in order (unnamed parameters from
    ``base``); ``ValueError`` naming the grids otherwise."""
    if name not in GRIDS:
        raise ValueError(f"unknown grid `{name}`; accepted: {', '.join(GRIDS)}")
    return list(dict.fromkeys(parse_fusion(text, base) for text in GRIDS[name]))


# ------------------------------------------------------------------ normalisation


@dataclass(frozen=True)
class Normalised:
    values: np.ndarray  # one per window card, in the window's order
    floor: float  # what a card outside the window gets


def normalise(scores: np.ndarray, norm: str) -> Normalised:
    """``scores`` (one window, all above 0) normalised by ``norm`` (see the module doc)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return Normalised(s, 0.0)
    top, low = float(s.max()), float(s.min())
    mean, sigma = float(s.mean()), float(s.std())
    if norm == "max":
        if top == low:
            return _flat(s, norm)
        v = s / top
    elif norm == "minmax":
        if top == low:
            return _flat(s, norm)
        v = (s - low) / (top - low)
    elif norm in ("zscore", "dbsf"):
        if sigma == 0.0 or top == low:
            return _flat(s, norm)
        v = (s - mean) / sigma if norm == "zscore" else (s - (mean - 3.0 * sigma)) / (6.0 * sigma)
    else:
        raise ValueError(f"unknown norm `{norm}`; accepted: {', '.join(NORMS)}")
    return Normalised(v, float(v.min()))


def _flat(s: np.ndarray, norm: str) -> Normalised:
    return Normalised(np.full(s.size, FLAT_VALUE), FLAT_FLOOR)


# ------------------------------------------------------------------ adaptive α


@dataclass(frozen=True)
class QueryStats:
    """The query and how common each of its tokens is in the vault (the document
    frequencies of the fused lexical arm's analyser: for bm25 the ones its idf
    uses): what the signals read. ``holds(position, token)`` says whether the card
    at ``position`` holds ``token`` (``DocFreq.holds``); without it the ``ident``
    signal is 0. ``terms`` splits text as those counts were made (``DocFreq.terms``;
    default hashbag's ``tokens``), for the ``ident`` and ``name`` signals."""

    text: str
    cards: int
    df: dict[str, int]  # each distinct token of the query -> cards holding it (0: none)
    holds: Callable[[int, str], bool] | None = None
    terms: Callable[[str], list[str]] = tokens


def idf(df: int, cards: int) -> float:
    """BM25's idf, ``ln(1 + (N − n + 0.5) / (n + 0.5))``."""
    return math.log1p((cards - df + 0.5) / (df + 0.5))


def rarity(df: int, cards: int) -> float:
    """idf(a token in ``df`` cards) / idf(a token in one card): 1 for the rarest token,
    towards 0 for one every card holds (``cards`` > 0); what the ``idf`` signal averages
    and ``IDENT_RARE`` cuts."""
    return idf(df, cards) / idf(1, cards)


# A word shaped like code: an underscore, `=`, `:`, `/`, `\`, `.` or a digit anywhere,
# a leading `-` (a flag), or a capital after its first letter (ALLCAPS, camelCase).
CODE_WORD = re.compile(r"[_=:/\\.\d]|^-|.[A-Z]")

# A token is rare enough to name one thing when its idf is at least this share of the
# idf of a token held by one card (man2 + man3, 1,231 cards: in at most 5 cards; man1,
# 17,570 cards: at most 9; a 48-card vault: at most 2).
IDENT_RARE = 0.8


def signals(stats: QueryStats, lexical: np.ndarray, semantic: np.ndarray,
            lexical_scores: np.ndarray, names: Sequence[str] | None = None
            ) -> dict[str, float]:
    """The cheap, label-free facts about one query that ``adaptive`` may read.

    Of the query text: ``words`` (whitespace-separated words), ``code`` (share of
    them shaped like code, ``CODE_WORD``), ``tokens`` (distinct tokens, as the
    lexical arms split them). Of the vault: ``idf`` (mean over the query's tokens
    found in the vault of idf(token) / idf(a token in one card), 0..1), ``known``
    (share of the tokens found in the vault). Of the two windows: ``gap`` (the
    lexical window's top-score gap, (s1 − s2) / s1: how sure the lexical arm is of
    its top card; 1 for a one-card window, nothing else matched; 0 for an empty
    one) and ``overlap`` (share of the semantic top 10 also in the lexical top 10).
    Of the lexical top card's name (``names[lexical[0]]``, split into tokens as the
    lexical arms split text): ``name``, the share of the query's distinct tokens
    that are its name's tokens when the query holds every one of them, else 0
    (``pthread_join`` on ``pthread_join.3``: 1; ``sort --version-sort`` on
    ``sort.1``: 0.5; ``kms encrypt`` on ``gcloud_kms_encrypt.1``: 0, `gcloud` is not
    in the query; no ``names``: 0). Of the two top cards' terms (``stats.holds``):
    ``ident``, 1 when the query holds an identifier that the lexical top card holds
    and the semantic top card lacks, else 0 (``identifier``).
    ``adaptive_alpha`` reads ``words``, ``code``, ``idf``, ``gap``, ``name`` and
    ``ident``; the rest is recorded so a user (or ``tune``) can see what else the
    query looked like.
    """
    words = stats.text.split()
    out = {
        "words": float(len(words)),
        "code": sum(bool(CODE_WORD.search(w)) for w in words) / len(words) if words else 0.0,
        "tokens": float(len(stats.df)),
        "idf": 0.0,
        "known": 0.0,
        "gap": 0.0,
        "overlap": 0.0,
        "name": 0.0,
        "ident": 0.0,
    }
    if stats.df:
        known = [d for d in stats.df.values() if d > 0]
        out["known"] = len(known) / len(stats.df)
        if known and stats.cards > 0:
            out["idf"] = float(np.mean([rarity(d, stats.cards) for d in known]))
    if lexical_scores.size == 1:
        out["gap"] = 1.0
    elif lexical_scores.size >= 2 and lexical_scores[0] > 0:
        out["gap"] = float((lexical_scores[0] - lexical_scores[1]) / lexical_scores[0])
    if semantic.size:
        sem10 = set(semantic[:10].tolist())
        out["overlap"] = len(sem10.intersection(lexical[:10].tolist())) / len(sem10)
    if names is not None and lexical.size:
        out["name"] = name_share(stats.text, names[int(lexical[0])], stats.terms)
    if lexical.size:
        out["ident"] = identifier(stats, int(lexical[0]),
                                  int(semantic[0]) if semantic.size else None)
    return out


def identifier(stats: QueryStats, lexical_top: int, semantic_top: int | None) -> float:
    """1 when a word of the query shaped like code (``CODE_WORD``) has a rare token
    (idf at least ``IDENT_RARE`` of a one-card token's) that the card at
    ``lexical_top`` holds and the card at ``semantic_top`` does not (or semantic has
    no card), else 0. Why: the embedding model reads ``TIOCGWINSZ`` or ``WNOHANG``
    as noise, so when semantic's best card lacks the identifier the user typed and
    lexical's has it, semantic has missed what the query names. ``TIOCGWINSZ window
    size`` on man2 + man3: 1 (``ioctl_tty.2`` holds it, semantic's ``getunwind.2``
    does not); ``LOCK_EX``: 0 (neither ``lock`` nor ``ex`` is rare); a prose word,
    however rare: 0."""
    if stats.holds is None or stats.cards <= 0:
        return 0.0
    for word in stats.text.split():
        if not CODE_WORD.search(word):
            continue
        for token in dict.fromkeys(stats.terms(word)):
            df = stats.df.get(token, 0)
            if df <= 0 or rarity(df, stats.cards) < IDENT_RARE:
                continue
            if stats.holds(lexical_top, token) and not (
                    semantic_top is not None and stats.holds(semantic_top, token)):
                return 1.0
    return 0.0


def name_share(query: str, name: str, terms: Callable[[str], list[str]] = tokens) -> float:
    """The share of ``query``'s distinct tokens that spell ``name`` (a card's name),
    when the query holds all of the name's tokens; else 0. Why: a query that
    contains a card's whole name was most likely typed to find that card, and
    the more of the query the name is, the surer that is (``make`` in a
    ten-word sentence is a verb, not a request for ``make.1``)."""
    asked, named = set(terms(query)), set(terms(name))
    if not asked or not named or not named <= asked:
        return 0.0
    return len(named) / len(asked)


def _ramp(x: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (x - low) / (high - low)))


def keywordness(params: AdaptiveParams, sig: dict[str, float]) -> float:
    """How much the query looks like a keyword query, 0..1: the mean of ``short``
    (1 at ``words_short`` words or fewer, 0 at ``words_long`` or more, linear
    between) and ``code``, mixed with the rare-token cue ``rare`` (0 at mean idf
    ``idf_low`` or below, 1 at ``idf_high`` or above) by ``idf_weight``."""
    short = 1.0 - _ramp(sig["words"], params.words_short, params.words_long)
    rare = _ramp(sig["idf"], params.idf_low, params.idf_high)
    w = params.idf_weight
    return (1.0 - w) * 0.5 * (short + sig["code"]) + w * rare


def lexical_confidence(params: AdaptiveParams, sig: dict[str, float]) -> float:
    """How sure the lexical arm is of its top card, 0..1: its top-score ``gap``
    over ``gap_full`` (1 at ``gap_full`` or more)."""
    return _ramp(sig["gap"], 0.0, params.gap_full)


def adaptive_alpha(params: AdaptiveParams, sig: dict[str, float]) -> float:
    """``alpha_prose − (alpha_prose − alpha_keyword) · keywordness``, then
    ``+ gap_weight · (½ − lexical_confidence) − name_weight · name − ident_weight ·
    ident``, kept within 0..1: the query's shape says which arm usually wins such a
    query, the lexical window whether this time the lexical arm's top card stands
    clear of the rest or ties with them (two one-word identifiers, same shape, can
    differ here), ``name`` whether the query spells out that card's name (an exact
    answer the gap misses when the card's variants tie with it, as gcloud's alpha
    and beta pages do), and ``ident`` whether semantic's best card lacks a rare
    identifier of the query that lexical's holds (an identifier among plain words,
    ``TIOCGWINSZ window size``, has a prose-like shape and a crowd of cards
    matching its words)."""
    k = keywordness(params, sig)
    shape = params.alpha_prose - (params.alpha_prose - params.alpha_keyword) * k
    shift = params.gap_weight * (0.5 - lexical_confidence(params, sig))
    shift -= params.name_weight * sig.get("name", 0.0)
    shift -= params.ident_weight * sig.get("ident", 0.0)
    return min(1.0, max(0.0, shape + shift))


# ------------------------------------------------------------------ fusing


@dataclass(frozen=True)
class Fused:
    """The fused scores of the union of both windows, and how they came about."""

    positions: np.ndarray  # every card in either window, ascending (name order)
    scores: np.ndarray  # fused score per position
    contributions: tuple[np.ndarray, np.ndarray]  # (lexical, semantic) part of each score
    alpha: float | None = None
    signals: dict[str, float] | None = None


def sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)`` as int64: sorted, each position once. Not ``union1d`` (nor
    ``unique``): their first call imports ``numpy.ma``, 30 ms on a process's first
    hybrid query."""
    both = np.concatenate((np.ravel(a), np.ravel(b))).astype(np.int64)
    both.sort()
    if both.size < 2:
        return both
    keep = np.empty(both.size, dtype=bool)
    keep[0] = True
    np.not_equal(both[1:], both[:-1], out=keep[1:])
    return both[keep]


def fuse_windows(
    config: FusionConfig,
    lexical: tuple[np.ndarray, np.ndarray],
    semantic: tuple[np.ndarray, np.ndarray],
    stats: QueryStats | None = None,
    names: Sequence[str] | None = None,
) -> Fused:
    """Fuse two windows, each ``(positions in rank order, the arm's scores there)``.

    ``stats`` (the query and its tokens' document frequencies) feeds ``adaptive``'s
    signals; without it the query is empty to them and counts as prose. ``names``
    (every card's name, by position) feeds the ``name`` signal; without it that
    signal is 0."""
    (lex_pos, lex_s), (sem_pos, sem_s) = lexical, semantic
    union = sorted_union(lex_pos, sem_pos)
    where_lex = np.searchsorted(union, lex_pos)
    where_sem = np.searchsorted(union, sem_pos)
    if config.method == RRF:
        w_lex, w_sem = config.weights
        c_lex = np.zeros(union.size)
        c_sem = np.zeros(union.size)
        c_lex[where_lex] = w_lex / (config.k + np.arange(1, lex_pos.size + 1))
        c_sem[where_sem] = w_sem / (config.k + np.arange(1, sem_pos.size + 1))
        return Fused(union, c_lex + c_sem, (c_lex, c_sem))
    sig: dict[str, float] | None = None
    if config.method == ADAPTIVE:
        sig = signals(stats or QueryStats("", 0, {}), lex_pos, sem_pos, lex_s, names)
        alpha = adaptive_alpha(config.adaptive, sig)
    else:
        alpha = config.alpha
    n_lex, n_sem = normalise(lex_s, config.norm), normalise(sem_s, config.norm)
    v_lex = np.full(union.size, n_lex.floor)
    v_sem = np.full(union.size, n_sem.floor)
    v_lex[where_lex] = n_lex.values
    v_sem[where_sem] = n_sem.values
    c_lex, c_sem = (1.0 - alpha) * v_lex, alpha * v_sem
    return Fused(union, c_lex + c_sem, (c_lex, c_sem), alpha, sig)
