"""`hql-tui eval VAULT QUERIES.toml`: how well each arm and each fusion ranks labelled queries.

``QUERIES.toml`` holds ``[[query]]`` tables: ``text`` (string), ``relevant``
(card names), optionally ``kind`` (e.g. ``paraphrase``, ``keyword``) and
``decoys`` (card names that write the query's words and are not relevant).

Rows (the JSON keys): every arm (``hashbag``, ``bm25``, ``semantic``); ``hybrid``, the
default hybrid (the configured fusion over the configured lexical arm: what the app
shows); ``hybrid:lexical=<arm>``, the same fusion over each other lexical arm; and one
``hybrid:<config>`` per ``--fusion`` entry (``grid`` adds ``tune``'s default grid,
``grid:NAME`` another of ``fusion.GRIDS``), over the configured lexical arm. Over all
queries and per kind: hit@1 and hit@5 (share of queries with a relevant card in the top
1 / top 5), MRR@10 (mean reciprocal rank of the first relevant card within the top 10,
else 0), recall@10 (share of a query's relevant cards in its top 10, averaged over
queries), decoys@5 (mean number of decoys in the top 5), and for each hybrid row
``ratio``: its MRR@10 over the better MRR@10 of the two arms it fuses.
``--per-query`` lists, per hybrid row, the queries whose reciprocal rank fell
below the better arm's (of that query's kind). A refused query counts as a miss
and is counted. Everything runs on one ``Session`` snapshot, the one the app
uses, and each query's arms are scored once: every fusion re-fuses the same
windows.

Exit status: 0 when every arm answered every query, 1 when any refused (or
the files cannot be used), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hqltui.commands.common import (
    USAGE,
    Parser,
    UsageError,
    labelled_session,
    run_command,
    strict_json,
)
from hqltui.core.evaluation import (
    DEPTH,
    LabelledQuery,
    QueriesError,
    Report,
    Tally,
    evaluate,
    read_queries,
    reciprocal_rank,
)
from hqltui.core.fusion import GRIDS, FusionConfig, grid, parse_fusion
from producer.terminal import shown, shown_lines


def fusion_entries(raw: list[str], base: FusionConfig) -> list[FusionConfig]:
    """``--fusion`` values, each parsed once, in order: ``grid`` expands to the
    default grid of ``tune`` (``fusion.GRIDS``), ``grid:NAME`` to the grid NAME."""
    out: list[FusionConfig] = []
    for text in raw:
        name, colon, rest = text.strip().partition(":")
        try:
            if name == "grid":
                configs = grid(rest.strip() if colon else "default", base)
            else:
                configs = [parse_fusion(text, base)]
        except ValueError as exc:
            raise UsageError(f"hql-tui eval: error: --fusion {text!r}: {exc}") from None
        out += [c for c in configs if c not in out]
    return out


__all__ = ["DEPTH", "GRIDS", "LabelledQuery", "QueriesError", "Report", "Tally", "evaluate",
           "read_queries", "reciprocal_rank"]


COLUMNS = ("hit@1", "hit@5", "mrr@10", "recall@10", "decoys@5")


def table(tallies: dict[str, Tally], report: Report | None = None) -> list[str]:
    width = max(len(a) for a in tallies)
    head = "| " + "arm".ljust(width) + " | " + " | ".join(COLUMNS) + " | ratio | refused |"
    rule = "|" + "-" * (width + 2) + "|" + "|".join("-" * (len(c) + 2) for c in COLUMNS)
    lines = [head, rule + "|-------|---------|"]
    for arm, tally in tallies.items():
        row = tally.row()
        cells = " | ".join(f"{row[c]:.3f}".rjust(len(c)) for c in COLUMNS)
        ratio = None if report is None else report.ratio(arm, tallies)
        shown_ratio = ("" if ratio is None else f"{ratio:.2f}").rjust(5)
        refused = f"{row['refused']}/{row['queries']}".rjust(7)
        lines.append(f"| {arm.ljust(width)} | {cells} | {shown_ratio} | {refused} |")
    return lines


def rows_json(report: Report, tallies: dict[str, Tally]) -> dict[str, Any]:
    out = {}
    for arm, tally in tallies.items():
        row = tally.row()
        ratio = report.ratio(arm, tallies)
        if ratio is not None:
            row["ratio"] = ratio
            row["fuses"] = list(report.fused[arm])
        out[arm] = row
    return out


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="hql-tui eval", description="Score each retrieval arm on labelled queries.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("queries", help="a TOML file of [[query]] text, relevant, kind, decoys")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--live", action="store_true", help="allow live http query embedding")
    p.add_argument(
        "--fusion",
        action="append",
        default=[],
        metavar="CONFIG",
        help="also score this fusion, e.g. 'convex:alpha=0.7,norm=zscore' (repeatable); "
        "'grid' adds every configuration of tune's default grid, 'grid:small' the small one",
    )
    p.add_argument(
        "--per-query", action="store_true",
        help="list, per hybrid row, the queries where it lost to the better arm",
    )
    return p


def run(args: argparse.Namespace) -> int:

    try:
        fusion_entries(args.fusion, FusionConfig())  # usage errors before any loading
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return USAGE
    loaded = labelled_session(args, "hql-tui")
    if isinstance(loaded, int):
        return loaded
    queries, session = loaded
    unknown = sorted(
        {n for q in queries for n in q.relevant + q.decoys if n not in session.vault.by_name}
    )
    fusions = fusion_entries(args.fusion, session.search.fusion_config())
    report = evaluate(session, queries, live=args.live, fusions=fusions)
    refused = any(t.refused for t in report.overall.values())
    if args.json:
        data = {
            "vault": str(args.vault),
            "queries": len(queries),
            "unknown_cards": unknown,
            "fusion": session.search.fusion_config().label(),
            "overall": rows_json(report, report.overall),
            "by_kind": {k: rows_json(report, t) for k, t in report.by_kind.items()},
            "per_query": report.per_query,
        }
        if args.per_query:
            data["lost"] = {row: report.lost(row) for row in report.fused}
        print(strict_json(data))
    else:
        label = session.search.fusion_config().label()
        out = [f"{len(queries)} queries on {args.vault}; hybrid = {label} over "
               f"{session.search.lexical} + semantic", ""]
        out += table(report.overall, report)
        for kind, tallies in report.by_kind.items():
            n = next(iter(tallies.values())).queries
            out += ["", f"{kind} ({n} quer{'y' if n == 1 else 'ies'})"] + table(tallies, report)
        if args.per_query:
            for row in report.fused:
                lost = report.lost(row)
                out += ["", f"{row}: lost to the better arm on {len(lost)} of {len(queries)}"]
                out += [
                    f"  [{d['kind']}] {d['text']!r}: {d['arm']} #{d['arm_rank']}, "
                    f"fusion {'#' + str(d['rank']) if d['rank'] else 'not in top 10'}"
                    for d in lost
                ]
        refusals = {
            d["arms"][a]["refusal"]
            for d in report.per_query
            for a in report.arms
            if "refusal" in d["arms"][a]
        }
        if refusals:
            out += ["", "refusals:"] + [f"  {m}" for m in sorted(refusals)]
        print(shown_lines("\n".join(out)))
    if unknown:
        print(
            shown(f"hql-tui: {args.queries} names cards not in the vault: {', '.join(unknown)}"),
            file=sys.stderr,
        )
    return 1 if refused else 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, "hql-tui eval")
