"""Hybrid retrieval: the lexical arm and semantic fused by one method of ``fusion``.

The laws (RFC 0048), for every method:

* Each arm's scores <= 0 are dropped before fusion; each window is that arm's
  best ``[search] window`` cards, a fixed number never derived from the result
  limit, so asking for more results never reorders the first ones. The window
  is cut with the shared rank order, so ties straddling its edge are decided by
  card name.
* Every card in either window is ranked by its fused score, which may be
  negative (``zscore``); a card outside one arm's window has that arm's rank and
  score ``None`` and gets that window's floor (``fusion`` says which).
* Fused ties break by card name; every hit carries each arm's
  ``ArmScore(rank, score)`` (or ``None``) and each arm's contribution.
* A refused arm makes hybrid refuse with the same message (never a quiet
  single-arm answer); the arms' warnings (stale, absent, orphan) carry over.
  Everything ranks one snapshot (the session's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from hqltui.core.fusion import FusionConfig, QueryStats, fuse_windows
from hqltui.core.names import FUSIONS
from hqltui.core.ranking import (
    ArmScore,
    Hit,
    Passage,
    Ranking,
    Refusal,
    Retrieval,
    Warning,
    order_among,
    rank_indices,
)

MODEL = "hqltui.fusion.v2"
REVISION = "0.2.0"
METRICS = {name: f.metric for name, f in FUSIONS.items()}  # each method's provenance metric


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
    config: FusionConfig,
    window: int,
    limit: int | None,
    exclude: np.ndarray | None = None,
    stats: QueryStats | None = None,
) -> Ranking:
    """The hybrid ranking of ``arms`` = [lexical, semantic] (scores aligned with
    ``names``, sorted by name), fused by ``config``.

    ``exclude`` (bool per card) leaves cards out whatever their arms say: cards whose
    index rows cannot be scored are shown in no column that depends on them.
    ``stats`` (the query's document frequencies) feeds ``adaptive``'s signals."""
    lexical, semantic = arms
    warnings = tuple(w for arm in arms for w in arm.warnings)
    windows = {arm.arm: window for arm in arms}
    rrf = config.method == "rrf"
    base = Retrieval(
        arm="hybrid",
        query=query,
        index=" + ".join(a.retrieval.index for a in arms if a.retrieval is not None),
        model=MODEL,
        revision=REVISION,
        metric=METRICS[config.method],
        approximate=any(a.retrieval.approximate for a in arms if a.retrieval is not None),
        query_vector_source=next(
            (a.retrieval.query_vector_source for a in arms if a.arm == "semantic" and a.retrieval),
            None,
        ),
        fusion=config.method,
        k=config.k if rrf else None,
        weights={lexical.arm: config.weights[0], semantic.arm: config.weights[1]} if rrf else None,
        windows=windows,
        arms=tuple(a.retrieval for a in arms if a.retrieval is not None),
        fusion_config=config.label(),
        parameters=config.parameters(),
        alpha=None if rrf else config.alpha,
    )
    for arm in arms:
        if arm.refusal is not None:
            return Ranking(retrieval=base, warnings=warnings, refusal=arm.refusal)
    if rrf and all(w == 0 for w in config.weights):
        warnings += (
            Warning(
                "config",
                "hybrid is empty because every arm's weight is 0 in `[search] weights` "
                "(each fused score is 0, and a score of 0 is no evidence): give lexical or "
                "semantic a weight above 0",
            ),
        )
        return Ranking(retrieval=base, warnings=warnings)
    chosen = []
    for arm in arms:
        assert arm.scores is not None
        top = arm.ranked(window)
        chosen.append((top, arm.scores[top]))
    fused = fuse_windows(config, chosen[0], chosen[1], stats, names)
    retrieval = base if fused.alpha is None else replace(
        base, alpha=fused.alpha, signals=fused.signals
    )
    keep = np.ones(fused.positions.size, dtype=bool)
    if exclude is not None and exclude.any():
        keep = ~exclude[fused.positions]
    order = np.flatnonzero(keep)
    order = order[order_among(fused.positions[order], fused.scores[order])]
    total = int(order.size)
    if limit is not None:
        order = order[: max(0, limit)]
    ranks = [
        {int(i): ArmScore(r, float(s))
         for r, (i, s) in enumerate(zip(top.tolist(), scores.tolist(), strict=True), start=1)}
        for top, scores in chosen
    ]
    hits = tuple(
        Hit(
            card=str(names[int(fused.positions[j])]),
            score=float(fused.scores[j]),
            rank=r,
            arms={arm.arm: sel.get(int(fused.positions[j]))
                  for arm, sel in zip(arms, ranks, strict=True)},
            contributions={arm.arm: float(part[j])
                           for arm, part in zip(arms, fused.contributions, strict=True)},
        )
        for r, j in enumerate(order.tolist(), start=1)
    )
    return Ranking(hits=hits, retrieval=retrieval, warnings=warnings, total=total)


def fusion_summary(retrieval: Retrieval) -> str:
    """A hybrid retrieval's method and parameters in one line, as the CLI and the app
    show them: ``rrf k=60 · weights bm25 1, semantic 1``, ``convex alpha=0.7 ·
    norm zscore``, ``adaptive alpha=0.43 (words 3, code 0.33, idf 0.52) · norm dbsf``."""
    if retrieval.fusion == "rrf":
        weights = ", ".join(f"{k} {v:g}" for k, v in (retrieval.weights or {}).items())
        return f"rrf k={retrieval.k:g} · weights {weights}"
    params = retrieval.parameters or {}
    alpha = "?" if retrieval.alpha is None else f"{retrieval.alpha:.2f}"
    head = f"{retrieval.fusion} alpha={alpha}"
    if retrieval.signals:
        sig = retrieval.signals
        head += " (" + ", ".join(f"{k} {sig[k]:.3g}" for k in SHOWN_SIGNALS if k in sig) + ")"
    return f"{head} · norm {params.get('norm', '?')}"


def fusion_title(retrieval: Retrieval | None, fallback: str) -> str:
    """The hybrid column's short title part: ``rrf``, ``convex α 0.70``, ``adaptive α 0.43``."""
    if retrieval is None or retrieval.fusion is None:
        return fallback
    if retrieval.fusion == "rrf" or retrieval.alpha is None:
        return retrieval.fusion
    return f"{retrieval.fusion} α {retrieval.alpha:.2f}"


# what adaptive_alpha reads, shown beside α
SHOWN_SIGNALS = ("words", "code", "idf", "gap", "name", "ident")
