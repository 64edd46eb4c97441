"""Display-only panes: the status line, the warnings strip and the card detail."""

from __future__ import annotations

from rich.console import RenderableType
from textual.containers import VerticalScroll
from textual.widgets import Static


class StatusLine(Static):
    """One line: vault, card count, index status, model and revision, index age."""


class WarningsStrip(VerticalScroll):
    """Always visible; every warning the session and the current query carry."""

    can_focus = True

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="warnings-body")

    shown: RenderableType = ""

    def show(self, renderable: RenderableType) -> None:
        self.shown = renderable
        self.query_one("#warnings-body", Static).update(renderable)


class CardDetail(VerticalScroll):
    """The selected card: ranks in every column, provenance, links, then the body."""

    can_focus = True

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id=f"{self.id or 'detail'}-body", classes="detail-body")

    shown: RenderableType = ""

    def show(self, renderable: RenderableType) -> None:
        self.shown = renderable
        self.query_one(".detail-body", Static).update(renderable)
        self.scroll_home(animate=False)
