"""`hql-tui query VAULT TEXT`: the app's rankings, for scripts and terminals.

Exit status: 0 when every requested arm answered, 1 when any refused (the
others are still printed) or the vault/``hql.toml`` cannot be used, 2 on usage
errors. The JSON shape is documented in docs/cli.md ("hql-tui query --json").
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hqltui.commands.common import (
    Parser,
    positive_int,
    refusal_lines,
    refuse,
    run_command,
    strict_json,
)
from hqltui.core.names import HYBRID, LEXICAL_ARMS
from hqltui.core.results import MODES, all_warnings, rankings, rankings_json, search_refusal
from producer.terminal import shown

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hqltui.core.session import Session


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="hql-tui query",
        description="Rank a vault's cards for one query, by each retrieval arm.",
    )
    p.add_argument("vault", help="the vault directory")
    p.add_argument("text", help="the query")
    p.add_argument("--mode", choices=MODES, default="all", help="which arm(s); default all")
    p.add_argument("--limit", type=positive_int, help="hits per arm; default [search] limit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--live",
        action="store_true",
        help="allow a live query embedding through the vault's http embedder "
        "(sends the query text to its endpoint)",
    )
    return p


def _fmt_score(score: float) -> str:
    return f"{score:.6f}"


def _provenance(ranking: Any) -> str:
    r = ranking.retrieval
    if r is None:
        return ""
    parts = [f"{r.model} {r.revision}", r.metric, "approximate" if r.approximate else "exact"]
    if r.query_vector_source and r.arm != "hybrid" and r.query_vector_source != "text":
        parts.append(f"query vector: {r.vector_source}")
    if r.passages:
        parts.append(passages_label(r.passages))
    if r.fusion:
        from hqltui.core.hybrid import fusion_summary

        windows = ", ".join(f"{k} {v}" for k, v in (r.windows or {}).items())
        parts = [*fusion_summary(r).split(" · "), f"windows {windows}"]
        if r.query_vector_source:
            parts.append(f"query vector: {r.vector_source}")
    return "; ".join(parts)


def render_text(arms: dict[str, Any], session: Session, out: list[str]) -> None:
    for name, ranking in arms.items():
        label = name if name != "hybrid" else f"hybrid ({_fused_lexical(ranking)} + semantic)"
        out.append(f"{label}  [{shown(_provenance(ranking))}]" if ranking.retrieval else label)
        if ranking.refusal is not None:
            out.extend(refusal_lines(ranking.refusal))
        elif not ranking.hits:
            out.append(f"  no {'lexical' if name in LEXICAL_ARMS else name} match")
        else:
            width = max(len(shown(h.card)) for h in ranking.hits)
            for h in ranking.hits:
                line = f"  {h.rank:>3}  {shown(h.card).ljust(width)}  {_fmt_score(h.score)}"
                if h.arms:
                    line += "  " + "  ".join(
                        f"{arm} {'-' if a is None else f'#{a.rank} {_fmt_score(a.score)}'}"
                        f" (+{_fmt_score(h.contributions[arm])})"
                        if arm in h.contributions
                        else f"{arm} {'-' if a is None else f'#{a.rank} {_fmt_score(a.score)}'}"
                        for arm, a in h.arms.items()
                    )
                out.append(line)
                if h.passage is not None and name != "hybrid":
                    out.append(f"       {shown(passage_line(session, h))}")
            if ranking.total > len(ranking.hits):
                what = "in either window" if name == HYBRID else "with a score above 0"
                out.append(f"  ({len(ranking.hits)} of {ranking.total} {what})")
        out.append("")
    warnings = all_warnings(arms, session)
    if warnings:
        out.append("warnings:")
        out.extend(f"  [{w.kind}] {shown(w.message)}" for w in warnings)


SNIPPET_CHARS = 90


def passages_label(recipe: Any) -> str:
    """``card vector and best of N passages (window W, overlap O tokens)``: the passage
    mode's provenance (the rule itself is the retrieval's ``card_score``)."""
    return (f"card vector and best of {recipe['count']} passages (window {recipe['window']}, "
            f"overlap {recipe['overlap']} tokens)")


def passage_line(session: Session, hit: Any) -> str:
    """``passage N: <its text on one line>``: what answered a semantic hit."""
    from hqltui.core.oneline import one_line

    p = hit.passage
    text = session.card(hit.card).text[p.start : p.end]
    which = "card vector" if p.ordinal is None else f"passage {p.ordinal}"
    return f"{which} [{p.start}:{p.end}]: {one_line(text, SNIPPET_CHARS)}"


def _fused_lexical(ranking: Any) -> str:
    r = ranking.retrieval
    if r is None or not r.windows:
        return "lexical"
    return next((k for k in r.windows if k != "semantic"), "lexical")


def run(args: argparse.Namespace) -> int:
    from hqltui.core.session import Session

    try:
        session = Session.load(args.vault)
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, "hql-tui", str(exc), "name an existing vault directory")
    refusal = search_refusal(session, args.mode, args.limit)
    if refusal is not None:
        return refuse(args, "hql-tui", refusal.message, refusal.fix)
    arms = rankings(session, args.text, args.mode, limit=args.limit, live=args.live)
    refused = any(r.refusal is not None for r in arms.values())
    if args.json:
        data = rankings_json(session, str(args.vault), args.text, args.limit, arms)
        print(strict_json(data))
    else:
        out: list[str] = [f"query  {shown(repr(args.text))}  in {shown(args.vault)}", ""]
        render_text(arms, session, out)
        print("\n".join(out).rstrip())
    return 1 if refused else 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, "hql-tui query")
