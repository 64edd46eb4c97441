"""`hql-tui suggest-links VAULT`: the strongest pairs of near cards no link joins yet.

Read-only: it prints ``[[target]]`` link texts and never edits a card. Exit
status: 0 done, 1 when the index refuses, 2 on usage errors. The JSON object
is ``Suggestions.to_json()`` (documented in docs/related.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from hqltui.commands.common import Parser, positive_int, refuse, run_command
from producer.terminal import shown

LABEL = "hql-tui suggest-links"


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=LABEL, description="The strongest pairs of near cards that no link joins.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("--limit", type=positive_int, default=50, help="pairs; default 50")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def run(args: argparse.Namespace) -> int:
    from hqltui.core.related import Relatedness
    from hqltui.core.session import Session
    from hqltui.core.suggestions import suggest_links

    try:
        session = Session.load(args.vault)
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, LABEL, str(exc), "name an existing vault directory")
    answer = suggest_links(Relatedness(session), args.limit)
    if answer.refusal is not None:
        return refuse(args, LABEL, answer.refusal.message, answer.refusal.fix)
    if args.json:
        print(json.dumps(answer.to_json(), indent=2, ensure_ascii=False))
        return 0
    assert answer.provenance is not None
    out = [f"link suggestions in {shown(args.vault)}  [{shown(answer.provenance.label())}]"]
    if not answer.pairs:
        out.append("  no unlinked pair of near cards")
    for rank, pair in enumerate(answer.pairs, start=1):
        out.append(f"  {rank:>3}  {shown(pair.source)}  ->  [[{shown(pair.target)}]]  "
                   f"{pair.score:.6f}  {shown(pair.why())}")
    if answer.warnings:
        out.append("warnings:")
        out.extend(f"  [{w.kind}] {shown(w.message)}" for w in answer.warnings)
    print("\n".join(out))
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, LABEL)
