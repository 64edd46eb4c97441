"""The fixture vaults, copied into each test's working directory under a short name,
so paths on screen are the same on every machine and edits never touch the fixtures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def copy_vault(name: str, dest: str | Path | None = None) -> Path:
    """Copy ``fixtures/NAME`` to ``dest`` (by default ``NAME`` in the working directory,
    a relative path); return where it went."""
    target = Path(dest or name)
    shutil.copytree(FIXTURES / name, target)
    return target


def write_cards(root: Path, texts: dict[str, str], suffix: str = ".md") -> Path:
    """A vault at ``root``, marked by ``.hmd``, of one file ``NAME + suffix`` per card
    holding the text given: every hand-written vault of the tests is made here."""
    (root / ".hmd").mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (root / f"{name}{suffix}").write_text(text, encoding="utf-8")
    return root


# A card name with a terminal's control sequences, a tab and a newline in it.
EVIL = "evil\x1b]0;pwned\x07\x1b[31m\ttab\nline"


def hostile_vault(root: Path) -> Path:
    """Cards whose names and titles would drive a terminal (``EVIL``, Rich markup), one
    whose header is broken, and a plain one: what every screen must show escaped."""
    return write_cards(root, {
        # YAML refuses a raw ESC; its double-quoted "\e" escape is one.
        EVIL: '---\ntitle: "[bold red]Boom[/] \\e[2J"\n---\nbody words\n',
        f"broken{EVIL}": "---\ntitle: [unclosed\n---\n",
        "plain": "# Plain\n\nbody words\n",
    })


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
