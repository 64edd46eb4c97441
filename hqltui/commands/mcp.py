"""`hql-tui mcp VAULT`: serve the vault's rankings to MCP clients over stdio.

Read-only unless ``--allow-build`` (the ``build`` tool) or ``--auto-build`` (edits
re-embedded in the background, ``hqltui.mcp.keeper``); a live query embedding through the vault's
``http`` embedder only with ``--allow-remote-embedding`` (the query text leaves
the machine). The vault starts loading before the MCP SDK is imported, so the
two overlap; stdout carries protocol messages only, every other line goes to
stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hqltui.commands.common import FAILED, Parser, run_command
from producer.terminal import shown
from producer.wording import with_fix


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{value}` is not a number of seconds") from None
    if not number >= 0:  # NaN too
        raise argparse.ArgumentTypeError("must be 0 (never) or more")
    return number


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="hql-tui mcp",
               description="Serve the vault's search to MCP clients (coding agents) over stdio.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("--allow-build", action="store_true",
                   help="offer the `build` tool (runs hql-semantics build on request)")
    p.add_argument("--allow-remote-embedding", action="store_true",
                   help="let `search` embed a query through the vault's http embedder "
                        "(sends the query text to its endpoint)")
    p.add_argument("--auto-build", action="store_true",
                   help="re-embed edited cards in the background (runs hql-semantics build; "
                        "writes the index): off unless given")
    p.add_argument("--poll", type=seconds, default=2.0, metavar="SECONDS",
                   help="how often to look for changed files and reload (0: never); default 2")
    return p


def run(args: argparse.Namespace) -> int:
    root = Path(args.vault)
    if not root.is_dir():
        line = with_fix(f"`{args.vault}` is not a directory", "name an existing vault directory")
        print(shown(f"hql-tui mcp: {line}"), file=sys.stderr)
        return FAILED
    from hqltui.mcp.gcpause import GcPause

    start = GcPause(parts=2)  # the load and the SDK import
    start.pause()
    from hqltui.mcp.served import Served

    def load() -> Any:
        # On the load thread, its imports too (numpy, the parser, sqlite). The configured
        # lexical arm is built here as well, while the SDK is imported below; the other
        # lexical arm waits for a query that asks for it.
        from hqltui.core.session import Session

        session = Session.load(args.vault)
        session.prepare()
        return session

    keeper = None
    if args.auto_build:
        from hqltui.mcp.keeper import Keeper

        keeper = Keeper(args.vault)
    served = Served(args.vault, load, poll=args.poll or None, gc=start, keeper=keeper)
    served.start()  # the vault loads while the SDK is imported below

    import anyio

    from hqltui.mcp.server import serve

    start.done()

    wire = anyio.run(lambda: serve(served, allow_build=args.allow_build,
                                   live=args.allow_remote_embedding))
    if wire.stopped is None:
        return 0  # the client ended its input
    print(shown(f"hql-tui mcp: {wire.stopped}"), file=sys.stderr)
    return FAILED if wire.signal is None else 128 + wire.signal


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, "hql-tui mcp")
