"""The shapes every retrieval arm returns, and the one rank order.

Public API (stable; the app and the commands build on it):

``Warning(kind, message, cards=())``
    Something the user must see but that does not stop a ranking. ``kind`` is
    one of ``WARNING_KINDS``: ``stale`` (a card's text changed since the index
    was built; ``cards`` names it), ``absent`` (cards with no index row, counted
    in one warning; ``cards`` lists them), ``orphan`` (index rows for cards no
    longer in the vault), ``loader`` (a document skipped, or the vault is not an
    HMD vault), ``config`` (a table of ``hql.toml`` is refused), ``link`` (an
    unresolved ``[[link]]`` or relation), ``embedder`` (live query embedding is
    unavailable, and why), ``arm`` (an arm's structures could not be built: it
    refuses alone, the other arms answer).

``Refusal(message, fix)``
    An arm that cannot answer honestly. ``fix`` is the command (or app action)
    that removes the cause, e.g. ``hql-semantics build --query "…"``. A refused
    ranking has no hits; it never falls back to another arm. ``fix`` may be
    empty when no command removes the cause (an arm that broke: ``arm_failure``).

``arm_failure(arm, doing, exc) -> Refusal``
    The one wording of a broken arm: ``"<arm> <doing>: <Error>: <message>"`` on
    one line (e.g. ``hashbag cannot be built: MemoryError: …``), so an arm
    whose structures or scoring raise refuses alone, by name, without a traceback.

``Retrieval``
    What ran: ``arm`` (``hashbag``, ``bm25``, ``semantic``, ``hybrid``),
    ``query``, ``index`` (vault root for lexical arms, the index file for
    semantic), ``model``, ``revision``, ``metric``, ``approximate`` (always
    ``False`` here: every arm scores every card exactly), and
    ``query_vector_source`` (semantic: ``index`` for the index's ``query``
    table, ``live:local`` or ``live:http`` for a live embedding with the index's
    own model and revision; lexical arms: ``text``), ``runtime`` (a live local
    vector's: ``onnxruntime`` or ``torch``; never part of the revision). For hybrid also ``fusion``
    (``rrf`` | ``convex`` | ``adaptive``), ``fusion_config`` (its label,
    ``convex:alpha=0.7,norm=zscore``), ``parameters`` (what the method read),
    ``k`` and ``weights`` (rrf; else ``None``), ``alpha`` (convex: the set α;
    adaptive: this query's α), ``signals`` (adaptive: the values that set α),
    ``windows`` (arm name → number) and ``arms`` (each fused arm's own
    ``Retrieval``). ``to_json()`` gives the
    documented JSON object.

``Hit(card, score, rank, arms)``
    ``card`` is the card's name (look the card up with ``Session.card(name)``),
    ``rank`` is 1-based. ``arms`` is empty for a single-arm ranking; for hybrid
    it maps every fused arm's name to ``ArmScore(rank, score)``, or to ``None``
    where that arm did not select the card within its window; ``contributions``
    maps each fused arm to its part of the fused score (they sum to ``score``).

``Ranking(hits, retrieval, warnings, refusal, total)``
    ``hits`` best first (at most the requested limit), ``total`` the number of
    cards with a score above zero before the limit was applied. Exactly one of
    "has a refusal" and "answered" holds; ``ok`` tells which.

``rank(scores, names, limit=None, *, key=None) -> (hits, total)``
    THE rank order: scores above zero only (``0``, negatives and NaN are "no
    evidence" and are dropped), score descending, ties by card name ascending.
    ``scores`` is a float array aligned with ``names``. ``key`` is an integer
    array giving each position's place in name order; omit it when ``names``
    is already sorted (a ``Session``'s cards always are). Only the top ``limit``
    become ``Hit`` objects. ``rank_indices`` returns the positions instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from hqltui.core.oneline import REASON_CHARS, one_line

__all__ = [
    "WARNING_KINDS",
    "ArmScore",
    "arm_failure",
    "Hit",
    "Passage",
    "Ranking",
    "Refusal",
    "Retrieval",
    "Warning",
    "name_key",
    "rank",
    "hits_at",
    "rank_indices",
    "order_among",
    "refine",
]

WARNING_KINDS = ("stale", "absent", "orphan", "loader", "config", "link", "embedder", "arm")


@dataclass(frozen=True)
class Warning:  # noqa: A001 - the project's own word for it; builtins.Warning is unused here
    kind: str
    message: str
    cards: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "cards": list(self.cards)}


def merge_warnings(*groups: Iterable[Warning]) -> tuple[Warning, ...]:
    """The warnings of every group in order, each message once (the first kept): the
    session's and every arm's answer, as the CLI and the app both list them."""
    seen: dict[str, Warning] = {}
    for group in groups:
        for warning in group:
            seen.setdefault(warning.message, warning)
    return tuple(seen.values())


@dataclass(frozen=True)
class Refusal:
    message: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "fix": self.fix}


def arm_failure(arm: str, doing: str, exc: BaseException) -> Refusal:
    """A refusal naming the arm that broke and why, in one line (no traceback)."""
    reason = one_line(str(exc), REASON_CHARS)
    kind = type(exc).__name__
    return Refusal(f"{arm} {doing}: {kind}: {reason}" if reason else f"{arm} {doing}: {kind}", "")


@dataclass(frozen=True)
class Retrieval:
    arm: str
    query: str
    index: str
    model: str
    revision: str
    metric: str
    approximate: bool = False
    query_vector_source: str | None = None
    runtime: str | None = None  # a live query vector's runtime: "onnxruntime" or "torch"
    fusion: str | None = None
    k: float | None = None
    weights: Mapping[str, float] | None = None
    windows: Mapping[str, int] | None = None
    arms: tuple[Retrieval, ...] = ()
    fusion_config: str | None = None  # e.g. "convex:alpha=0.7,norm=zscore"
    parameters: Mapping[str, Any] | None = None  # what the fusion method read
    alpha: float | None = None  # convex's α, or the α adaptive set for this query
    signals: Mapping[str, float] | None = None  # adaptive: the values that set α
    # An engine arm's evidence: the index that served it (or none: a full scan), the
    # statement, the engine's warning, execution time and query run id.
    engine: Mapping[str, Any] | None = None
    # semantic scoring cards with their passages: the recipe, its digest, the count, the rule
    passages: Mapping[str, Any] | None = None

    @property
    def vector_source(self) -> str | None:
        """The query vector's source as shown: ``live:local (onnxruntime)``."""
        source = self.query_vector_source
        return f"{source} ({self.runtime})" if source and self.runtime else source

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "arm": self.arm,
            "query": self.query,
            "index": self.index,
            "model": self.model,
            "revision": self.revision,
            "metric": self.metric,
            "approximate": self.approximate,
            "query_vector_source": self.query_vector_source,
        }
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.passages is not None:
            out["passages"] = dict(self.passages)
        if self.fusion is not None:
            out["fusion"] = self.fusion
            out["fusion_config"] = self.fusion_config
            out["parameters"] = dict(self.parameters or {})
            out["k"] = self.k
            out["weights"] = None if self.weights is None else dict(self.weights)
            out["alpha"] = self.alpha
            out["signals"] = None if self.signals is None else dict(self.signals)
            out["windows"] = dict(self.windows or {})
            out["arms"] = [arm.to_json() for arm in self.arms]
        if self.engine is not None:
            out["engine"] = dict(self.engine)
        return out


