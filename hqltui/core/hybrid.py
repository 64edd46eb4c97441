"""Hybrid retrieval: weighted reciprocal rank fusion of a lexical arm and semantic.

``score(card) = Σ_arm weight_arm / (k + rank_arm(card))`` over the arms that
selected the card, with 1-based ranks inside each arm's window.

* Each window is a fixed number (``[search] window``), never derived from the
  result limit, so asking for more results never reorders the first ones
  (the fusion's stability law). The window is cut with the shared rank order, so ties
  straddling its edge are decided by card name.
* Fused ties break by card name (the shared rank order again).
* Every hit carries each arm's ``ArmScore(rank, score)``, or ``None`` where
  that arm did not select the card.
* A refused arm makes hybrid refuse with the same message (never a quiet
  single-arm answer); the arms' warnings (stale, absent, orphan) carry over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hqltui.core.ranking import (
    ArmScore,
    Hit,
    Passage,
    Ranking,
    Refusal,
    Retrieval,
    Warning,
    rank_indices,
)

FUSION = "rrf"
MODEL = "hqltui.rrf.v1"
REVISION = "0.1.0"


@dataclass(frozen=True)
class ArmScores:
    """One arm's scores over every card (aligned with the names).

    ``top`` optionally holds the positions of the best cards already in rank
    order (at least as many as any window or limit asked of it, or every card
    above zero) and ``total`` the count above zero, so one ranking pass serves
    both the arm's own column and its hybrid window.
    """

    arm: str
    scores: np.ndarray | None
    retrieval: Retrieval | None
    warnings: tuple[Warning, ...] = ()
    refusal: Refusal | None = None
    top: np.ndarray | None = None
    total: int | None = None
    # semantic with passages: the answering passage of each card scored exactly
    passages: Mapping[int, Passage] | None = None

    def ranked(self, cut: int) -> np.ndarray:
        """Positions of the best ``cut`` cards, in rank order."""
        assert self.scores is not None
        if self.top is not None and (self.top.size >= cut or self.top.size == self.total):
            return self.top[:cut]
        return rank_indices(self.scores, cut)[0]


def fuse(
    arms: list[ArmScores],
    names: list[str] | tuple[str, ...],
    *,
    query: str,
    k: float,
    weights: dict[str, float],
    window: int,
    limit: int | None,
    exclude: np.ndarray | None = None,
) -> Ranking:
    """The hybrid ranking of ``arms`` (scores aligned with ``names``, sorted by name).

    ``exclude`` (bool per card) leaves cards out whatever their arms say: cards whose
    index rows cannot be scored are shown in no column that depends on them."""
    warnings = tuple(w for arm in arms for w in arm.warnings)
    windows = {arm.arm: window for arm in arms}
    retrieval = Retrieval(
        arm="hybrid",
        query=query,
        index=" + ".join(a.retrieval.index for a in arms if a.retrieval is not None),
        model=MODEL,
        revision=REVISION,
        metric="reciprocal rank",
        approximate=any(a.retrieval.approximate for a in arms if a.retrieval is not None),
        query_vector_source=next(
            (a.retrieval.query_vector_source for a in arms if a.arm == "semantic" and a.retrieval),
            None,
        ),
        fusion=FUSION,
        k=k,
        weights={arm.arm: float(weights[arm.arm]) for arm in arms},
        windows=windows,
        arms=tuple(a.retrieval for a in arms if a.retrieval is not None),
    )
    for arm in arms:
        if arm.refusal is not None:
            return Ranking(retrieval=retrieval, warnings=warnings, refusal=arm.refusal)
    if arms and all(weights[arm.arm] == 0 for arm in arms):
        warnings += (
            Warning(
                "config",
                "hybrid is empty because every arm's weight is 0 in `[search] weights` "
                "(each fused score is 0, and a score of 0 is no evidence): give lexical or "
                "semantic a weight above 0",
            ),
        )
    fused = np.zeros(len(names), dtype=np.float64)
    selected: list[dict[int, ArmScore]] = []
    for arm in arms:
        assert arm.scores is not None
        chosen = arm.ranked(window)
        ranks = np.arange(1, chosen.size + 1, dtype=np.float64)
        fused[chosen] += weights[arm.arm] / (k + ranks)
        selected.append(
            {
                int(i): ArmScore(r, float(arm.scores[i]))
                for r, i in enumerate(chosen.tolist(), start=1)
            }
        )
    if exclude is not None and exclude.any():
        fused[exclude] = 0.0
    order, total = rank_indices(fused, limit)
    hits = tuple(
        Hit(
            card=str(names[i]),
            score=float(fused[i]),
            rank=r,
            arms={arm.arm: sel.get(i) for arm, sel in zip(arms, selected, strict=True)},
        )
        for r, i in enumerate(order.tolist(), start=1)
    )
    return Ranking(hits=hits, retrieval=retrieval, warnings=warnings, total=total)
