"""The main screen: status line, query, three columns, cards, detail, warnings.

The screen lays widgets out and routes keys; the app owns the state (session,
answer, selection) and tells the screen what to show.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer

from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.engine import EngineRow
from hqltui.ui.widgets.jobs import JobsPanel
from hqltui.ui.widgets.panes import CardDetail, StatusLine, WarningsStrip
from hqltui.ui.widgets.query import QueryInput
from hqltui.ui.widgets.ranking import RankingColumn

SLOTS = ("lexical", "semantic", "hybrid")
JOBS_HINT = "no jobs yet · F7 builds the index · F8 verifies it · ctrl+g cancels · F10 hides"


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
        Binding("e", "app.edit_card", "edit card in $EDITOR", show=False, id="main.edit"),
        Binding("r", "app.reload", "reload vault", show=False, id="main.reload"),
        Binding("w", "app.show_warnings", "all warnings", show=False, id="main.warnings"),
    ]

    def compose(self) -> ComposeResult:
        yield StatusLine("loading vault…", id="status")
        yield QueryInput(placeholder="type a query — ranks as you type", id="query",
                         select_on_focus=False)
        with Horizontal(id="columns"):
            yield RankingColumn("lexical", "lexical · bm25", id="lexical")
            yield RankingColumn("semantic", "semantic", id="semantic")
            yield RankingColumn("hybrid", "hybrid · rrf", id="hybrid")
        yield EngineRow(id="engine")  # engine bm25 / vector / hybrid; hidden until F9
        with Horizontal(id="lower"):
            yield CardList(id="cards")
            yield CardDetail(id="detail")
        # The jobs panel (index build / verify, engine jobs); hidden until a job runs or F10.
        yield JobsPanel(id="jobs", hint=JOBS_HINT)
        yield WarningsStrip(id="warnings")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.app.main_screen_mounted()  # type: ignore[attr-defined]

    def column(self, slot: str) -> RankingColumn:
        return self.query_one(f"#{slot}", RankingColumn)

    @property
    def columns(self) -> list[RankingColumn]:
        return [self.column(slot) for slot in SLOTS]

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
        if column.has_class("-message"):
            self.query_one(CardList).table.focus()
        else:
            column.table.focus()

    def action_focus_cards(self) -> None:
        self.query_one(CardList).table.focus()

    def action_filter_cards(self) -> None:
        self.query_one("#card-filter").focus()
