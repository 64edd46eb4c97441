"""`tune` held out: on each corpus's frozen sets, tune on alternate queries, judge the winner
on the others (and the other way round), and time the run.

For each vault the frozen queries are split by position (even / odd); ``tune``
(the default grid, the vault's configured fusion as the incumbent) picks a winner
on one half, and the winner's MRR@10 on the other half is compared with the
better arm there, per kind (``eval``'s metrics, one ``Session``). The issue's bar:
≥ 0.97 × the better arm on each kind. Beside the winner, the same half is judged
for the top row (the rule before: always take it) and the configured fusion.

Two checks of the rule beyond that one split, both arithmetic on one table of
per-query reciprocal ranks (``hqltui.core.tune.reciprocal_ranks``, every grid
configuration over every query):

* the grid's limit: per judged half, how many configurations reach the bar on both
  kinds, and the best any reaches (chosen with the answers known);
* ``--splits`` seeded random halves (stratified by kind): the share of held-out
  (split, kind) cells at the bar, of splits at the bar on both kinds, and the mean
  and 10th percentile of the held-out worst-kind ratio, per rule.

Also times a warm ``tune`` over all of a corpus's queries (arm scores once per
query, then arithmetic). Writes ``results/tune.{json,md}`` and prints both halves'
tables.

    python -m benchmarks.bench_tune --man1 VAULT --man23 VAULT
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.report import OUT, write_report
from hqltui.commands.tune import table
from hqltui.core.evaluation import DEPTH, LabelledQuery, read_queries
from hqltui.core.fusion import FusionConfig, parse_fusion
from hqltui.core.session import Session
from hqltui.core.tune import (
    ARM_KEYS,
    RankTable,
    decide,
    fold_count,
    grid_configs,
    reciprocal_ranks,
    score_rows,
    tune,
)

QUERIES = Path(__file__).resolve().parent / "queries"
BAR = 0.97
RULES = ("tune (one-SE rule)", "top row (always)", "configured")
POOR = "rrf:k=60"  # the first release's default: how the rule leaves a poor configured fusion


def judged(ranks: RankTable, queries: Sequence[LabelledQuery], idx: Sequence[int],
           config: FusionConfig) -> dict[str, dict[str, float]]:
    """Per kind on the queries ``idx``: the config's MRR@10, the better arm's, the ratio."""
    out = {}
    for kind in sorted({queries[i].kind for i in idx}):
        mine = [i for i in idx if queries[i].kind == kind]
        better = max(sum(ranks.arms[i][a] for i in mine) for a in ARM_KEYS) / len(mine)
        mrr = sum(ranks.configs[config][i] for i in mine) / len(mine)
        out[kind] = {"n": len(mine), "mrr": mrr, "better": better,
                     "ratio": mrr / better if better else 1.0}
    return out


def choose(ranks: RankTable, queries: Sequence[LabelledQuery], train: Sequence[int],
           incumbent: FusionConfig) -> dict[str, FusionConfig]:
    """Each rule's pick on the queries ``train`` (tune's own scoring and decision)."""
    sub = [queries[i] for i in train]
    rows = score_rows(sub, fold_count(sub, None),
                      {c: [rr[i] for i in train] for c, rr in ranks.configs.items()},
                      [ranks.arms[i] for i in train])
    decision = decide(rows, incumbent)
    assert decision is not None
    return dict(zip(RULES, (decision.winner.config, rows[0].config, incumbent), strict=True))


def halves(n: int) -> dict[str, tuple[list[int], list[int]]]:
    even, odd = list(range(0, n, 2)), list(range(1, n, 2))
    return {"even": (even, odd), "odd": (odd, even)}


def random_halves(queries: Sequence[LabelledQuery], count: int, seed: int
                  ) -> list[tuple[list[int], list[int]]]:
    """``count`` halves, half of each kind (rounded down) to tune on, in file order."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        train: list[int] = []
        for kind in sorted({q.kind for q in queries}):
            idx = [i for i, q in enumerate(queries) if q.kind == kind]
            rng.shuffle(idx)
            train += idx[: len(idx) // 2]
        train.sort()
        chosen = set(train)
        out.append((train, [i for i in range(len(queries)) if i not in chosen]))
    return out


def load() -> str:
    return "load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--man1", type=Path, required=True)
    parser.add_argument("--man23", type=Path, required=True)
    parser.add_argument("--grid", default="default")
    parser.add_argument("--splits", type=int, default=200, help="random halves per corpus")
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    rows: list[list[Any]] = []
    notes: list[str] = []
    limits: list[list[Any]] = []
    spread: list[list[Any]] = []
    printed: list[str] = []
    for corpus, vault in (("man1", args.man1), ("man23", args.man23)):
        session = Session.load(vault)
        queries = read_queries(QUERIES / f"{corpus}.toml")
        incumbent = session.search.fusion_config()
        tune(session, queries[:8] + queries[-8:], grid="small")  # warm: model, caches
        before = load()
        started = time.perf_counter()
        whole = tune(session, queries, grid=args.grid)
        seconds = time.perf_counter() - started
        assert whole.best is not None and whole.decision is not None
        notes.append(f"{corpus}: warm tune of all {len(queries)} queries over {whole.total} "
                     f"configurations took {seconds:.1f} s ({before} before, {load()} after); "
                     f"winner `{whole.best.config.label()}`: {whole.decision.reason()}")
        configs = list(dict.fromkeys([incumbent, *grid_configs(args.grid, incumbent)]))
        ranks = reciprocal_ranks(session, queries, configs)
        for name, (train, test) in halves(len(queries)).items():
            result = tune(session, [queries[i] for i in train], grid=args.grid)
            assert result.best is not None and result.decision is not None
            picks = choose(ranks, queries, train, incumbent)
            assert picks[RULES[0]] == result.best.config  # the API and the arithmetic agree
            other = "odd" if name == "even" else "even"
            text = [f"#### {corpus}: tuned on the {name} half ({len(train)} queries)", "",
                    *table(result, 10), "",
                    f"winner: `{result.best.config.label()}`; {result.decision.reason()}", ""]
            printed += text
            scores = {rule: judged(ranks, queries, test, c) for rule, c in picks.items()}
            for kind, s in scores[RULES[0]].items():
                rows.append([corpus, f"tuned on {name}, judged on {other}", kind, s["n"],
                             f"`{result.best.config.label()}`"
                             f" ({'kept' if result.decision.kept else 'switched'})",
                             s["better"], s["mrr"], f"{s['ratio']:.3f}",
                             "ok" if s["ratio"] >= BAR else "below",
                             f"{scores[RULES[1]][kind]['ratio']:.3f}",
                             f"{scores[RULES[2]][kind]['ratio']:.3f}"])
            every = {c: judged(ranks, queries, test, c) for c in configs}
            reach = [c for c, s in every.items() if min(v["ratio"] for v in s.values()) >= BAR]
            top = max(every, key=lambda c: (min(v["ratio"] for v in every[c].values()),
                                            c.label()))
            limits.append([corpus, other, f"{len(reach)} of {len(configs)}", f"`{top.label()}`",
                           " / ".join(f"{k} {v['ratio']:.3f}" for k, v in every[top].items())])
        poor = parse_fusion(POOR, incumbent)
        splits = []
        for train, test in random_halves(queries, args.splits, args.seed):
            picks = choose(ranks, queries, train, incumbent)
            from_poor = choose(ranks, queries, train, poor)
            picks[f"tune (one-SE rule), {POOR} configured"] = from_poor[RULES[0]]
            picks[f"{POOR} configured, never tuned"] = poor
            splits.append((picks, test))
        for rule in splits[0][0]:
            start = poor if POOR in rule else incumbent
            cells, worst, switched = [], [], 0
            for picks, test in splits:
                pick = picks[rule]
                ratios = [s["ratio"] for s in judged(ranks, queries, test, pick).values()]
                cells += ratios
                worst.append(min(ratios))
                switched += pick != start
            worst.sort()
            spread.append([corpus, rule, f"{sum(r >= BAR for r in cells) / len(cells):.2f}",
                           f"{sum(w >= BAR for w in worst) / len(worst):.2f}",
                           f"{sum(worst) / len(worst):.3f}", f"{worst[len(worst) // 10]:.3f}",
                           f"{worst[0]:.3f}", f"{switched / len(splits):.2f}"])
    notes.append(f"bar: the winner's MRR@{DEPTH} on the half it did not see ≥ {BAR} × the "
                 "better arm there, per kind; `top row` is what tune chose before the "
                 "one-SE rule, `configured` the vault's fusion (the shipped default); the "
                 "machine's 2 CPUs are shared, so timings carry its load")
    md = write_report("tune", "tune: winners judged on the half they did not see",
                      ["corpus", "split", "kind", "n", "winner", "better arm", "winner mrr@10",
                       "ratio", "verdict", "top row ratio", "configured ratio"], rows, notes)
    extra = [
        "", "#### The grid's limit: configurations at the bar on the judged half", "",
        "| corpus | judged half | configurations ≥ 0.97 on both kinds | best any reaches "
        "(chosen with the answers known) | its ratios |", "|---|---|---|---|---|",
        *("| " + " | ".join(map(str, r)) + " |" for r in limits),
        "", f"#### {args.splits} random halves per corpus (stratified by kind, seed "
        f"{args.seed}): the rule against always taking the top row and never tuning, "
        f"from the shipped default and from a poor configured fusion ({POOR})", "",
        "| corpus | rule | held-out cells ≥ 0.97 | splits ≥ 0.97 on both kinds | mean worst "
        "ratio | 10th percentile | lowest | changed the configured fusion |",
        "|---|---|---|---|---|---|---|---|",
        *("| " + " | ".join(map(str, r)) + " |" for r in spread),
        "", "#### Both halves' tables", "", *printed,
    ]
    md.write_text(md.read_text() + "\n".join(extra) + "\n")
    data = json.loads((OUT / "tune.json").read_text())
    data["limits"], data["random_halves"] = limits, spread
    (OUT / "tune.json").write_text(json.dumps(data, indent=2) + "\n")
    print(md.read_text())


if __name__ == "__main__":
    main()
