"""Help: every binding of the app, its active keys and its id, from the binding tables.

The other screens' tables are in ``hqltui.ui.keys``, so listing every table (the app
does at start, to read the keymap) loads none of those screens.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from hqltui.ui.keys import (
    APP_BINDINGS,
    CARD_SCREEN_BINDINGS,
    CONFIRM_SCREEN_BINDINGS,
    ENGINE_BINDINGS,
    HELP_SCREEN_BINDINGS,
    JOB_BINDINGS,
    LABELLED_BINDINGS,
    LABELLED_SCREEN_BINDINGS,
    LINKS_SCREEN_BINDINGS,
    RELATED_BINDINGS,
    WARNINGS_SCREEN_BINDINGS,
)
from hqltui.ui.screens.main import MainScreen
from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.query import QueryInput
from hqltui.ui.widgets.ranking import RankingColumn
from hqltui.ui.widgets.ranklist import RankList


def binding_rows(groups: list[tuple[str, list[Binding]]]) -> Table:
    table = Table(box=None, expand=True, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("where", no_wrap=True)
    table.add_column("keys", no_wrap=True)
    table.add_column("does")
    table.add_column("id", no_wrap=True, style="dim")
    for group, bindings in groups:
        first = True
        for binding in bindings:
            if not binding.id:
                continue
            keys = ", ".join(_key(k) for k in binding.key.split(","))
            table.add_row(
                Text(group if first else "", style="bold"),
                keys,
                binding.tooltip or binding.description,
                binding.id,
            )
            first = False
    return table


def _key(key: str) -> str:
    key = key.strip()
    return {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter"}.get(key, key)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [*HELP_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    def __init__(self, groups: list[tuple[str, list[Binding]]], notes: list[str]) -> None:
        super().__init__()
        self._groups = groups
        self._notes = notes

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("hql-tui — keys", style="bold"), id="help-title")
            yield Static(binding_rows(self._groups), id="help-table")
            yield Static("\n".join(self._notes), id="help-notes")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)


def _table(owner: type[object]) -> list[Binding]:
    return [b for b in getattr(owner, "BINDINGS", []) if isinstance(b, Binding)]


def help_tables() -> list[tuple[str, list[Binding]]]:
    """The binding tables F1 lists, in its order (with the default keys)."""
    return [
        ("app (everywhere)", [*APP_BINDINGS, *ENGINE_BINDINGS, *LABELLED_BINDINGS,
                              *RELATED_BINDINGS]),
        ("jobs (everywhere)", list(JOB_BINDINGS)),
        ("main screen", _table(MainScreen)),
        ("query input", _table(QueryInput)),
        ("columns", _table(RankingColumn)),
        ("card list", _table(CardList)),
        ("card screen", list(CARD_SCREEN_BINDINGS)),
        ("labelled queries", list(LABELLED_SCREEN_BINDINGS)),
        ("related / links", list(LINKS_SCREEN_BINDINGS)),
        ("help", list(HELP_SCREEN_BINDINGS)),
        ("confirmation", list(CONFIRM_SCREEN_BINDINGS)),
    ]


def every_table() -> list[list[Binding]]:
    """Every binding table of the app: F1's, the ranked lists', the warnings screen's."""
    return [*(table for _, table in help_tables()), _table(RankList),
            list(WARNINGS_SCREEN_BINDINGS)]
