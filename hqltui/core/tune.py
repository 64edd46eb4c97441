"""Finding the fusion that earns its place on a user's own labelled queries (``tune``).

``tune(session, queries, grid=..., folds=..., progress=..., cancelled=...)`` scores
every configuration of a named grid (``fusion.GRIDS``) against the better of the two
arms it fuses, per labelled kind, under k-fold cross-validation, decides whether
the vault's configured fusion should change (``decide``), and returns a
``TuneResult`` (rows best first, ``best`` the decision). The CLI (``hql-tui tune``)
and the app's jobs are thin wrappers: ``progress(done, total)`` is called after
each configuration, ``cancelled()`` is polled between them (a cancelled run
returns what it scored, ``cancelled=True``).

How a configuration is scored (deterministic: same labels, same table):

* every query's two arms are scored once, on one ``Session`` snapshot
  (``Session.arm_windows``, the configured lexical arm); each configuration only
  re-fuses those windows (``Session.fuse``), and every metric is ``eval``'s
  (``hqltui.core.evaluation``): ``reciprocal_ranks`` gives the table of
  per-query reciprocal ranks that ``score_rows`` turns into rows;
* the queries of each kind are dealt into ``k`` folds in file order (query i of
  a kind goes to fold i mod k; default k = min(5, the fewest queries of a kind));
  a kind with fewer than 4 queries is refused, by name (``TooFewQueries``);
* in each fold, the ratio is the configuration's MRR@10 over the better arm's
  MRR@10 on that fold's queries (a fold where both arms and the configuration
  score 0 counts 1; where only the arms score 0 it is skipped); a kind's ratio is
  the mean over its folds, and a configuration's score is its **worst** kind's
  ratio. Rows are sorted by worst ratio, then the mean of the kinds' ratios,
  then the label.

How the winner is chosen (``decide``): the vault's configured fusion (the
*incumbent*; the shipped default when ``[search]`` names none) is always scored.
The top row replaces it only when it is better by more than one standard error:
per fold f, each configuration's fold score is its worst kind's ratio in fold f
(fold f of every kind; a kind whose better arm finds nothing in that fold is
left out of it, for every configuration alike); the margin is the mean over
folds of (top − incumbent) and its standard error the sample deviation of those
differences over √folds. The configurations are fixed (nothing is fitted on a
fold), so the folds are disjoint samples of the user's queries and the margin's
error is a fair measure of the noise. ``margin > SE`` switches; otherwise the
incumbent is kept. Why: with ~20 queries of a kind, the top of a 120-row grid
is partly luck (the winner's curse); on the real corpora, always taking the top
row lost to the default on held-out queries (``benchmarks/results/tune.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hqltui.core.evaluation import DEPTH, LabelledQuery, reciprocal_rank
from hqltui.core.fusion import GRIDS, FusionConfig, grid

__all__ = ["GRIDS", "TuneResult", "grid_configs", "tune"]

MIN_PER_KIND = 4
MAX_FOLDS = 5
ARM_KEYS = ("lexical", "semantic")

class TooFewQueries(ValueError):
    """A labelled kind has too few queries to cross-validate."""


@dataclass(frozen=True)
class KindScore:
    queries: int
    mrr: float  # over every query of the kind
    better: float  # the better arm's MRR@10 over them
    ratio: float  # mean over folds of the fold ratios
    worst_fold: float
    folds: tuple[float, ...] = ()  # each fold's ratio (skipped folds left out)


@dataclass(frozen=True)
class TuneRow:
    config: FusionConfig
    kinds: dict[str, KindScore]
    by_fold: tuple[float | None, ...] = ()  # per fold: the worst kind's ratio there

    @property
    def worst(self) -> float:
        return min(k.ratio for k in self.kinds.values())

    @property
    def mean(self) -> float:
        return sum(k.ratio for k in self.kinds.values()) / len(self.kinds)


@dataclass(frozen=True)
class Decision:
    """Whether the top row replaces the incumbent: ``margin`` (mean over folds of the
    per-fold score difference, top − incumbent) against its standard error ``se``."""

    winner: TuneRow
    incumbent: TuneRow
    top: TuneRow
    margin: float
    se: float
    folds: int  # folds compared

    @property
    def kept(self) -> bool:
        return self.winner is self.incumbent

    def reason(self) -> str:
        """One line saying why the winner won."""
        if self.top is self.incumbent:
            return "the configured fusion tops the table"
        if not math.isfinite(self.se):
            return (f"kept the configured fusion: only {self.folds} fold(s) where the arms "
                    "find anything, too few to tell the top row from it")
        by = (f"the top row's margin over it is {self.margin:+.3f} ± {self.se:.3f} (per-fold "
              f"worst-kind ratio, mean ± one standard error over {self.folds} folds)")
        if self.kept:
            return f"kept the configured fusion: {by}; tune changes it only beyond one SE"
        return f"replaces the configured fusion `{self.incumbent.config.label()}`: {by}"


@dataclass(frozen=True)
class TuneResult:
    rows: list[TuneRow]  # best first
    folds: int
    lexical: str
    arms: dict[str, dict[str, float]]  # kind -> arm -> MRR@10
    total: int  # configurations scored (the grid and the incumbent)
    cancelled: bool = False
    refused: list[str] = field(default_factory=list)  # arms' refusals met (counted as misses)
    decision: Decision | None = None  # None: nothing scored, or the incumbent not reached

    @property
    def best(self) -> TuneRow | None:
        """What tune recommends: the decision's winner (the top row if undecided)."""
        if self.decision is not None:
            return self.decision.winner
        return self.rows[0] if self.rows else None


