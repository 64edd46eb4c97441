"""The app's keys: its binding tables, the user's keymap file, and the hints drawn from them.

Every binding of the app has an id (``jobs.build``, ``app.warnings``, …). A per-user
keymap file maps ids to keys and is applied with Textual's ``App.set_keymap``:

    # $XDG_CONFIG_HOME/hql-tui/keymap.toml (else ~/.config/hql-tui/keymap.toml;
    # $HQL_TUI_KEYMAP names another file)
    "jobs.build" = "ctrl+b"
    "app.warnings" = "ctrl+o,f6"

A file that cannot be used (not TOML, an id the app does not have, a value that is
not a key) gives one notice and changes nothing: the default keys stay.

Text on screen never writes a key's name itself: it asks ``Keys.hint(id)``, which
answers with the key the active keymap gives that binding (F1 help, the footer, the
status line, the column titles, the palette and the notices all follow a remap).
A few keys belong to Textual's own widgets and cannot be remapped (the command
palette, tab, Enter in the query); their hints come from those bindings too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from hqltui.core.names import FUSIONS, LEXICAL_CHOICES

ENV = "HQL_TUI_KEYMAP"

APP_BINDINGS = [
    Binding("ctrl+q", "quit", "quit", priority=True, id="app.quit"),
    Binding("f1", "help", "help", id="app.help"),
    Binding("question_mark", "help", "help", show=False, id="app.help-key"),
    Binding("f2", "toggle_lexical", "lexical", tooltip="switch " + " / ".join(LEXICAL_CHOICES),
            id="app.lexical"),
    # The hybrid column's fusion method (hqltui.core.names.FUSIONS), cycled.
    Binding("ctrl+t", "cycle_fusion", "fusion", show=False,
            tooltip="fusion: " + " / ".join(FUSIONS), id="app.fusion"),
    Binding("f3", "open_card", "open", tooltip="open card", id="app.open-card"),
    Binding("f4", "edit_card", "edit", id="app.edit-card"),
    Binding("f5", "reload", "reload", id="app.reload"),
    Binding("f6", "show_warnings", "warnings", id="app.warnings"),
    # Semantic and hybrid rows: the passage that answered, on a second line (on by default).
    Binding("ctrl+o", "toggle_snippets", "snippets", show=False,
            tooltip="show or hide the passage snippet under semantic and hybrid rows",
            id="app.snippets"),
]
JOB_BINDINGS = [
    Binding("f7", "build_index", "build", tooltip="build index", id="jobs.build"),
    Binding("shift+f7", "toggle_auto_build", "auto-build", show=False,
            tooltip="auto-build on / off (this session)", id="jobs.auto-build"),
    Binding("f8", "verify_index", "verify", tooltip="verify index", id="jobs.verify"),
    Binding("f10", "toggle_jobs", "jobs", show=False, tooltip="jobs panel", id="jobs.panel"),
    Binding("ctrl+g", "cancel_jobs", "cancel", tooltip="cancel job", id="jobs.cancel"),
]
ENGINE_BINDINGS = [
    Binding("f9", "toggle_engine", "engine", id="app.engine-view"),
    Binding("f11", "engine_sync", "engine sync", show=False, id="app.engine-sync"),
    Binding("f12", "engine_verify", "engine verify", show=False, id="app.engine-verify"),
]
# The relevance workbench: single letters, on the main screen's panes (not while typing).
LABEL_BINDINGS = [
    Binding("space", "app.label('relevant')", "mark relevant",
            tooltip="toggle the selected card relevant for the query", id="main.label-relevant"),
    Binding("x", "app.label('decoy')", "mark decoy",
            tooltip="toggle the selected card a decoy for the query", id="main.label-decoy"),
    Binding("k", "app.label('kind')", "cycle kind",
            tooltip="the query's kind: paraphrase → keyword → none", id="main.label-kind"),
    Binding("u", "app.label_undo", "undo label", tooltip="undo the last label change",
            id="main.label-undo"),
]
LABELLED_BINDINGS = [
    Binding("ctrl+l", "labelled", "labelled", show=False,
            tooltip="labelled queries: each arm's score",
            id="app.labelled"),
]
# Related cards (the selected card's full list) and the vault's link suggestions.
RELATED_BINDINGS = [
    Binding("ctrl+r", "related", "related", show=False,
            tooltip="the selected card's related cards, in full", id="app.related"),
    Binding("ctrl+n", "link_suggestions", "link suggestions", show=False,
            tooltip="near cards no link joins yet, across the vault", id="app.link-suggestions"),
]
BINDINGS = [*APP_BINDINGS, *JOB_BINDINGS, *ENGINE_BINDINGS, *LABELLED_BINDINGS,
            *RELATED_BINDINGS]  # footer order

# The other screens' tables, here so that the keymap and F1 can list them before (or
# without) those screens being imported.
CARD_SCREEN_BINDINGS = [
    Binding("escape,q", "close", "back", id="card.close"),
    Binding("e", "app.edit_card", "edit", show=False, tooltip="edit in $EDITOR", id="card.edit"),
]
LABELLED_SCREEN_BINDINGS = [
    Binding("escape,q", "close", "back", tooltip="back to the search", id="labelled.close"),
    Binding("s", "sort", "sort", tooltip="sort by the next column", id="labelled.sort"),
    Binding("r", "reverse", "reverse", tooltip="reverse the order", id="labelled.reverse"),
    Binding("t", "app.tune_labels", "tune", tooltip="run tune on these labels as a job",
            id="labelled.tune"),
    Binding("c", "app.tune_cancel", "cancel tune", tooltip="cancel the tune job",
            id="labelled.tune-cancel"),
    Binding("w", "app.tune_write", "write", tooltip="write tune's best fusion to "
            "[search] (asks first)", id="labelled.tune-write"),
]
LINKS_SCREEN_BINDINGS = [
    Binding("escape,q", "close", "back", id="links.close"),
    Binding("c", "copy_link", "copy link",
            tooltip="copy the row's [[target]] link text (also shown in a notice)",
            id="links.copy"),
    Binding("f4", "edit_source", "edit", tooltip="open the row's first card in $EDITOR",
            id="links.edit"),
    Binding("slash", "filter", "filter", tooltip="filter rows by card name or title",
            id="links.filter"),
]
HELP_SCREEN_BINDINGS = [
    Binding("escape,q,f1,question_mark", "dismiss", "close help", id="help.close"),
]
CONFIRM_SCREEN_BINDINGS = [
    Binding("y", "answer(True)", "yes", id="confirm.yes"),
    Binding("n,escape", "answer(False)", "no", id="confirm.no"),
]
WARNINGS_SCREEN_BINDINGS = [Binding("escape,q", "close", "close", id="warnings.close")]

# Keys of Textual's own bindings (no id, so not remappable), named for ``Keys.hint``.
FIXED = {
    "textual.palette": App.COMMAND_PALETTE_BINDING,
    "textual.focus-next": next(b.key for b in Screen.BINDINGS
                               if isinstance(b, Binding) and b.action == "app.focus_next"),
    "textual.submit": next(b.key for b in Input.BINDINGS
                           if isinstance(b, Binding) and b.action == "submit"),
}
_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "Enter"}
_MODIFIERS = {"ctrl", "shift", "alt", "meta", "super", "hyper"}


def default_path() -> Path:
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hql-tui" / "keymap.toml"


def show_key(key: str) -> str:
    """A key as the screen writes it: ``F7``, ``ctrl+g``, ``Enter``, ``esc``, ``?``."""
    *mods, name = key.strip().split("+")
    name = _NAMES.get(name, name)
    if re.fullmatch(r"f\d{1,2}", name):
        name = name.upper()
    return "+".join([*mods, name])


@dataclass(frozen=True)
class Keymap:
    """The user's keymap (binding id → keys) and, when the file was refused, why."""

    keys: Mapping[str, str]
    notice: str | None = None


