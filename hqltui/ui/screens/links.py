"""The links screen: a card's full related list, or the vault's link suggestions.

Read-only: ``c`` copies the ``[[target]]`` link text to the clipboard (OSC 52)
and shows it in a notification too, since many terminals ignore OSC 52; F4
opens the row's first card in ``$EDITOR``. The app never edits a card itself.
Rows are filtered as you type in the filter (either card's name or title).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, ProgressBar, Static

from hqltui.ui import related_views
from hqltui.ui.keys import LINKS_SCREEN_BINDINGS
from hqltui.ui.table_columns import column_width

if TYPE_CHECKING:
    from hqltui.ui.palette import Palette
    from hqltui.ui.related_views import LinkRow


class LinksScreen(Screen[None]):
    DEFAULT_CSS = """
    LinksScreen #links-title { height: auto; padding: 0 1; background: $panel; }
    LinksScreen #links-filter { height: 3; }
    LinksScreen #links-progress { height: 1; padding: 0 1; }
    LinksScreen #links-bar { height: 1; padding: 0 1; }
    LinksScreen #links-table { height: 1fr; }
    """

    BINDINGS = [*LINKS_SCREEN_BINDINGS]  # copied: Screen's list type is wider

    class Progress(Message):
        """From the worker (``post_message`` is thread-safe and does not wait for the
        screen, as ``call_from_thread`` would, once per block of cards)."""

        def __init__(self, done: int, total: int, method: str) -> None:
            super().__init__()
            self.done, self.total, self.method = done, total, method

    def __init__(self, title: Text, waiting: Text, titles: dict[str, str], p: Palette,
                 pairs: bool = True) -> None:
        """``pairs``: rows are pairs of cards (suggestions), else one card's neighbours."""
        super().__init__()
        self.pairs = pairs
        self._title = title
        self._waiting = waiting
        self.titles = titles
        self.palette = p
        self.rows: list[LinkRow] = []
        self.shown_rows: list[LinkRow] = []
        self.ready = False
        self.filtered_for = ""  # the filter text the rows on screen were chosen by

    def compose(self) -> ComposeResult:
        yield Static(self._title, id="links-title")
        box = Input(placeholder="filter by card name or title", id="links-filter")
        box.cursor_blink = getattr(self.app, "cursor_blink", True)  # the app's (tests: off)
        yield box
        yield Static(self._waiting, id="links-progress")
        yield ProgressBar(id="links-bar", show_eta=False)
        table: DataTable[Text] = DataTable(id="links-table", cursor_type="row",
                                           zebra_stripes=True)
        yield table
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#links-bar", ProgressBar).display = False
        self._fill()
        self.table.focus()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#links-table", DataTable)

    def on_links_screen_progress(self, message: Progress) -> None:
        if not self.ready:  # a message still queued when the rows came is not news
            self.show_progress(message.done, message.total, message.method)

    def show_progress(self, done: int, total: int, method: str) -> None:
        bar = self.query_one("#links-bar", ProgressBar)
        bar.display = True
        bar.update(total=total, progress=done)
        self.query_one("#links-progress", Static).update(
            related_views.progress_text(done, total, method, self.palette))

    def show_rows(self, rows: list[LinkRow], note: Text) -> None:
        self.rows = rows
        self.query_one("#links-bar", ProgressBar).display = False
        self.query_one("#links-progress", Static).update(note)
        self._fill()
        self.ready = True

    def _fill(self) -> None:
        needle = self.query_one("#links-filter", Input).value.strip()
        self.filtered_for = needle
        self.shown_rows = [r for r in self.rows if related_views.matches(r, needle, self.titles)]
        cells = [related_views.table_cells(rank, row, self.titles, self.palette, self.pairs)
                 for rank, row in enumerate(self.shown_rows, start=1)]
        table = self.table
        table.clear(columns=True)  # columns again: their widths follow the rows shown
        for at, label in enumerate(related_views.columns(self.pairs)):
            table.add_column(label, key=label,
                             width=column_width(label, (row[at] for row in cells)))
        for row in cells:
            table.add_row(*row)

    @on(Input.Changed, "#links-filter")
    def _filtered(self, _event: Input.Changed) -> None:
        self._fill()

    @on(Input.Submitted, "#links-filter")
    def _to_table(self, _event: Input.Submitted) -> None:
        self.table.focus()

    def current(self) -> LinkRow | None:
        at = self.table.cursor_row
        return self.shown_rows[at] if 0 <= at < len(self.shown_rows) else None

    def action_filter(self) -> None:
        self.query_one("#links-filter", Input).focus()

    def action_copy_link(self) -> None:
        row = self.current()
        if row is None:
            self.app.notify("no row selected", severity="warning", timeout=2)
            return
        link = f"[[{row.target}]]"
        self.app.copy_to_clipboard(link)
        self.app.notify(f"{link} copied: paste it into {row.source}", title="link text",
                        timeout=6)

    def action_edit_source(self) -> None:
        from hqltui.ui import editor

        row = self.current()
        session = getattr(getattr(self.app, "state", None), "session", None)
        if row is None or session is None:
            self.app.notify("no row selected", severity="warning", timeout=2)
            return
        card = session.vault.by_name.get(row.source)
        if card is not None:
            editor.edit(self.app, session.root / card.path)

    def action_close(self) -> None:
        self.dismiss(None)
