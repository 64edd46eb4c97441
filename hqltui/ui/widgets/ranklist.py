"""A light list of ranked rows drawn with the line API, one cached strip per row.

A ``DataTable`` re-renders every cell of every column on each answer, which is
most of a keystroke's budget at 10k cards. Here each row is one prepared Rich
``Text``; a new answer replaces the rows and only the visible lines are drawn. A row
may take more than one line (``height``: a passage snippet under the card); every row
of a list then takes that many, so a line's row is a division away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RankList(ScrollView, can_focus=True):
    BINDING_GROUP_TITLE = "Ranking"
    BINDINGS = [
        Binding("up", "move(-1)", "up", show=False, id="rank.up"),
        Binding("down", "move(1)", "down", show=False, id="rank.down"),
        Binding("pageup", "page(-1)", "page up", show=False, id="rank.page-up"),
        Binding("pagedown", "page(1)", "page down", show=False, id="rank.page-down"),
        Binding("home", "edge(0)", "first", show=False, id="rank.first"),
        Binding("end", "edge(1)", "last", show=False, id="rank.last"),
        Binding("enter", "choose", "open card", show=False, id="rank.open"),
    ]
    COMPONENT_CLASSES = {"ranklist--cursor", "ranklist--cursor-blurred"}

    cursor: reactive[int] = reactive(0, repaint=False, init=False)
    show_cursor: reactive[bool] = reactive(True, repaint=False, init=False)

    class Moved(Message):
        """The user put the cursor on ``row``."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    class Chosen(Message):
        """The user pressed Enter (or double-clicked) on ``row``."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    def __init__(self, **kwargs: Any) -> None:  # Widget's name, id, classes
        super().__init__(**kwargs)
        self._rows: Sequence[Text] = []
        self._height = 1  # lines per row
        self._cache: dict[tuple[int, int, str], Strip] = {}

    # ----------------------------------------------------------------- content

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def rows(self) -> Sequence[Text]:
        """The rows as given (a row of ``row_height`` lines holds them joined by newlines)."""
        return self._rows

    def set_rows(self, rows: Sequence[Text], cursor: int | None, height: int = 1) -> None:
        """Replace every row (any sequence: a long list may make each row when it is
        drawn); ``cursor`` None hides the cursor; each row takes ``height`` lines (its
        text's lines, the missing ones blank)."""
        self._rows = rows
        self._height = max(1, height)
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(rows) * self._height)
        self.set_reactive(RankList.show_cursor, cursor is not None)
        self.set_reactive(RankList.cursor, min(cursor or 0, max(len(rows) - 1, 0)))
        # Scrolled now, not after the next refresh: one refresh draws the new rows where
        # they belong (a deferred scroll costs a second refresh of the screen).
        self.scroll_to(y=0, animate=False, immediate=True)
        if cursor is not None:
            self._scroll_cursor()
        self.refresh()

    def place(self, cursor: int | None) -> None:
        """Show the cursor on ``cursor`` (None hides it) without telling anyone."""
        if cursor is None:
            if self.show_cursor:
                self.set_reactive(RankList.show_cursor, False)
                self.refresh()
            return
        top = self.scroll_offset.y
        if self.show_cursor and cursor == self.cursor and top <= cursor < top + self.size.height:
            return  # already there and in view: no scroll, no repaint
        self.set_reactive(RankList.show_cursor, True)
        self.set_reactive(RankList.cursor, cursor)
        self._scroll_cursor()
        self.refresh()

    # -------------------------------------------------------------- rendering

    @property
    def row_height(self) -> int:
        return self._height

    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self._rows) * self._height)

    def on_focus(self) -> None:
        self._cache.clear()
        self.refresh()
        if self._rows and not self.show_cursor:
            self._move_to(self.cursor)

    def on_blur(self) -> None:
        self._cache.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        row, part = divmod(y + self.scroll_offset.y, self._height)
        width = self.scrollable_content_region.width
        if not (0 <= row < len(self._rows)):
            return Strip.blank(width, self.rich_style)
        state = ""
        if self.show_cursor and row == self.cursor:
            state = "focus" if self.has_focus else "blur"
        key = (row * self._height + part, width, state)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(row, part, width, state)
            self._cache[key] = strip
        return strip

    def _render_row(self, row: int, part: int, width: int, state: str) -> Strip:
        base = self.rich_style
        text = self._rows[row]
        if self._height > 1:
            lines = text.split("\n", allow_blank=True)
            text = lines[part] if part < len(lines) else Text("")
        segments = list(text.render(self.app.console))
        strip = Strip(segments).adjust_cell_length(width, base)
        if base:
            strip = strip.apply_style(base)
        if state:
            name = "ranklist--cursor" if state == "focus" else "ranklist--cursor-blurred"
            cursor = self.get_component_rich_style(name, partial=True)
            strip = Strip(
                [Segment(t, (s or Style()) + cursor if s else cursor, c) for t, s, c in strip]
            )
        return strip

    # -------------------------------------------------------------- movement

    def _scroll_cursor(self) -> None:
        if self.size.height:
            h = self._height
            self.scroll_to_region(Region(0, self.cursor * h, 1, h), animate=False, force=True,
                                  immediate=True)

    def _move_to(self, row: int) -> None:
        if not self._rows:
            return
        row = max(0, min(row, len(self._rows) - 1))
        changed = row != self.cursor or not self.show_cursor
        self.set_reactive(RankList.show_cursor, True)
        self.set_reactive(RankList.cursor, row)
        self._cache.clear()
        self._scroll_cursor()
        self.refresh()
        if changed:
            self.post_message(self.Moved(row))

    def action_move(self, step: int) -> None:
        self._move_to(self.cursor + step if self.show_cursor else self.cursor)

    def action_page(self, step: int) -> None:
        self._move_to(self.cursor + step * max(self.size.height // self._height - 1, 1))

    def action_edge(self, end: int) -> None:
        self._move_to(len(self._rows) - 1 if end else 0)

    def action_choose(self) -> None:
        if self._rows and self.show_cursor:
            self.post_message(self.Chosen(self.cursor))

    def on_click(self, event: events.Click) -> None:
        row = (event.y + self.scroll_offset.y) // self._height
        if 0 <= row < len(self._rows):
            self._move_to(row)
            if event.chain >= 2:
                self.post_message(self.Chosen(row))