@dataclass(frozen=True)
class Passage:
    """The passage that answered for a card (semantic with passages): character offsets
    into the card's text (``text[start:end]``). ``ordinal`` is its number in the card, or
    None when the card's own vector scored best (the span is then the card's beginning,
    its first passage's, which that vector reads). Where a passage beat the card vector,
    the score is ``weight`` of that passage's and the rest of the card vector's
    (``hqltui.core.passage_scores``): ``second`` is then the card vector."""

    ordinal: int | None
    start: int
    end: int
    second: Passage | None = None
    weight: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "start": self.start, "end": self.end}

    def contributors(self) -> list[dict[str, Any]]:
        """Both texts that made the score, each with its weight (the JSON's ``passages``);
        empty when one did."""
        if self.second is None:
            return []
        return [{**self.to_json(), "weight": self.weight},
                {**self.second.to_json(), "weight": round(1.0 - self.weight, 12)}]


class ArmScore(NamedTuple):
    rank: int
    score: float


@dataclass(frozen=True)
class Hit:
    card: str
    score: float
    rank: int
    arms: Mapping[str, ArmScore | None] = field(default_factory=dict)
    contributions: Mapping[str, float] = field(default_factory=dict)  # hybrid: arm -> part
    passage: Passage | None = None  # semantic with passages (and hybrid): what answered

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"card": self.card, "score": self.score, "rank": self.rank}
        if self.passage is not None:
            out["passage"] = self.passage.to_json()
            if both := self.passage.contributors():
                out["passages"] = both
        if self.arms:
            out["arms"] = {
                name: None if a is None else {"rank": a.rank, "score": a.score}
                for name, a in self.arms.items()
            }
        if self.contributions:
            out["contributions"] = dict(self.contributions)
        return out


