"""`hql-tui VAULT`: the Textual app, imported only when it runs."""

from __future__ import annotations

import sys


def run_app(vault: str) -> int:
    try:
        from hqltui.ui.app import main as app_main
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("hqltui.ui"):
            raise
        print(
            "hql-tui: the app is not in this build yet; use `hql-tui VAULT --list`", file=sys.stderr
        )
        return 2
    return app_main(vault)
