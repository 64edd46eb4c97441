"""Every warning in full, when the strip is too short to hold them."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from hqltui.ui.keys import WARNINGS_SCREEN_BINDINGS


class WarningsScreen(ModalScreen[None]):
    BINDINGS = [*WARNINGS_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    def __init__(self, body: RenderableType) -> None:
        super().__init__()
        self._body = body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="warnings-box"):
            yield Static(self._body)

    def action_close(self) -> None:
        self.dismiss(None)
