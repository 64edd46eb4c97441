"""One ranking column: a title naming the arm, then either hits or one message.

The column never decides anything: the app hands it rows (already ranked by
the core) or a message (no match, refusal, loading). Selection is owned by
the app; the column reports the user's moves and shows the app's choice.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, Static

from hqltui.ui.views import Row
from hqltui.ui.widgets.ranklist import RankList
from producer.terminal import shown

RANK_W, SCORE_W, BADGE_W = 3, 8, 5
SNIPPET_INDENT = 4  # a passage snippet sits under the card's name


class RankingColumn(Vertical):
    """``slot`` is ``lexical``, ``semantic`` or ``hybrid``."""

    BINDINGS = [
        Binding("o", "open", "open card", show=False, id="column.open"),
    ]

    class Selected(Message):
        """The user moved the cursor onto a card in this column."""

        def __init__(self, slot: str, name: str) -> None:
            super().__init__()
            self.slot = slot
            self.name = name

    class Opened(Message):
        """The user pressed Enter on a card in this column."""

        def __init__(self, slot: str, name: str) -> None:
            super().__init__()
            self.slot = slot
            self.name = name

    def __init__(self, slot: str, title: str, **kwargs: Any) -> None:  # Widget's name, id, classes
        super().__init__(**kwargs)
        self.slot = slot
        self._title = title
        self._names: list[str] = []
        self._rows: list[Row] = []
        self._width = 0
        self._title_shown: Text | str | None = None
        self._header_width: int | None = None

    def compose(self) -> ComposeResult:
        yield Label(self._title, classes="column-title")
        yield Static("", classes="column-header")
        yield RankList(id=f"{self.slot}-table")
        yield Static("", classes="column-message")

    @property
    def table(self) -> RankList:
        return self.query_one(RankList)

    @property
    def names(self) -> list[str]:
        return list(self._names)

    @property
    def cursor_name(self) -> str | None:
        table = self.table
        if table.show_cursor and 0 <= table.cursor < len(self._names):
            return self._names[table.cursor]
        return None

    def set_title(self, title: Text | str) -> None:
        """One line, or two when the query is labelled (its metrics); never wrapped (CSS).

        Drawn again only when it changed, and laid out again only when its number of
        lines did: a layout of the whole screen on every keystroke is most of its cost."""
        if title == self._title_shown:
            return
        lines = str(title).count("\n")
        relayout = self._title_shown is None or lines != str(self._title_shown).count("\n")
        self._title_shown = title
        self.query_one(".column-title", Label).update(title, layout=relayout)

    def show_message(self, message: Text | str, kind: str) -> None:
        """Replace the hits with one message; ``kind``: empty, none, refusal or busy."""
        self._names = []
        self._rows = []
        self.table.set_rows([], None)
        box = self.query_one(".column-message", Static)
        box.update(message)
        box.set_classes(f"column-message -{kind}")
        self.set_class(True, "-message")

    def show_rows(self, rows: list[Row], selected: str | None) -> None:
        self.set_class(False, "-message")
        self._rows = rows
        self._names = [row.name for row in rows]
        self._fill(selected)

    def on_resize(self) -> None:
        if self._fit() != self._width:
            keep = self.cursor_name
            self._fill(keep)

    def _fit(self) -> int:
        # The name takes what the rank, score, badges and scrollbar leave.
        return max(self.size.width - RANK_W - SCORE_W - BADGE_W - 2, 8)

    def _line(self, row: Row, width: int, height: int) -> Text:
        name = shown(row.name)
        name = name if len(name) <= width - 1 else name[: width - 2] + "…"
        line = Text(f"{row.rank:>2} ")
        line.append_text(row.label or Text(" "))  # ✓ relevant, ✗ decoy for this query
        line.append(name.ljust(width - 1))
        line.append(row.score.rjust(SCORE_W))
        line.append(" ")
        line.append_text(row.badges)
        if height > 1:  # the passage that answered, cut to the row's width (in cells)
            snippet = (row.snippet or Text("")).copy()
            snippet.truncate(width + SCORE_W + BADGE_W - SNIPPET_INDENT, overflow="ellipsis")
            line.append("\n" + " " * SNIPPET_INDENT)
            line.append_text(snippet)
        return line

    def _fill(self, selected: str | None) -> None:
        width = self._width = self._fit()
        if width != self._header_width:  # one line (CSS): it changes only with the width
            self._header_width = width
            header = Text(" #  card".ljust(RANK_W + width) + "score".rjust(SCORE_W))
            self.query_one(".column-header", Static).update(header, layout=False)
        cursor = self._names.index(selected) if selected in self._names else None
        height = 2 if any(r.snippet is not None for r in self._rows) else 1
        self.table.set_rows([self._line(r, width, height) for r in self._rows], cursor, height)

    def select(self, name: str | None) -> None:
        """Put the cursor on ``name`` if this column ranks it; hide the cursor otherwise."""
        self.table.place(self._names.index(name) if name in self._names else None)

    @on(RankList.Moved)
    def _moved(self, event: RankList.Moved) -> None:
        event.stop()
        if 0 <= event.row < len(self._names):
            self.post_message(self.Selected(self.slot, self._names[event.row]))

    @on(RankList.Chosen)
    def _chosen(self, event: RankList.Chosen) -> None:
        event.stop()
        if 0 <= event.row < len(self._names):
            self.post_message(self.Opened(self.slot, self._names[event.row]))

    def action_open(self) -> None:
        name = self.cursor_name
        if name is not None:
            self.post_message(self.Opened(self.slot, name))
