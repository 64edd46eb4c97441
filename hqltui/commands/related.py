"""`hql-tui related VAULT CARD`: the cards nearest to one card, from the index alone.

Exit status: 0 when the neighbours were found, 1 when the card is unknown, has
no vector, or the index refuses (one line on stderr; under ``--json`` the
object ``{"error": …}``), 2 on usage errors. The JSON object is
``Related.to_json()`` (documented in docs/related.md); the MCP tool ``related``
returns the same object.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from hqltui.commands.common import Parser, positive_int, refuse, run_command
from producer.terminal import shown

LABEL = "hql-tui related"


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=LABEL, description="The cards nearest to one card, from the index alone.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("card", help="the card's name")
    p.add_argument("--limit", type=positive_int, default=10, help="neighbours; default 10")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def related_answer(vault: str, card: str, limit: int) -> tuple[Any, Any]:
    """(session, Related) or raises LookupError / NotADirectoryError / FileNotFoundError."""
    from hqltui.core.related import Relatedness
    from hqltui.core.session import Session

    session = Session.load(vault)
    if card not in session.vault.by_name:
        raise LookupError(f"`{card}` is not a card of {vault}")
    return session, Relatedness(session).related(card, limit)


def render(answer: Any) -> list[str]:
    out = [f"related to {shown(answer.card)}"]
    if answer.provenance is not None:
        out[0] += f"  [{shown(answer.provenance.label())}]"
    if answer.refusal is None and not answer.neighbours:
        out.append("  no related card")
    width = max((len(shown(n.card)) for n in answer.neighbours), default=0)
    for n in answer.neighbours:
        parts = f"vector {n.vector:.3f}"
        if n.lexical is not None:
            parts += f" + lexical {n.lexical:.3f}"
        marks = ("  linked" if n.linked else "") + ("  stale" if n.status == "stale" else "")
        out.append(f"  {n.rank:>3}  {shown(n.card).ljust(width)}  {n.score:.6f}  ({parts}){marks}")
    if answer.duplicates:
        out.append("same text (not neighbours): " + ", ".join(shown(d) for d in answer.duplicates))
    if answer.warnings:
        out.append("warnings:")
        out.extend(f"  [{w.kind}] {shown(w.message)}" for w in answer.warnings)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        _, answer = related_answer(args.vault, args.card, args.limit)
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, LABEL, str(exc), "name an existing vault directory")
    except LookupError as exc:
        return refuse(args, LABEL, str(exc.args[0]), f"list the cards: hql-tui {args.vault} --list")
    if answer.refusal is not None:
        return refuse(args, LABEL, answer.refusal.message, answer.refusal.fix)
    if args.json:
        print(json.dumps(answer.to_json(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(render(answer)))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, LABEL)
