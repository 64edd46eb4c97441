"""`hql-tui eval VAULT QUERIES.toml`: how well each arm ranks labelled queries.

``QUERIES.toml`` holds ``[[query]]`` tables: ``text`` (string), ``relevant``
(card names), optionally ``kind`` (e.g. ``paraphrase``, ``keyword``) and
``decoys`` (card names that write the query's words and are not relevant).

Per arm (``hashbag``, ``bm25``, ``semantic``, and hybrid fusing each lexical
arm), over all queries and per kind: hit@1 and hit@5 (share of queries with a
relevant card in the top 1 / top 5), MRR@10 (mean reciprocal rank of the first
relevant card within the top 10, else 0), recall@10 (share of a query's
relevant cards in its top 10, averaged over queries), and decoys@5 (mean number
of decoys in the top 5). A refused query counts as a miss and is counted.
Everything runs on one ``Session`` snapshot, the one the app uses; the metrics
and the reader live in ``hqltui.core.evaluation`` (the app shows the same ones).

Exit status: 0 when every arm answered every query, 1 when any refused (or
the files cannot be used), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hqltui.commands.common import Parser, refuse, run_command
from hqltui.core.evaluation import QueriesError, Tally, evaluate, read_queries
from producer.terminal import shown, shown_lines

COLUMNS = ("hit@1", "hit@5", "mrr@10", "recall@10", "decoys@5")


def table(tallies: dict[str, Tally]) -> list[str]:
    width = max(len(a) for a in tallies)
    head = "| " + "arm".ljust(width) + " | " + " | ".join(COLUMNS) + " | refused |"
    rule = "|" + "-" * (width + 2) + "|" + "|".join("-" * (len(c) + 2) for c in COLUMNS)
    lines = [head, rule + "|---------|"]
    for arm, tally in tallies.items():
        row = tally.row()
        cells = " | ".join(f"{row[c]:.3f}".rjust(len(c)) for c in COLUMNS)
        refused = f"{row['refused']}/{row['queries']}".rjust(7)
        lines.append(f"| {arm.ljust(width)} | {cells} | {refused} |")
    return lines


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="hql-tui eval", description="Score each retrieval arm on labelled queries.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("queries", help="a TOML file of [[query]] text, relevant, kind, decoys")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--live", action="store_true", help="allow live http query embedding")
    return p


def run(args: argparse.Namespace) -> int:
    from hqltui.core.session import Session

    try:
        queries = read_queries(Path(args.queries))
        session = Session.load(args.vault)
    except QueriesError as exc:
        return refuse(args, "hql-tui", str(exc), f"fix {args.queries}")
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, "hql-tui", str(exc), "name an existing vault directory")
    if "search" in session.config.errors:
        config = session.config
        fix = config.file_fix or f"edit [search] in {config.file.name}"
        return refuse(args, "hql-tui", config.errors["search"], fix)
    unknown = sorted(
        {n for q in queries for n in q.relevant + q.decoys if n not in session.vault.by_name}
    )
    report = evaluate(session, queries, live=args.live)
    refused = any(t.refused for t in report.overall.values())
    if args.json:
        data = {
            "vault": str(args.vault),
            "queries": len(queries),
            "unknown_cards": unknown,
            "overall": {a: t.row() for a, t in report.overall.items()},
            "by_kind": {
                k: {a: t.row() for a, t in tallies.items()} for k, tallies in report.by_kind.items()
            },
            "per_query": report.per_query,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        out = [f"{len(queries)} queries on {args.vault}", ""]
        out += table(report.overall)
        for kind, tallies in report.by_kind.items():
            n = next(iter(tallies.values())).queries
            out += ["", f"{kind} ({n} quer{'y' if n == 1 else 'ies'})"] + table(tallies)
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
