"""The card list: every card with its index status, filtered by a substring."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Label

from hqltui.ui.palette import Palette
from producer.terminal import shown as printable


class CardTable(DataTable[Text | str]):
    BINDING_GROUP_TITLE = "Cards"


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

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._rows: list[tuple[str, str]] = []
        self._shown: list[str] = []
        self.palette = Palette()

    def compose(self) -> ComposeResult:
        yield Label("cards", id="cards-title", classes="pane-title")
        yield Input(placeholder="filter cards", id="card-filter", select_on_focus=False)
        yield CardTable(cursor_type="row", cell_padding=0, id="card-table")

    @property
    def table(self) -> CardTable:
        return self.query_one(CardTable)

    @property
    def shown(self) -> list[str]:
        return list(self._shown)

    def set_cards(self, rows: list[tuple[str, str]], selected: str | None) -> None:
        self._rows = rows
        self._refill(selected)

    def _refill(self, selected: str | None) -> None:
        needle = self.query_one("#card-filter", Input).value.strip().lower()
        rows = [r for r in self._rows if needle in r[0].lower()] if needle else self._rows
        self._shown = [name for name, _ in rows]
        table = self.table
        width = max(self.size.width - 8 - 2, 8)
        with table.prevent(DataTable.RowHighlighted):
            table.clear(columns=True)
            table.add_column(" card", key="card", width=width)
            table.add_column("index", key="status", width=8)
            table.add_rows(
                [
                    (Text(" " + printable(name), no_wrap=True, overflow="ellipsis"),
                     self._status(status))
                    for name, status in rows
                ]
            )
        total = len(self._rows)
        title = f"cards {len(rows)}/{total}" if needle else f"cards {total}"
        self.query_one("#cards-title", Label).update(title)
        self.select(selected)

    def select(self, name: str | None) -> None:
        table = self.table
        if name is not None and name in self._shown:
            with table.prevent(DataTable.RowHighlighted):
                table.show_cursor = True
                table.move_cursor(row=self._shown.index(name), animate=False)
        else:
            table.show_cursor = False

    @on(Input.Changed, "#card-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        row = self.table.cursor_row
        keep = self._shown[row] if self.table.show_cursor and 0 <= row < len(self._shown) else None
        self._refill(keep)

    @on(Input.Submitted, "#card-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.data_table.has_focus and 0 <= event.cursor_row < len(self._shown):
            event.data_table.show_cursor = True
            self.post_message(self.Selected(self._shown[event.cursor_row]))

    @on(DataTable.RowSelected)
    def _opened(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._shown):
            self.post_message(self.Opened(self._shown[event.cursor_row]))

    def action_open(self) -> None:
        row = self.table.cursor_row
        if self.table.show_cursor and 0 <= row < len(self._shown):
            self.post_message(self.Opened(self._shown[row]))

    def _status(self, status: str) -> Text:
        if status == "stale":
            return Text(status, style=self.palette.warning)
        if status == "missing":
            return Text(status, style=self.palette.error)
        return Text(status or "—", style=self.palette.muted)