def _flatten(table: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    # ``jobs.build = "x"`` (a dotted key) and ``"jobs.build" = "x"`` mean the same.
    out: dict[str, object] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def load_keymap(path: Path, known: Iterable[str]) -> Keymap:
    """The keymap in ``path`` (none when the file is absent), or a notice and no keymap.
    Read as a regular file only: a FIFO named by ``$HQL_TUI_KEYMAP`` would block the
    start. One key given to several ids is applied (Textual gives it to the first
    binding found) with a notice naming them, so the user knows which one lost it."""
    if not os.path.lexists(path):
        return Keymap({})  # most starts have none: the TOML reader is not even loaded
    from producer.tomlfile import TomlFileError, read_toml

    try:
        entries = _flatten(read_toml(path))
    except FileNotFoundError:
        return Keymap({})
    except TomlFileError as exc:
        return Keymap({}, f"{exc.message}; the default keys are kept")
    ids = set(known)
    for name, value in entries.items():
        if name not in ids:
            return Keymap({}, f"{path}: no binding has the id {name!r} (help lists them); "
                              "the default keys are kept")
        keys = [k.strip() for k in value.split(",")] if isinstance(value, str) else []
        if not keys or not all(_is_key(k) for k in keys):
            return Keymap({}, f"{path}: {name} = {value!r} is not a key such as \"ctrl+b\" "
                              "or \"f6,w\"; the default keys are kept")
    keymap = {name: str(value) for name, value in entries.items()}
    return Keymap(keymap, _shared_keys(path, keymap))


def _shared_keys(path: Path, keymap: Mapping[str, str]) -> str | None:
    """A notice when the file gives one key to more than one id (None: it does not)."""
    owners: dict[str, list[str]] = {}
    for name, value in keymap.items():
        for key in value.split(","):
            owners.setdefault(key.strip(), []).append(name)
    shared = [(key, names) for key, names in owners.items() if len(names) > 1]
    if not shared:
        return None
    key, names = shared[0]
    return (f"{path}: {key} is given to {' and '.join(names)}; only one of them can have it "
            "(give each its own key)")


def _key_names() -> frozenset[str]:
    """Every key name Textual reports (``f6``, ``pageup``, ``space``) and the names of
    printable characters (``question_mark``, ``slash``)."""
    from textual.keys import KEY_NAME_REPLACEMENTS, KEY_TO_UNICODE_NAME, Keys

    return frozenset({k.value.rpartition("+")[2] for k in Keys}
                     | set(KEY_TO_UNICODE_NAME) | set(KEY_NAME_REPLACEMENTS.values()))


def _is_key(key: str) -> bool:
    """``ctrl+b``, ``f6``, ``w``, ``?``: modifiers, then one character or a key's name
    Textual knows (``f6x`` or ``ctlr`` would be accepted and never fire)."""
    *mods, name = key.split("+") if len(key) > 1 else [key]
    single = len(name) == 1 and not name.isspace()
    named = single or re.fullmatch(r"[a-z0-9_]+", name) and name in _key_names()
    return bool(named) and all(m in _MODIFIERS for m in mods)


class Keys:
    """The active key of every binding id, for hints; built from tables and a keymap."""

    def __init__(self, tables: Iterable[Iterable[Binding]], keymap: Mapping[str, str]) -> None:
        self.keymap = dict(keymap)
        self._keys: dict[str, str] = dict(FIXED)
        for table in tables:
            for binding in table:
                if binding.id:
                    self._keys[binding.id] = self.keymap.get(binding.id, binding.key)

    def key(self, binding_id: str) -> str:
        """The first key bound to ``binding_id`` (as Textual names it)."""
        return self._keys[binding_id].split(",")[0].strip()

    def hint(self, binding_id: str) -> str:
        """The first key bound to ``binding_id``, as the screen writes it."""
        return show_key(self.key(binding_id))

    def bound(self, bindings: Iterable[Binding]) -> list[Binding]:
        """``bindings`` with the keys the keymap gives them (for the help table)."""
        return [replace(b, key=self._keys.get(b.id, b.key)) if b.id else b for b in bindings]


def user_keys(tables: list[list[Binding]], path: Path | None = None
              ) -> tuple[Keys, str | None]:
    """The keys of every binding in ``tables`` under the user's keymap file
    (``default_path()`` unless ``path``), and the notice when the file was refused."""
    keymap = load_keymap(path or default_path(), [b.id for t in tables for b in t if b.id])
    return Keys(tables, keymap.keys), keymap.notice
