"""`hql-tui`: the app, and the commands for scripts.

Subcommand names win over vault names (a vault folder called `query` is opened
as `hql-tui ./query`). Each command lives in its own module, imported only
when it runs, so start-up stays light.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "query": "hqltui.commands.query",
    "eval": "hqltui.commands.evaluate",
    "tune": "hqltui.commands.tune",
    "engine": "hqltui.commands.engine",
    "mcp": "hqltui.commands.mcp",
    "related": "hqltui.commands.related",
    "suggest-links": "hqltui.commands.suggest_links",
}

USAGE_ERROR = 2


def app_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hql-tui",
        description="Rank a vault's cards by lexical, semantic and hybrid retrieval, side by side.",
        epilog="commands: hql-tui query VAULT TEXT | hql-tui eval VAULT QUERIES.toml | "
        "hql-tui tune VAULT QUERIES.toml | "
        "hql-tui engine sync|build|verify|search VAULT | hql-tui mcp VAULT | "
        "hql-tui related VAULT CARD | hql-tui suggest-links VAULT (each has --help)",
    )
    parser.add_argument("vault", help="the vault directory")
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the cards, the index setting and the loader warnings, then exit",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from hqltui.runtime import quiet_blas

    quiet_blas()  # before any command imports numpy
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in SUBCOMMANDS:
        try:
            module = importlib.import_module(SUBCOMMANDS[args[0]])
        except ModuleNotFoundError as exc:
            if exc.name != SUBCOMMANDS[args[0]]:
                raise
            print(f"hql-tui: `{args[0]}` is not available in this build", file=sys.stderr)
            return USAGE_ERROR
        return module.main(args[1:])
    options = app_parser().parse_args(args)
    if options.list:
        from hqltui.commands.listing import list_vault

        return list_vault(options.vault)
    from hqltui.commands.app import run_app

    return run_app(options.vault)


if __name__ == "__main__":
    sys.exit(main())
