"""The labelled-queries screen: ``eval``'s summary as bars, every labelled query's scores.

The app scores the labels in a worker and hands the report here (``show_report``);
the screen lays it out, sorts the table and reports Enter on a query
(``dismiss(text)``: the app loads it into the main screen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from hqltui.ui import labelled_views
from hqltui.ui.keys import LABELLED_SCREEN_BINDINGS
from hqltui.ui.table_columns import column_width

if TYPE_CHECKING:
    from hqltui.core.evaluation import Report
    from hqltui.ui.palette import Palette


class LabelledScreen(Screen[str | None]):
    DEFAULT_CSS = """
    LabelledScreen #labelled-title { height: 1; padding: 0 1; background: $panel; }
    LabelledScreen #labelled-summary { height: auto; padding: 1 1 0 1; }
    LabelledScreen #labelled-tune { height: auto; padding: 0 1; display: none; }
    LabelledScreen #labelled-table { height: 1fr; margin-top: 1; }
    """

    BINDINGS = [*LABELLED_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    def __init__(self, title: Text, waiting: Text) -> None:
        super().__init__()
        self._title = title
        self._waiting = waiting
        self.report: Report | None = None
        self.lexical = "bm25"
        self.palette: Palette | None = None
        self.sort = "#"
        self.reverse = False
        self.tune_shown: RenderableType = ""

    def compose(self) -> ComposeResult:
        yield Static(self._title, id="labelled-title")
        yield Static(self._waiting, id="labelled-summary")
        yield Static("", id="labelled-tune")  # the tune job: progress, then its table
        table: DataTable[Text | str] = DataTable(id="labelled-table", cursor_type="row",
                                                 zebra_stripes=True)
        yield table
        yield Footer(compact=True)

    @property
    def table(self) -> DataTable[Text | str]:
        return self.query_one("#labelled-table", DataTable)

    def show_message(self, text: Text) -> None:
        self.query_one("#labelled-summary", Static).update(text)

    def show_tune(self, shown: RenderableType) -> None:
        self.tune_shown = shown  # what the tune line shows (tests read it)
        box = self.query_one("#labelled-tune", Static)
        box.display = True
        box.update(shown)

    def show_report(self, report: Report, lexical: str, p: Palette) -> None:
        self.report, self.lexical, self.palette = report, lexical, p
        self.query_one("#labelled-summary", Static).update(
            labelled_views.summary(report, p))
        self._fill()
        self.table.focus()

    def _fill(self) -> None:
        report = self.report
        if report is None:
            return
        rows = labelled_views.rows(report, self.sort, self.reverse)
        table = self.table
        table.clear(columns=True)
        for at, key in enumerate(labelled_views.sort_keys(report)):
            mark = (" ▼" if not self.reverse else " ▲") if key == self.sort else ""
            label = Text(f"{key}{mark}")  # Text: `hybrid[bm25]` is no markup
            table.add_column(label, key=key,
                             width=column_width(label, (cells[at] for _, cells in rows)))
        for text, cells in rows:
            table.add_row(*cells, key=text)

    def action_sort(self) -> None:
        if self.report is None:
            return
        keys = labelled_views.sort_keys(self.report)
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)]
        self.reverse = False
        self._fill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._fill()

    @on(DataTable.RowSelected, "#labelled-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.dismiss(str(event.row_key.value))

    def action_close(self) -> None:
        self.dismiss(None)
