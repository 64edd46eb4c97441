"""Finding the fusion that earns its place on a user's own labelled queries (``tune``).

``tune(session, queries, grid=..., folds=..., progress=..., cancelled=...)`` scores
every configuration of a named grid (``GRIDS``) against the better of the two
arms it fuses, per labelled kind, under k-fold cross-validation, and returns a
``TuneResult`` (rows best first). The CLI (``hql-tui tune``) and the app's jobs
are thin wrappers: ``progress(done, total)`` is called after each configuration,
``cancelled()`` is polled between them (a cancelled run returns what it scored,
``cancelled=True``).

How a configuration is scored (deterministic: same labels, same table):

* every query's two arms are scored once, on one ``Session`` snapshot
  (``Session.arm_windows``, the configured lexical arm); each configuration only
  re-fuses those windows (``Session.fuse``), and every metric is ``eval``'s
  (``hqltui.core.evaluation``);
* the queries of each kind are dealt into ``k`` folds in file order (query i of
  a kind goes to fold i mod k; default k = min(5, the fewest queries of a kind));
  a kind with fewer than 4 queries is refused, by name (``TooFewQueries``);
* in each fold, the ratio is the configuration's MRR@10 over the better arm's
  MRR@10 on that fold's queries (a fold where both arms and the configuration
  score 0 counts 1; where only the arms score 0 it is skipped); a kind's ratio is
  the mean over its folds, and a configuration's score is its **worst** kind's
  ratio. Rows are sorted by worst ratio, then the mean of the kinds' ratios,
  then the label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hqltui.core.evaluation import DEPTH, LabelledQuery, reciprocal_rank
from hqltui.core.fusion import NORMS, FusionConfig, parse_fusion

MIN_PER_KIND = 4
MAX_FOLDS = 5

GRIDS: dict[str, tuple[str, ...]] = {
    # rrf k; convex alpha x every norm; adaptive: its two alphas and word bounds x three norms
    "default": (
        *(f"rrf:k={k}" for k in (10, 30, 60)),
        *(f"convex:alpha={a / 10:g},norm={n}" for n in NORMS for a in range(1, 10)),
        *(f"adaptive:norm={n},alpha_keyword={lo},alpha_prose={hi},words_long={w}"
          for n in ("zscore", "dbsf", "minmax") for lo in (0.1, 0.2, 0.3)
          for hi in (0.7, 0.8, 0.9) for w in (3, 4, 5)),
    ),
    # one point per method and norm: quick
    "small": ("rrf:k=60", *(f"convex:alpha=0.7,norm={n}" for n in NORMS),
              *(f"adaptive:norm={n}" for n in NORMS)),
}


class TooFewQueries(ValueError):
    """A labelled kind has too few queries to cross-validate."""


@dataclass(frozen=True)
class KindScore:
    queries: int
    mrr: float  # over every query of the kind
    better: float  # the better arm's MRR@10 over them
    ratio: float  # mean over folds of the fold ratios
    worst_fold: float


@dataclass(frozen=True)
class TuneRow:
    config: FusionConfig
    kinds: dict[str, KindScore]

    @property
    def worst(self) -> float:
        return min(k.ratio for k in self.kinds.values())

    @property
    def mean(self) -> float:
        return sum(k.ratio for k in self.kinds.values()) / len(self.kinds)


@dataclass(frozen=True)
class TuneResult:
    rows: list[TuneRow]  # best first
    folds: int
    lexical: str
    arms: dict[str, dict[str, float]]  # kind -> arm -> MRR@10
    total: int  # configurations in the grid
    cancelled: bool = False
    refused: list[str] = field(default_factory=list)  # arms' refusals met (counted as misses)

    @property
    def best(self) -> TuneRow | None:
        return self.rows[0] if self.rows else None


def grid_configs(name: str, base: FusionConfig) -> list[FusionConfig]:
    """The named grid's configurations (parameters not named come from ``base``)."""
    if name not in GRIDS:
        raise ValueError(f"unknown grid `{name}`; accepted: {', '.join(GRIDS)}")
    return list(dict.fromkeys(parse_fusion(text, base) for text in GRIDS[name]))


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


def tune(
    session: Any,
    queries: Sequence[LabelledQuery],
    *,
    grid: str = "default",
    folds: int | None = None,
    configs: list[FusionConfig] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    live: bool = False,
) -> TuneResult:
    """Score ``configs`` (default: the grid ``grid``) on ``queries``; see the module doc."""
    k = fold_count(queries, folds)
    configs = configs or grid_configs(grid, session.search.fusion_config())
    lexical = session.search.lexical
    windows, arm_rr, refused = [], [], []
    for q in queries:  # every query's arms, scored once
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
    folds_of = _folds(queries, k)
    arms = {kind: {a: _mean([arm_rr[i][a] for i in idx]) for a in ("lexical", "semantic")}
            for kind, idx in _by_kind(queries).items()}
    rows: list[TuneRow] = []
    for done, config in enumerate(configs, start=1):
        if cancelled is not None and cancelled():
            return _result(rows, k, lexical, arms, len(configs), True, refused)
        rr = []
        for i, q in enumerate(queries):
            ranking = session.fuse(q.text, windows[i], DEPTH, config)
            rr.append(0.0 if ranking.refusal is not None
                      else reciprocal_rank(ranking.names(), q.relevant))
        rows.append(TuneRow(config, _score(queries, folds_of, rr, arm_rr)))
        if progress is not None:
            progress(done, len(configs))
    return _result(rows, k, lexical, arms, len(configs), False, refused)


def _result(rows: list[TuneRow], k: int, lexical: str, arms: dict[str, dict[str, float]],
            total: int, cancelled: bool, refused: list[str]) -> TuneResult:
    ordered = sorted(rows, key=lambda r: (-r.worst, -r.mean, r.config.label()))
    return TuneResult(ordered, k, lexical, arms, total, cancelled, sorted(set(refused)))


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


def _score(queries: Sequence[LabelledQuery], folds_of: dict[str, list[list[int]]],
           rr: list[float], arm_rr: list[dict[str, float]]) -> dict[str, KindScore]:
    out = {}
    for kind, folds in folds_of.items():
        ratios = []
        for fold in folds:
            mine = _mean([rr[i] for i in fold])
            better = max(_mean([arm_rr[i][a] for i in fold]) for a in ("lexical", "semantic"))
            if better > 0:
                ratios.append(mine / better)
            elif mine == 0:
                ratios.append(1.0)
        every = [i for fold in folds for i in fold]
        better_all = max(_mean([arm_rr[i][a] for i in every]) for a in ("lexical", "semantic"))
        out[kind] = KindScore(
            queries=len(every),
            mrr=_mean([rr[i] for i in every]),
            better=better_all,
            ratio=_mean(ratios) if ratios else 1.0,
            worst_fold=min(ratios) if ratios else 1.0,
        )
    return out


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
