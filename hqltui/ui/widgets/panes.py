"""Display-only panes: the status line, the warnings strip, the card detail, the footer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

if TYPE_CHECKING:
    from textual.screen import Screen

from hqltui.ui import render


class StatusLine(Static):
    """One line: vault, card count, index status, model and revision, index age."""


class WarningsStrip(VerticalScroll):
    """Always visible; every warning the session and the current query carry."""

    can_focus = True

    def compose(self) -> ComposeResult:
        yield Static("", id="warnings-body")

    shown: RenderableType = ""

    def show(self, renderable: RenderableType) -> None:
        self.shown = renderable
        self.query_one("#warnings-body", Static).update(renderable)


class CardDetail(VerticalScroll):
    """The selected card: ranks in every column, provenance, links, then the body."""

    can_focus = True

    def compose(self) -> ComposeResult:
        yield Static("", id=f"{self.id or 'detail'}-body", classes="detail-body")
        yield Static("", id=f"{self.id or 'detail'}-passage", classes="detail-passage")

    shown: RenderableType = ""

    def show(self, renderable: RenderableType) -> None:
        """Show a card; an ``Anchored`` one (a passage answered) scrolls to that passage."""
        self.shown = renderable
        body = self.query_one(".detail-body", Static)
        rest = self.query_one(".detail-passage", Static)
        if isinstance(renderable, render.Anchored):
            body.update(renderable.before)
            rest.update(renderable.after)
            rest.display = True
            self.call_after_refresh(self.scroll_to_widget, rest, animate=False, top=True)
            return
        body.update(renderable)
        rest.update("")
        rest.display = False
        self.scroll_home(animate=False, immediate=True)


class KeysFooter(Footer):
    """Textual's footer, laid out again once per refresh however many binding changes
    reach it before that refresh: the start brings several (focus, the screen stack),
    and each made Textual's footer rebuild all its keys before the first frame."""

    _recompose_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True  # what Footer.bindings_changed sets, then its test
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_pending:
            self._recompose_pending = True
            self.call_after_refresh(self._recompose_now)

    async def _recompose_now(self) -> None:
        self._recompose_pending = False
        await self.recompose()
