"""`hql-tui VAULT --list`: a first look at a vault, for people and scripts."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hqltui.core.config import load_app_config
from hqltui.core.index_setting import index_line
from hqltui.core.oneline import link_target
from producer.parse_cache import ParseCache
from producer.terminal import shown
from producer.vault import load_vault, vault_problem


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def list_vault(root: str) -> int:
    try:
        # Through the parse cache, as the app and `query` read a vault: warm on a second look.
        cache = None if vault_problem(root) else ParseCache(Path(root))
        vault = load_vault(root, cache=cache)
    except (NotADirectoryError, FileNotFoundError) as exc:
        print(f"hql-tui: {shown(exc)}", file=sys.stderr)
        return 1
    config = load_app_config(root)
    out: list[str] = []
    kind = "HMD vault" if vault.is_hmd else "not an HMD vault (no .hmd/)"
    count = len(vault.cards)
    out.append(f"vault  {shown(root)}  ({kind})  {count} card{'s' if count != 1 else ''}")
    out.append(index_line(root, config))
    out.append("")
    if vault.cards:
        rows = [("NAME", "TITLE", "PATH")]
        rows += [(shown(c.name), shown(c.title), shown(c.path)) for c in vault.cards]
        out.extend(_table(rows))
    else:
        out.append("(no cards)")
    warnings = ([vault.notice] if vault.notice else []) + vault.warnings
    warnings += (
        config.messages()
        if config.file_error
        else [message for table, message in sorted(config.errors.items()) if table != "semantics"]
    )
    out.append("")
    out.append(f"warnings ({len(warnings)})" if warnings else "warnings: none")
    out.extend(f"  {shown(w)}" for w in warnings)
    unresolved = vault.unresolved()
    if unresolved:
        out.append(f"unresolved links ({len(unresolved)})")
        out.extend(
            f"  {shown(card)} -> [[{shown(link_target(target))}]]" for card, target in unresolved
        )
    print("\n".join(out))
    return 0
