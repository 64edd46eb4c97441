"""A card full-screen: the same detail as the pane, with the whole height to read it."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static

from hqltui.ui.keys import CARD_SCREEN_BINDINGS
from hqltui.ui.widgets.panes import CardDetail


class CardScreen(Screen[None]):
    BINDINGS = [*CARD_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    def __init__(self, name: str, header: RenderableType, detail: RenderableType) -> None:
        super().__init__()
        self.card_name = name
        self._header = header
        self._detail = detail

    def compose(self) -> ComposeResult:
        yield Static(self._header, id="card-header")
        yield CardDetail(id="card-full")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        pane = self.query_one(CardDetail)
        pane.show(self._detail)
        pane.focus()

    def action_close(self) -> None:
        self.dismiss(None)
