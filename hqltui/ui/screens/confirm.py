"""A yes/no question before the app changes a user's file (e.g. writing hql.toml)."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from hqltui.ui.keys import CONFIRM_SCREEN_BINDINGS


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with ``True`` (y, or the first button) or ``False`` (n, esc, the second)."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen #confirm-box {
        width: 72; height: auto; padding: 1 2;
        border: round $warning; background: $surface;
    }
    ConfirmScreen #confirm-title { text-style: bold; color: $text-warning; height: auto; }
    ConfirmScreen #confirm-body { height: auto; margin: 1 0; }
    ConfirmScreen #confirm-buttons { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """

    BINDINGS = [*CONFIRM_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    def __init__(self, title: str, body: RenderableType, *, yes: str, no: str,
                 keys: tuple[str, str]) -> None:
        super().__init__()
        self._title = title
        self._body = body
        self._yes = yes
        self._no = no
        self._keys = keys  # the active keys of confirm.yes and confirm.no, for the buttons

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self._title, id="confirm-title")
            yield Static(self._body, id="confirm-body")
            with Horizontal(id="confirm-buttons"):
                yes_key, no_key = self._keys
                yield Button(f"{self._yes} ({yes_key})", variant="warning", id="confirm-yes")
                yield Button(f"{self._no} ({no_key})", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
