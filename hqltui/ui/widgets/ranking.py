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
        self._rows: list[Row] = []
        self._name_width = 0

    def compose(self) -> ComposeResult:
        yield Label(self._title, classes="column-title")
        yield RankTable(cursor_type="row", cell_padding=0, id=f"{self.slot}-table")
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
        self._rows = []
        with self.table.prevent(DataTable.RowHighlighted):
            self.table.clear()
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
        if self._rows and self._name_width != self._fit():
            row = self.table.cursor_row
            keep = self._names[row] if self.table.show_cursor and row < len(self._names) else None
            self._fill(keep)

    def _fit(self) -> int:
        # rank 3, score 7, badges 5, border and scrollbar 2; the name takes what is left.
        return max(self.size.width - 3 - 7 - 5 - 2, 8)

    def _fill(self, selected: str | None) -> None:
        table = self.table
        width = self._fit()
        with table.prevent(DataTable.RowHighlighted):
            if width != self._name_width or not table.columns:
                self._name_width = width
                table.clear(columns=True)
                table.add_column(Text(" #", justify="right"), key="rank", width=3)
                table.add_column(" card", key="card", width=width)
                table.add_column(Text("score", justify="right"), key="score", width=7)
                table.add_column("", key="badges", width=5)
            else:
                table.clear()
            table.add_rows(
                [
                    (
                        Text(f"{r.rank:>2} "),
                        Text(" " + r.name, no_wrap=True, overflow="ellipsis"),
                        Text(r.score, justify="right"),
                        Text(" ") + r.badges,
                    )
                    for r in self._rows
                ]
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
