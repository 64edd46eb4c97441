"""`hql-tui tune VAULT QUERIES.toml`: the fusion that beats both arms on your own labels.

A thin wrapper over ``hqltui.core.tune``: scores a named grid of fusion
configurations by their worst cross-validated ratio to the better arm across the
labelled kinds, prints the table best first (the configured fusion marked), the
winner (the top row only if it beats the configured fusion by more than one
standard error, else the configured one) and why, and with ``--write`` shows the
change to ``hql.toml``'s ``[search]`` and writes it (everything else kept).

Exit status: 0 done; 1 refused (the vault, the queries file, too few queries of a
kind, an arm refused on some query, ``hql.toml`` cannot be edited); 2 usage.
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from collections.abc import Callable
from typing import Any, TextIO

from hqltui.commands.common import (
    Parser,
    labelled_session,
    positive_int,
    refuse,
    run_command,
    strict_json,
    whole_number,
)
from producer.terminal import shown, shown_lines
from producer.wording import FIX_LEAD

SHOWN_ROWS = 15


def parser() -> argparse.ArgumentParser:
    from hqltui.core.tune import GRIDS

    p = Parser(prog="hql-tui tune",
               description="Find the fusion that beats both arms on labelled queries.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("queries", help="a TOML file of [[query]] text, relevant, kind")
    p.add_argument("--grid", choices=tuple(GRIDS), default="default",
                   help="the configurations to try (docs/cli.md: `hql-tui tune`)")
    p.add_argument("--folds", type=fold_number, help="cross-validation folds; "
                   "default min(5, the fewest queries of a kind)")
    p.add_argument("--write", action="store_true",
                   help="put the winner into hql.toml's [search] (shows the change)")
    p.add_argument("--rows", type=positive_int, default=SHOWN_ROWS, help="rows to print")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--live", action="store_true", help="allow live http query embedding")
    return p


def fold_number(value: str) -> int:
    """``--folds``: cross-validation holds one fold out, so one fold is not enough."""
    return whole_number(value, 2, " (each fold is scored on queries the others hold out)")


def progress_line(stream: TextIO) -> Callable[[int, int], None]:
    """A line on a terminal rewritten as configurations are scored (10,000 queries take
    minutes), ended when the last one is; scripts (not a terminal) get no progress."""
    def said(done: int, total: int) -> None:
        end = "\n" if done == total else "\r"
        print(f"hql-tui tune: {done} of {total} configurations scored\x1b[K", end=end,
              file=stream, flush=True)

    return said


def table(result: Any, rows: int) -> list[str]:
    """Best first: method, parameters, per-kind MRR@10 and ratio, worst ratio."""
    kinds = sorted(result.arms)
    head = ["#", "config"] + [f"{k} mrr@10 (ratio)" for k in kinds] + ["worst"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    better = ["", f"better arm ({result.lexical} / semantic)"] + [
        f"{max(result.arms[k].values()):.3f}" for k in kinds] + [""]
    lines.append("| " + " | ".join(better) + " |")
    incumbent = result.decision.incumbent if result.decision is not None else None
    shown_rows = list(enumerate(result.rows, start=1))[:rows]
    if incumbent is not None and all(r is not incumbent for _, r in shown_rows):
        shown_rows.append(next((i, r) for i, r in enumerate(result.rows, start=1)
                               if r is incumbent))
    for i, row in shown_rows:
        mark = " (configured)" if row is incumbent else ""
        cells = [str(i), f"`{row.config.label()}`{mark}"] + [
            f"{row.kinds[k].mrr:.3f} ({row.kinds[k].ratio:.2f})" for k in kinds
        ] + [f"{row.worst:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def as_json(result: Any) -> dict[str, Any]:
    return {
        "folds": result.folds,
        "lexical": result.lexical,
        "configurations": result.total,
        "cancelled": result.cancelled,
        "arms": result.arms,
        "winner": result.best.config.label() if result.best else None,
        "decision": None if result.decision is None else {
            "incumbent": result.decision.incumbent.config.label(),
            "top": result.decision.top.config.label(),
            "kept": result.decision.kept, "margin": result.decision.margin,
            "se": result.decision.se if math.isfinite(result.decision.se) else None,
            "folds": result.decision.folds},
        "rows": [
            {"config": r.config.label(), "method": r.config.method,
             "parameters": r.config.parameters(), "worst": r.worst,
             "by_fold": list(r.by_fold),
             "kinds": {k: vars(s) for k, s in r.kinds.items()}}
            for r in result.rows
        ],
    }


def run(args: argparse.Namespace) -> int:
    from hqltui.core.configure import preview_search, write_search
    from hqltui.core.tune import TooFewQueries, search_settings, tune
    from producer.config import ConfigError

    loaded = labelled_session(args, "hql-tui tune")
    if isinstance(loaded, int):
        return loaded
    queries, session = loaded
    said = progress_line(sys.stderr) if sys.stderr.isatty() else None
    if said is not None:
        print(f"hql-tui tune: scoring {len(queries)} queries on both arms…", end="\r",
              file=sys.stderr, flush=True)
    try:
        result = tune(session, queries, grid=args.grid, folds=args.folds, live=args.live,
                      progress=said)
    except TooFewQueries as exc:
        return refuse(args, "hql-tui tune", str(exc), f"label more queries in {args.queries}")
    if result.refused:
        return refuse(args, "hql-tui tune", f"an arm refused: {result.refused[0]}",
                      "fix the arm (e.g. hql-semantics build --query …), then tune again")
    best = result.best
    assert best is not None
    if args.json:
        data = as_json(result)
    else:
        kinds = ", ".join(f"{k} {sum(1 for q in queries if q.kind == k)}" for k in result.arms)
        out = [f"{len(queries)} labelled queries ({kinds}) on {args.vault}; "
               f"{result.total} configurations, {result.folds}-fold cross-validation, "
               f"fusing {result.lexical} + semantic", ""]
        out += table(result, args.rows)
        out += ["", f"winner: {best.config.label()} (worst ratio {best.worst:.2f})"]
        if result.decision is not None:
            out.append(result.decision.reason())
        print(shown_lines("\n".join(out)))
    if args.write:
        settings = search_settings(best.config)
        try:
            before, after = preview_search(args.vault, settings)
            diff = difflib.unified_diff(before.splitlines(), after.splitlines(),
                                        "hql.toml", "hql.toml (tuned)", lineterm="")
            change = "\n".join(diff)
            target = sys.stderr if args.json else sys.stdout
            print(shown_lines(change) if change else "hql.toml already holds the winner",
                  file=target)
            file = write_search(args.vault, settings)
        except ConfigError as exc:
            # An edit's refusal may carry its own fix (a full disk): never add a second one.
            refusal = str(exc)
            fix = None if FIX_LEAD in refusal else "fix hql.toml, then tune again"
            return refuse(args, "hql-tui tune", refusal, fix)
        if args.json:
            data["written"] = str(file.name)
        else:
            print(shown(f"wrote [search] to {file}"))
    if args.json:
        print(strict_json(data))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, "hql-tui tune")