@dataclass(frozen=True)
class Ranking:
    hits: tuple[Hit, ...] = ()
    retrieval: Retrieval | None = None
    warnings: tuple[Warning, ...] = ()
    refusal: Refusal | None = None
    total: int = 0

    @property
    def ok(self) -> bool:
        return self.refusal is None

    def hit(self, card: str) -> Hit | None:
        """The hit for ``card`` if it made the cut."""
        for h in self.hits:
            if h.card == card:
                return h
        return None

    def names(self) -> list[str]:
        return [h.card for h in self.hits]

    def to_json(self) -> dict[str, Any]:
        return {
            "hits": [h.to_json() for h in self.hits],
            "total": self.total,
            "retrieval": None if self.retrieval is None else self.retrieval.to_json(),
            "warnings": [w.to_json() for w in self.warnings],
            "refusal": None if self.refusal is None else self.refusal.to_json(),
        }

    @classmethod
    def refused(
        cls,
        refusal: Refusal,
        retrieval: Retrieval | None = None,
        warnings: Sequence[Warning] = (),
    ) -> Ranking:
        return cls(retrieval=retrieval, warnings=tuple(warnings), refusal=refusal)


# ------------------------------------------------------------------ the rank order


def name_key(names: Sequence[str] | np.ndarray) -> np.ndarray:
    """Each position's place in name order (for ``names`` that are not sorted)."""
    order = sorted(range(len(names)), key=names.__getitem__)
    key = np.empty(len(names), dtype=np.int64)
    key[np.asarray(order, dtype=np.int64)] = np.arange(len(names), dtype=np.int64)
    return key


# A top-k is first looked for among the values at least the sample's own top
# (2k / SAMPLE_STEP + 8)-th: a partition of a few hundred values instead of every one,
# for arrays of at least SAMPLE_FROM values (below that a plain partition costs less).
SAMPLE_STEP = 16
SAMPLE_FROM = 8192


