"""The main screen: status line, query, three columns, cards, detail, warnings.

The screen lays widgets out, routes keys and puts what it is handed into its
widgets (``show_*``); the app owns the state (session, answer, selection) and
asks the views (``hqltui.ui.views``) what to show.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static

from hqltui.ui import views
from hqltui.ui.keys import LABEL_BINDINGS
from hqltui.ui.messages import DetailPainted, MainScreenReady
from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.engine import EngineRow
from hqltui.ui.widgets.jobs import JobsPanel
from hqltui.ui.widgets.panes import CardDetail, KeysFooter, StatusLine, WarningsStrip
from hqltui.ui.widgets.query import QueryInput
from hqltui.ui.widgets.ranking import RankingColumn
from producer.terminal import shown

if TYPE_CHECKING:
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette
    from hqltui.ui.state import ScreenState
    from hqltui.ui.views import Column

SLOTS = ("lexical", "semantic", "hybrid")


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#query"
    BINDINGS = [
        Binding(
            "escape", "escape", "panes", tooltip="leave the query for the panes", id="main.escape"
        ),
        Binding("slash", "focus_query", "query", show=False, id="main.focus-query"),
        Binding("1", "focus_column('lexical')", "lexical column", show=False,
                id="main.focus-lexical"),
        Binding("2", "focus_column('semantic')", "semantic column", show=False,
                id="main.focus-semantic"),
        Binding("3", "focus_column('hybrid')", "hybrid column", show=False,
                id="main.focus-hybrid"),
        Binding("c", "focus_cards", "card list", show=False, id="main.focus-cards"),
        Binding("f", "filter_cards", "filter cards", show=False, id="main.filter-cards"),
        Binding("l", "app.toggle_lexical", "switch lexical arm", show=False,
                id="main.lexical"),
        Binding("m", "app.cycle_fusion", "cycle hybrid's fusion", show=False,
                id="main.fusion"),
        Binding("e", "app.edit_card", "edit card in $EDITOR", show=False, id="main.edit"),
        Binding("r", "app.reload", "reload vault", show=False, id="main.reload"),
        Binding("w", "app.show_warnings", "all warnings", show=False, id="main.warnings"),
        Binding("p", "app.toggle_snippets", "passage snippets", show=False,
                tooltip="show or hide the passage snippet under semantic and hybrid rows",
                id="main.snippets"),
        *(replace(b, show=False) for b in LABEL_BINDINGS),
    ]

    def __init__(self, jobs_hint: str) -> None:
        super().__init__()
        self.jobs_hint = jobs_hint  # the empty jobs panel's line, with the active keys
        self.focus_later: str | None = None  # a column asked for while it was busy
        self._warnings_said: object = None  # what the warnings strip shows now
        self._label_said: object = None  # what the label line shows now
        self._detail_pending: tuple[ScreenState, Palette] | None = None  # paint_detail_later

    def compose(self) -> ComposeResult:
        yield StatusLine("loading vault…", id="status")
        yield QueryInput(placeholder="type a query — ranks as you type", id="query",
                         select_on_focus=False)
        yield Static("", id="label-line")  # the query's labels; shown when it has some
        with Horizontal(id="columns"):
            yield RankingColumn("lexical", "lexical · bm25", id="lexical")
            yield RankingColumn("semantic", "semantic", id="semantic")
            yield RankingColumn("hybrid", "hybrid · rrf", id="hybrid")
        yield EngineRow(id="engine")  # engine bm25 / vector / hybrid; hidden until turned on
        with Horizontal(id="lower"):
            yield CardList(id="cards")
            yield CardDetail(id="detail")
        # The jobs panel (index build / verify, engine jobs); hidden until a job runs.
        yield JobsPanel(id="jobs", hint=self.jobs_hint)
        yield WarningsStrip(id="warnings")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        self.post_message(MainScreenReady())

    def column(self, slot: str) -> RankingColumn:
        return self.query_one(f"#{slot}", RankingColumn)

    @property
    def columns(self) -> list[RankingColumn]:
        return [self.column(slot) for slot in SLOTS]

    # --------------------------------------------------------------- painting

    def paint(self, state: ScreenState, p: Palette, keys: Keys, *, cards: bool = False,
              columns: bool = True, detail_later: bool = False) -> None:
        """``state`` in the columns, the warnings strip and the card pane (and the list).

        ``detail_later`` (a new answer): the card pane waits for the refresh that draws
        the columns, and only the newest such state is drawn, so a keystroke's columns
        are not held back by laying out a card's preview, and a burst of answers lays
        out one."""
        if cards:
            rows = [(name, state.statuses.get(name, "")) for name in state.card_names()]
            self.query_one(CardList).palette = p
            self.query_one(CardList).set_cards(rows, state.selected)
        if columns:
            self.paint_columns(views.columns(state, p, keys), state, p, keys)
            if state.answer is not None:
                self.query_one(CardList).select(state.selected)
        self.paint_warnings(state, p, keys)
        if detail_later:
            waiting = self._detail_pending is not None
            self._detail_pending = (state, p)
            if not waiting:
                self.call_after_refresh(self._paint_pending_detail)
        else:
            self.show_detail(views.detail_pane(state, p))

    def _paint_pending_detail(self) -> None:
        if self._detail_pending is not None:
            state, p = self._detail_pending
            self.show_detail(views.detail_pane(state, p))
            self.post_message(DetailPainted())

    def paint_loading(self, state: ScreenState, p: Palette, keys: Keys) -> None:
        """Start-up, before the vault is read: every pane says so."""
        self.show_status(views.loading_status(state.vault_path, p))
        self.paint_columns(views.message_columns("loading vault…", p.muted, "busy"), state, p,
                           keys)
        self._warnings_said = None
        self.query_one(WarningsStrip).show(Text("loading…", style=p.muted))

    def paint_failure(self, state: ScreenState, p: Palette, keys: Keys) -> None:
        """The vault cannot be opened: the header and every column say why."""
        self.show_status(views.failed_status(state.vault_path, state.load_error, p))
        for column in self.columns:
            column.show_message(Text(shown(state.load_error or ""), style=p.error), "refusal")
        self.paint_warnings(state, p, keys)

    def show_status(self, text: Text) -> None:
        self.query_one(StatusLine).update(text)

    def show_detail(self, detail: RenderableType) -> None:
        self._detail_pending = None  # what is shown now replaces any pane still waiting
        self.query_one(CardDetail).show(detail)

    def paint_columns(self, shown: dict[str, Column], state: ScreenState, p: Palette,
                      keys: Keys) -> None:
        for column in self.columns:
            content = shown[column.slot]
            if content.rows is None:
                column.show_message(content.message or "", content.kind)
            else:
                column.show_rows(content.rows, state.selected)
        self.paint_titles(state, p, keys)
        later = self.focus_later
        if later is not None and not self.column(later).has_class("-message"):
            # The column asked for (Enter in the query) has its rows now: go there, unless
            # the user has gone somewhere else than the card list meanwhile.
            self.focus_later = None
            if self.focused is self.query_one(CardList).table:
                self.column(later).table.focus()

    def paint_titles(self, state: ScreenState, p: Palette, keys: Keys) -> None:
        """The column titles (with the metrics of a labelled query) and the label line."""
        for slot, title in views.column_titles(state, p, keys).items():
            self.column(slot).set_title(title)
        line = views.label_line(state, p, keys)
        box = self.query_one("#label-line", Static)
        box.display = line is not None
        if line is not None and line != self._label_said:
            box.update(line, layout=False)  # one line (CSS)
        self._label_said = line

    def paint_warnings(self, state: ScreenState, p: Palette, keys: Keys) -> None:
        """The strip, drawn again only when what it says changed (most answers bring the
        same warnings, and laying out a long strip on each keystroke costs)."""
        title = views.warnings_title(state, keys)
        said = (title, tuple(state.warnings()), p)
        if said == self._warnings_said:
            return
        self._warnings_said = said
        strip = self.query_one(WarningsStrip)
        strip.border_title = title
        strip.show(views.warnings_text(state, p, one_line=True))

    def select(self, name: str | None, source: str) -> None:
        """The selection everywhere but where the user made it (``source``)."""
        for column in self.columns:
            if column.slot != source:
                column.select(name)
        if source != "cards":
            self.query_one(CardList).select(name)
        self.query_one(EngineRow).select(name)

    # ---------------------------------------------------------------- actions

    def action_escape(self) -> None:
        focused = self.focused
        if isinstance(focused, QueryInput):
            self.action_focus_column("hybrid")
        else:
            self.action_focus_query()

    def action_focus_query(self) -> None:
        self.query_one(QueryInput).focus()

    def action_focus_column(self, slot: str) -> None:
        column = self.column(slot)
        self.focus_later = None
        if column.has_class("-message"):
            if column.query_one(".column-message").has_class("-busy"):
                self.focus_later = slot  # waiting for the model: focus it when it answers
            self.query_one(CardList).table.focus()
        else:
            column.table.focus()

    def action_focus_cards(self) -> None:
        self.query_one(CardList).table.focus()

    def action_filter_cards(self) -> None:
        self.query_one("#card-filter").focus()