def grid_configs(name: str, base: FusionConfig) -> list[FusionConfig]:
    """The named grid's configurations (``fusion.GRIDS``; parameters not named come
    from ``base``)."""
    return grid(name, base)


def fold_count(queries: Sequence[LabelledQuery], folds: int | None) -> int:
    """``folds``, or min(5, the fewest queries of a kind); refuses a kind below 4."""
    counts: dict[str, int] = {}
    for q in queries:
        counts[q.kind] = counts.get(q.kind, 0) + 1
    small = sorted(k for k, n in counts.items() if n < MIN_PER_KIND)
    if small:
        named = ", ".join(f"`{k}` has {counts[k]}" for k in small)
        raise TooFewQueries(
            f"too few labelled queries to cross-validate: {named}; tune needs at least "
            f"{MIN_PER_KIND} of each kind"
        )
    fewest = min(counts.values())
    k = min(MAX_FOLDS, fewest) if folds is None else folds
    if not 2 <= k <= fewest:
        raise TooFewQueries(
            f"--folds must be between 2 and {fewest} (the fewest queries of a kind)"
        )
    return k


@dataclass(frozen=True)
class RankTable:
    """Per query (in file order): each arm's reciprocal rank, and each configuration's."""

    arms: list[dict[str, float]]  # query -> {"lexical": rr, "semantic": rr}
    configs: dict[FusionConfig, list[float]]  # config -> rr per query
    refused: list[str]
    cancelled: bool = False


def reciprocal_ranks(
    session: Any,
    queries: Sequence[LabelledQuery],
    configs: Sequence[FusionConfig],
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    live: bool = False,
) -> RankTable:
    """Every query's arms scored once on ``session``, every config re-fusing them:
    ``eval``'s reciprocal rank of each (a refusal counts 0 and is listed)."""
    lexical = session.search.lexical
    windows, arm_rr, refused = [], [], []
    for q in queries:
        scored = session.arm_windows(q.text, lexical=lexical, limit=DEPTH, live=live)
        windows.append(list(scored.values()))
        rr = {}
        for arm, s in scored.items():
            ranking = session.ranking_of(s, DEPTH)
            if ranking.refusal is not None:
                refused.append(ranking.refusal.message)
            rr["lexical" if arm == lexical else "semantic"] = (
                0.0 if ranking.refusal is not None else reciprocal_rank(ranking.names(), q.relevant)
            )
        arm_rr.append(rr)
    table: dict[FusionConfig, list[float]] = {}
    for done, config in enumerate(configs, start=1):
        if cancelled is not None and cancelled():
            return RankTable(arm_rr, table, refused, True)
        rr = []
        for i, q in enumerate(queries):
            ranking = session.fuse(q.text, windows[i], DEPTH, config)
            rr.append(0.0 if ranking.refusal is not None
                      else reciprocal_rank(ranking.names(), q.relevant))
        table[config] = rr
        if progress is not None:
            progress(done, len(configs))
    return RankTable(arm_rr, table, refused)


