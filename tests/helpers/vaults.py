"""The fixture vaults, copied into each test's working directory under a short name,
so paths on screen are the same on every machine and edits never touch the fixtures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def copy_vault(name: str, dest: str | None = None) -> Path:
    """Copy ``fixtures/NAME`` into the working directory; return the relative path."""
    target = Path(dest or name)
    shutil.copytree(FIXTURES / name, target)
    return target


QUERY = "night hunting birds"  # a labelled query of the birds vault


def unlabel(birds: Path) -> None:
    """Drop QUERY's entry from birds' labels: it stays in the index, unlabelled."""
    path = birds / "queries.toml"
    text = path.read_text(encoding="utf-8")
    start = text.index('[[query]]\ntext = "night hunting birds"')
    end = text.index("[[query]]", start + 1)
    path.write_text(text[:start] + text[end:], encoding="utf-8")


def edit_card(vault: Path, name: str = "great-cormorant") -> None:
    """An edit to one card's text (its index row goes stale)."""
    card = vault / f"{name}.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nIt also dries its wings on posts.\n",
                    encoding="utf-8")


def write_keymap(text: str) -> Path:
    """The keymap at its documented place: $XDG_CONFIG_HOME/hql-tui/keymap.toml."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "hql-tui" / "keymap.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
