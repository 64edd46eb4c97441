"""One ranking column: a title naming the arm, then either hits or one message.

The column never decides anything: the app hands it rows (already ranked by
the core) or a message (no match, refusal, loading). Selection is owned by
the app; the column reports the user's moves and shows the app's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Label, Static


@dataclass(frozen=True)
class Row:
    rank: int
    name: str
    score: str
    badges: Text


class RankTable(DataTable[Text | str]):
    """The hits of one column. Enter opens the highlighted card."""

    BINDING_GROUP_TITLE = "Ranking"

    class Entered(Message):
        """Focus arrived; the column shows a cursor if it had none."""

    def on_focus(self) -> None:
        self.post_message(self.Entered())


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

    def __init__(self, slot: str, title: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.slot = slot
        self._title = title
        self._names: list[str] = []

    def compose(self) -> ComposeResult:
        yield Label(self._title, classes="column-title")
        table = RankTable(cursor_type="row", zebra_stripes=False, id=f"{self.slot}-table")
        table.add_column("#", key="rank", width=3)
        table.add_column("card", key="card")
        table.add_column("score", key="score", width=6)
        table.add_column("", key="badges", width=7)
        yield table
        yield Static("", classes="column-message")

    @property
    def table(self) -> RankTable:
        return self.query_one(RankTable)

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def set_title(self, title: Text | str) -> None:
        self.query_one(".column-title", Label).update(title)

    def show_message(self, message: Text | str, kind: str) -> None:
        """Replace the hits with one message; ``kind``: empty, none, refusal or busy."""
        self._names = []
        with self.table.prevent(DataTable.RowHighlighted):
            self.table.clear()
        box = self.query_one(".column-message", Static)
        box.update(message)
        box.set_classes(f"column-message -{kind}")
        self.set_class(True, "-message")

    def show_rows(self, rows: list[Row], selected: str | None) -> None:
        self.set_class(False, "-message")
        table = self.table
        self._names = [row.name for row in rows]
        with table.prevent(DataTable.RowHighlighted):
            table.clear()
            table.add_rows(
                [(Text(str(r.rank), justify="right"), r.name, Text(r.score, justify="right"),
                  r.badges) for r in rows]
            )
        self.select(selected)

    def select(self, name: str | None) -> None:
        """Put the cursor on ``name`` if this column ranks it; hide the cursor otherwise."""
        table = self.table
        if name is not None and name in self._names:
            with table.prevent(DataTable.RowHighlighted):
                table.show_cursor = True
                table.move_cursor(row=self._names.index(name), animate=False)
        else:
            table.show_cursor = False

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if not event.data_table.has_focus or not (0 <= event.cursor_row < len(self._names)):
            return
        event.data_table.show_cursor = True
        self.post_message(self.Selected(self.slot, self._names[event.cursor_row]))

    @on(RankTable.Entered)
    def _entered(self, event: RankTable.Entered) -> None:
        event.stop()
        table = self.table
        if not table.show_cursor and self._names:
            table.show_cursor = True
            row = min(max(table.cursor_row, 0), len(self._names) - 1)
            self.post_message(self.Selected(self.slot, self._names[row]))

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._names):
            self.post_message(self.Opened(self.slot, self._names[event.cursor_row]))

    def action_open(self) -> None:
        row = self.table.cursor_row
        if self.table.show_cursor and 0 <= row < len(self._names):
            self.post_message(self.Opened(self.slot, self._names[row]))
