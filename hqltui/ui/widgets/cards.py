"""The card list: every card with its index status, filtered by a substring.

Drawn with the line API (``RankList``): a vault of tens of thousands of cards
would take a ``DataTable`` seconds to fill and measure, so here a row's text is
made only when the row is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label, Static

from hqltui.ui.palette import Palette
from hqltui.ui.widgets.ranklist import RankList
from producer.terminal import shown as printable

STATUS_W = 8


class CardTable(RankList):
    BINDING_GROUP_TITLE = "Cards"


class _Rows(Sequence[Text]):
    """The shown cards' row texts, each made when it is first drawn."""

    def __init__(self, rows: list[tuple[str, str]], width: int, palette: Palette) -> None:
        self._rows = rows
        self._width = width
        self._palette = palette

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Text: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Text]: ...
    def __getitem__(self, i: int | slice) -> Text | Sequence[Text]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        name, status = self._rows[i]
        name = " " + printable(name)
        name = name if len(name) <= self._width else name[: self._width - 1] + "…"
        line = Text(name.ljust(self._width), no_wrap=True)
        line.append_text(_status(status, self._palette))
        return line


def _status(status: str, palette: Palette) -> Text:
    if status == "stale":
        return Text(status, style=palette.warning)
    if status == "missing":
        return Text(status, style=palette.error)
    return Text(status or "—", style=palette.muted)


class CardList(Vertical):
    """Rows are ``(name, status)``; status is ``fresh``, ``stale``, ``missing`` or ``""``."""

    BINDINGS = [
        Binding("o", "open", "open card", show=False, id="cards.open"),
    ]

    class Selected(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class Opened(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, **kwargs: Any) -> None:  # Widget's name, id, classes
        super().__init__(**kwargs)
        self._rows: list[tuple[str, str]] = []
        self._shown: list[str] = []
        self._width = 0
        self.palette = Palette()

    def compose(self) -> ComposeResult:
        yield Label("cards", id="cards-title", classes="pane-title")
        yield Input(placeholder="filter cards", id="card-filter", select_on_focus=False)
        yield Static("", id="cards-header", classes="cards-header")
        yield CardTable(id="card-table")

    @property
    def table(self) -> CardTable:
        return self.query_one(CardTable)

    @property
    def shown(self) -> list[str]:
        return list(self._shown)

    @property
    def cursor_name(self) -> str | None:
        table = self.table
        if table.show_cursor and 0 <= table.cursor < len(self._shown):
            return self._shown[table.cursor]
        return None

    def set_cards(self, rows: list[tuple[str, str]], selected: str | None) -> None:
        self._rows = rows
        self._refill(selected)

    def _fit(self) -> int:
        # The name takes what the status column and the scrollbar leave.
        return max(self.size.width - STATUS_W - 2, 8)

    def on_resize(self) -> None:
        if self._rows and self._fit() != self._width:
            self._refill(self.cursor_name)

    def _refill(self, selected: str | None) -> None:
        needle = self.query_one("#card-filter", Input).value.strip().lower()
        rows = [r for r in self._rows if needle in r[0].lower()] if needle else self._rows
        self._shown = [name for name, _ in rows]
        width = self._width = self._fit()
        header = Text(" card".ljust(width) + "index", no_wrap=True, overflow="crop")
        self.query_one("#cards-header", Static).update(header)
        at = self._position(selected)
        self.table.set_rows(_Rows(rows, width, self.palette), at)
        total = len(self._rows)
        title = f"cards {len(rows)}/{total}" if needle else f"cards {total}"
        self.query_one("#cards-title", Label).update(title)

    def _position(self, name: str | None) -> int | None:
        if name is None:
            return None
        try:
            return self._shown.index(name)
        except ValueError:
            return None

    def select(self, name: str | None) -> None:
        self.table.place(self._position(name))

    @on(Input.Changed, "#card-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._refill(self.cursor_name)

    @on(Input.Submitted, "#card-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    @on(RankList.Moved)
    def _moved(self, event: RankList.Moved) -> None:
        event.stop()
        if 0 <= event.row < len(self._shown):
            self.post_message(self.Selected(self._shown[event.row]))

    @on(RankList.Chosen)
    def _chosen(self, event: RankList.Chosen) -> None:
        event.stop()
        if 0 <= event.row < len(self._shown):
            self.post_message(self.Opened(self._shown[event.row]))

    def action_open(self) -> None:
        if (name := self.cursor_name) is not None:
            self.post_message(self.Opened(name))