def kth_largest(values: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``values`` (1 <= k <= size), exactly as ``np.partition``
    gives it, in a fraction of its time on large arrays: a strided sample's own top
    gives a threshold, and when at least ``k`` values reach it the ``k`` largest are all
    among them (else every value is partitioned)."""
    n = values.size
    want = 2 * k // SAMPLE_STEP + 8
    if n >= SAMPLE_FROM and n // SAMPLE_STEP > 4 * want:
        sample = values[::SAMPLE_STEP]
        threshold = np.partition(sample, sample.size - want)[sample.size - want]
        above = values[values >= threshold]
        if above.size >= k:
            return float(np.partition(above, above.size - k)[above.size - k])
    return float(np.partition(values, n - k)[n - k])


def rank_indices(
    scores: np.ndarray, limit: int | None = None, *, key: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """Positions of the top ``limit`` scores above zero in rank order, and how many were > 0.

    Ties are decided by ``key`` ascending (default: the position itself, i.e.
    the names are sorted). Exact at the cut: every score equal to the
    ``limit``-th best is kept until the tie is ordered by name, then cut.
    """
    scores = np.asarray(scores, dtype=np.float64)
    positions = np.flatnonzero(scores > 0.0)  # NaN compares False: dropped too
    total = int(positions.size)
    if limit is not None and limit <= 0:
        return positions[:0], total
    values = scores[positions]
    if limit is not None and limit < total:
        # The limit-th largest value; keep everything at least that large, so a
        # tie straddling the cut is decided by name below, not by partition order.
        kth = kth_largest(values, limit)
        keep = values >= kth
        positions = positions[keep]
        values = values[keep]
    ties = positions if key is None else np.asarray(key)[positions]
    order = np.lexsort((ties, -values))  # last key is primary: score desc, then name
    chosen = positions[order]
    if limit is not None:
        chosen = chosen[:limit]
    return chosen, total


def order_among(positions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Indices that order candidates (``positions`` of name-sorted cards, one value
    each) by value descending, ties by name: the rank order without the drop of
    scores <= 0, since a fused score may be negative (the arms' own scores were
    dropped at <= 0 before fusing)."""
    positions = np.asarray(positions, dtype=np.int64)
    return np.lexsort((positions, -np.asarray(values, dtype=np.float64)))


def rank(
    scores: np.ndarray,
    names: Sequence[str] | np.ndarray,
    limit: int | None = None,
    *,
    key: np.ndarray | None = None,
) -> tuple[tuple[Hit, ...], int]:
    """``Hit`` objects for the top ``limit`` (see ``rank_indices``), and the total above zero."""
    chosen, total = rank_indices(scores, limit, key=key)
    return hits_at(chosen, scores, names), total


def hits_at(
    positions: np.ndarray, scores: np.ndarray, names: Sequence[str] | np.ndarray
) -> tuple[Hit, ...]:
    """``Hit`` objects for positions already in rank order (ranks 1, 2, ...)."""
    values = np.asarray(scores, dtype=np.float64)
    return tuple(
        Hit(card=str(names[i]), score=float(values[i]), rank=r)
        for r, i in enumerate(np.asarray(positions).tolist(), start=1)
    )


def in_doubt(
    approx: np.ndarray,
    cut: int | None,
    tolerance: float | np.ndarray,
    sign: float | np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """The positions ``refine`` recomputes, and the floor it found for the cut: a lower
    bound on the ``cut``-th largest exact score (-inf when no cut is set or at most ``cut``
    positions may be above zero). A position outside the choice is provably outside the
    top ``cut`` and of known sign, so a later pass need look only at the positions chosen.
    """
    approx = np.asarray(approx, dtype=np.float64)
    half = np.asarray(tolerance, dtype=np.float64) / 2
    positive = approx > tolerance
    floor = -np.inf
    if cut is not None and cut <= 0:
        reach = np.zeros(approx.shape, dtype=bool)
    elif cut is not None and int(positive.sum()) > cut:
        # the cut-th largest lower bound among the positions above the tolerance
        floor = kth_largest(np.where(positive, approx - half, -np.inf), cut)
        reach = approx + half >= floor
    else:  # every position that could be above zero
        reach = approx >= -np.asarray(tolerance)
    doubtful = reach | (np.abs(approx) <= (tolerance if sign is None else sign))
    return np.flatnonzero(doubtful), floor


def refine(
    approx: np.ndarray,
    exact: Callable[[np.ndarray], np.ndarray],
    cut: int | None,
    tolerance: float | np.ndarray,
    sign: float | np.ndarray | None = None,
) -> np.ndarray:
    """Scores that are exact wherever they can decide a ranking cut at ``cut``.

    ``approx`` comes from one fast vectorised pass whose error is below half of
    ``tolerance`` (one for all, or each position its own); ``exact(positions)``
    recomputes chosen positions exactly. Every position that could reach the top
    ``cut`` (its upper bound at least the ``cut``-th largest lower bound), or whose sign
    is in doubt (within ``sign`` of zero, ``tolerance`` unless given), is recomputed
    (``in_doubt``), so ``rank(refined, names, limit)`` for any ``limit <= cut`` equals
    the ranking of the exact scores.
    """
    positions, _ = in_doubt(approx, cut, tolerance, sign)
    out = np.array(approx, dtype=np.float64)
    if positions.size:
        out[positions] = exact(positions)
    return out
