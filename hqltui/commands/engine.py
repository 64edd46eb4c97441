"""`hql-tui engine sync|build|verify|search VAULT`: engine indexes on Hotdata.

Exit status: 0 done (verify: clean); 1 refused (``[engine]``, variables, local
index), failed (the engine's own message), or verify found problems (each one
listed); 2 usage errors; 130 interrupted (Ctrl-C: a sync or build says which
engine job may still run). Progress events go to stderr one line each (with
``--json``, as JSON lines); the result goes to stdout (``--json``: one object).
``search`` heads each arm with what served it (the index, or a full scan) and
lists the engine's warnings under it; ``--show-sql`` prints each statement before
its results (the JSON always carries them). A key is never printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hqltui.commands.common import (
    FAILED,
    Parser,
    UsageError,
    positive_int,
    refusal_lines,
    run_command,
)
from producer.terminal import shown, shown_lines
from producer.wording import listed, with_fix

ACTIONS = ("sync", "build", "verify", "search")


def query_text(value: str) -> str:
    """The search text; a blank one is a usage error (exit 2, one line), not an empty search.

    Raised as ``UsageError`` (not argparse's type error) so the line is not preceded by
    the usage text.
    """
    if not value.strip():
        raise UsageError("hql-tui engine search: error: the query is blank; give the text to rank")
    return value


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="hql-tui engine",
                description="Keep a Hotdata table and its BM25 and vector indexes in step "
                "with the vault, check them, and search them.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{sync,build,verify,search}",
                           parser_class=Parser)
    helps = {
        "sync": "upload the cards (text and local-index vectors) to the engine table",
        "build": "create the BM25 and vector indexes (or say they are up to date)",
        "verify": "list every difference between the engine and the vault",
        "search": "rank the cards on the engine: bm25, vector, hybrid",
    }
    for action in ACTIONS:
        a = sub.add_parser(action, help=helps[action], description=helps[action])
        a.add_argument("vault", help="the vault directory")
        if action == "search":
            a.add_argument("text", type=query_text, help="the query (not blank)")
            a.add_argument("--mode", choices=("bm25", "semantic", "hybrid", "all"),
                           default="all", help="which arm(s); default all")
            a.add_argument("--exact", action="store_true",
                           help="vector arm by full scan (exact) instead of the HNSW index")
            a.add_argument("--limit", type=positive_int, help="hits per arm")
            a.add_argument("--live", action="store_true",
                           help="allow a live query embedding through the vault's http embedder")
            a.add_argument("--show-sql", action="store_true",
                           help="print each SQL statement sent before its results")
        a.add_argument("--json", action="store_true", help="print one JSON object")
        a.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _printer(as_json: bool, quiet: bool) -> Any:
    def emit(event: Any) -> None:
        if quiet:
            return
        if as_json:
            print(json.dumps(event.to_json()), file=sys.stderr, flush=True)
            return
        if getattr(event, "changed", True):  # a job poll is shown when something moved
            print(shown(event.describe()), file=sys.stderr, flush=True)

    return emit


def served_line(retrieval: Any) -> str:
    """What answered an engine arm: its index (name, type, column, metric, status), or a
    full scan; then the engine's time and query run id."""
    engine = (retrieval.engine or {}) if retrieval is not None else {}
    served = engine.get("served_by")
    indexes = served if isinstance(served, list) else [served] if served else []
    parts = [f"index {i['name']} ({i['type']} on {', '.join(i['columns'])}"
             f"{', ' + i['metric'] if i.get('metric') else ''}, {i['status']})" for i in indexes]
    exactness = "approximate" if retrieval is not None and retrieval.approximate else "exact"
    how = ", ".join(parts) if parts else "no index"
    if engine.get("full_scan") and retrieval is not None and retrieval.arm != "bm25":
        how += ", vector arm by full scan"
    tail = []
    if engine.get("execution_time_ms") is not None:
        tail.append(f"{engine['execution_time_ms']} ms")
    if engine.get("query_run_id"):
        tail.append(f"run {engine['query_run_id']}")
    where = retrieval.index if retrieval is not None else ""
    return f"{exactness}; {how}; {where}" + (f"; {', '.join(tail)}" if tail else "")


def _ranking_lines(name: str, ranking: Any, show_sql: bool = False) -> list[str]:
    r = ranking.retrieval
    lines = [f"engine {name} ({served_line(r)})"]
    if show_sql and r is not None and r.engine and r.engine.get("sql"):
        lines.append(f"  sql: {r.engine['sql']}")
    if ranking.refusal is not None:
        lines.extend(refusal_lines(ranking.refusal))
    else:
        for h in ranking.hits:
            arms = ""
            if h.arms:
                arms = "  " + " ".join(
                    f"{arm}={'-' if a is None else a.rank}" for arm, a in h.arms.items())
            lines.append(f"  {h.rank:>3}  {h.score:.6f}  {h.card}{arms}")
        if not ranking.hits:
            lines.append("  (no hits)")
    for w in ranking.warnings:
        lines.append(f"  warning: {w.message}")
    return lines


def _answer_lines(answer: Any, show_sql: bool) -> list[str]:
    lines = []
    if show_sql:  # the statements no arm owns (the rows' model count) come first
        owned = {(r.retrieval.engine or {}).get("sql") for r in answer.rankings().values()
                 if r.retrieval is not None}
        lines += [f"sql ({s.what}): {s.sql}" for s in answer.statements if s.sql not in owned]
    for name, ranking in answer.rankings().items():
        lines += _ranking_lines(name, ranking, show_sql)
    return lines


INTERRUPTED = {
    "sync": ("interrupted; a load job may still run on the engine",
             "run `hql-tui engine sync VAULT` again: it re-reads the rows before writing"),
    "build": ("interrupted; an index build job may still run on the engine",
              "run `hql-tui engine build VAULT` again: it waits for a pending index"),
}


def perform(action: str, vault: Any, options: Any, env: dict[str, str] | None = None,
            **search: Any) -> Any:
    """One engine action on ``vault``: sync's, build's or verify's report, or the answer to
    a search (``search`` holds its text and flags). The command and its tests both run it,
    so what a test drives is what the command does. Raises the engine's refusals and failures."""
    from hqltui.core.engine import LocalCards, build, settings_or_refuse, sync, verify
    from hqltui.core.engine import search as engine_search
    from hqltui.core.semantic import embed_local

    local = LocalCards.load(vault, embed=embed_local)
    settings = settings_or_refuse(local, env)
    if action == "sync":
        return sync(local, settings, options)
    if action == "build":
        return build(settings, options)
    if action == "verify":
        return verify(local, settings, options)
    return engine_search(local, settings, search.pop("text"), options=options, **search)


def run(args: argparse.Namespace) -> int:
    from hqltui.core.engine import EngineCancelled, EngineFailure, EngineRefused, Options

    options = Options(on_event=_printer(args.json, args.quiet))
    try:
        if args.action != "search":
            report = perform(args.action, args.vault, options)
        else:
            answer = perform("search", args.vault, options, text=args.text, mode=args.mode,
                             exact=args.exact, limit=args.limit, live=args.live)
            if args.json:
                print(json.dumps(answer.to_json(), indent=2))
            else:
                print(shown_lines("\n".join(_answer_lines(answer, args.show_sql))))
            return 0 if answer.ok else FAILED
    except KeyboardInterrupt:
        if args.action not in INTERRUPTED:
            raise
        _fail(args, "interrupted", *INTERRUPTED[args.action])
        return 130
    except EngineRefused as exc:
        return _fail(args, "refused", exc.refusal.message, exc.refusal.fix)
    except EngineFailure as exc:
        return _fail(args, "failed", str(exc), None)
    except EngineCancelled as exc:
        return _fail(args, "cancelled", str(exc), None)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(shown_lines(report.summary()))
        checks = getattr(report, "checks", [])
        for check in checks:  # a table this tool did not build: every check, each outcome
            print(shown(f"  {check.line()}"))
        for problem in [] if checks else getattr(report, "problems", []):
            cards = f": {listed(problem.cards)}" if problem.cards else ""
            print(shown(f"  {problem.kind}: {problem.message}{cards}"))
    if args.action == "verify" and not report.clean:
        return FAILED
    return 0


def _fail(args: argparse.Namespace, outcome: str, message: str, fix: str | None) -> int:
    if args.json:
        print(json.dumps({"operation": args.action, "outcome": outcome, "message": message,
                          "fix": fix}, indent=2))
    print(shown(f"hql-tui engine {args.action}: {with_fix(message, fix)}"), file=sys.stderr)
    return FAILED


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, lambda args: f"hql-tui engine {args.action}")