def tune(
    session: Any,
    queries: Sequence[LabelledQuery],
    *,
    grid: str = "default",
    folds: int | None = None,
    configs: list[FusionConfig] | None = None,
    incumbent: FusionConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    live: bool = False,
) -> TuneResult:
    """Score ``configs`` (default: the grid ``grid``) and the incumbent (default: the
    vault's configured fusion, scored first) on ``queries``; see the module doc."""
    k = fold_count(queries, folds)
    base = session.search.fusion_config()
    incumbent = incumbent or base
    configs = list(dict.fromkeys([incumbent, *(configs or grid_configs(grid, base))]))
    ranks = reciprocal_ranks(session, queries, configs, progress=progress,
                             cancelled=cancelled, live=live)
    rows = score_rows(queries, k, ranks.configs, ranks.arms)
    arms = {kind: {a: _mean([ranks.arms[i][a] for i in idx]) for a in ARM_KEYS}
            for kind, idx in _by_kind(queries).items()}
    return TuneResult(rows, k, session.search.lexical, arms, len(configs), ranks.cancelled,
                      sorted(set(ranks.refused)), decide(rows, incumbent))


def score_rows(queries: Sequence[LabelledQuery], k: int,
               configs: Mapping[FusionConfig, Sequence[float]],
               arm_rr: Sequence[Mapping[str, float]]) -> list[TuneRow]:
    """The table, best first, from per-query reciprocal ranks (``reciprocal_ranks``)."""
    folds_of = _folds(queries, k)
    rows = [_row(config, folds_of, rr, arm_rr) for config, rr in configs.items()]
    return sorted(rows, key=lambda r: (-r.worst, -r.mean, r.config.label()))


def decide(rows: Sequence[TuneRow], incumbent: FusionConfig) -> Decision | None:
    """The top row if it beats the incumbent's per-fold score by more than one standard
    error of the paired fold differences, else the incumbent (module doc)."""
    mine = next((r for r in rows if r.config == incumbent), None)
    if mine is None or not rows:
        return None
    top = rows[0]
    if top is mine:
        return Decision(mine, mine, top, 0.0, 0.0, len(mine.by_fold))
    diffs = [a - b for a, b in zip(top.by_fold, mine.by_fold, strict=True)
             if a is not None and b is not None]
    if len(diffs) < 2:
        return Decision(mine, mine, top, _mean(diffs), math.inf, len(diffs))
    margin = _mean(diffs)
    spread = math.sqrt(sum((d - margin) ** 2 for d in diffs) / (len(diffs) - 1))
    se = spread / math.sqrt(len(diffs))
    winner = top if margin > 0 and margin > se else mine
    return Decision(winner, mine, top, margin, se, len(diffs))


def _by_kind(queries: Sequence[LabelledQuery]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        out.setdefault(q.kind, []).append(i)
    return out


def _folds(queries: Sequence[LabelledQuery], k: int) -> dict[str, list[list[int]]]:
    """Per kind, ``k`` lists of query positions: the kind's i-th query in fold i mod k."""
    return {kind: [idx[f::k] for f in range(k)] for kind, idx in _by_kind(queries).items()}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _row(config: FusionConfig, folds_of: dict[str, list[list[int]]], rr: Sequence[float],
         arm_rr: Sequence[Mapping[str, float]]) -> TuneRow:
    kinds: dict[str, KindScore] = {}
    per_fold: list[list[float]] = []  # fold f -> the kinds' ratios in it (arms found something)
    for kind, folds in folds_of.items():
        ratios = []
        for f, fold in enumerate(folds):
            mine = _mean([rr[i] for i in fold])
            better = max(_mean([arm_rr[i][a] for i in fold]) for a in ARM_KEYS)
            if better > 0:
                ratios.append(mine / better)
                while len(per_fold) <= f:
                    per_fold.append([])
                per_fold[f].append(mine / better)
            elif mine == 0:
                ratios.append(1.0)
        every = [i for fold in folds for i in fold]
        kinds[kind] = KindScore(
            queries=len(every),
            mrr=_mean([rr[i] for i in every]),
            better=max(_mean([arm_rr[i][a] for i in every]) for a in ARM_KEYS),
            ratio=_mean(ratios) if ratios else 1.0,
            worst_fold=min(ratios) if ratios else 1.0,
            folds=tuple(ratios),
        )
    k = max(len(f) for f in folds_of.values())
    by_fold = tuple(min(per_fold[f]) if f < len(per_fold) and per_fold[f] else None
                    for f in range(k))
    return TuneRow(config, kinds, by_fold)


def search_settings(config: FusionConfig) -> dict[str, Any]:
    """The ``[search]`` keys that select ``config`` (``adaptive`` also its sub-table)."""
    out: dict[str, Any] = {"fusion": config.method}
    if config.method == "rrf":
        out["rrf_k"] = config.k
        out["weights"] = {"lexical": config.weights[0], "semantic": config.weights[1]}
    elif config.method == "convex":
        out["alpha"] = config.alpha
        out["norm"] = config.norm
    else:
        out["norm"] = config.norm
        out["adaptive"] = dict(config.adaptive.__dict__)
    return out
