"""F1 / ?: every binding of the app, its keys and its id, from the live binding tables."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


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
    BINDINGS = [
        Binding("escape,q,f1,question_mark", "dismiss", "close help", id="help.close"),
    ]

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
