"""The engine row: engine BM25, engine vector and engine hybrid, below the local row.

Hidden until the user turns it on. The row only draws: its workers and the state it
shows belong to ``hqltui.ui.controllers.engine``, its wording to
``hqltui.ui.engine_views``; ``draw`` takes the state and the view made of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from hqltui.ui.state import EngineState
from hqltui.ui.widgets.ranking import RankingColumn

if TYPE_CHECKING:
    from hqltui.core.engine import EngineAnswer
    from hqltui.ui.engine_views import EngineView

ENGINE_SLOTS = ("engine-bm25", "engine-semantic", "engine-hybrid")


class EngineRow(Vertical):
    """Three engine columns (with the answer's warnings under them), or one line in their
    place."""

    def __init__(self, **kwargs: Any) -> None:  # Widget's name, id, classes
        super().__init__(**kwargs)
        self.state = EngineState()  # the state drawn

    def compose(self) -> ComposeResult:
        with Horizontal(id="engine-columns"):
            yield RankingColumn("engine-bm25", "engine bm25", id="engine-bm25")
            yield RankingColumn("engine-semantic", "engine vector", id="engine-semantic")
            yield RankingColumn("engine-hybrid", "engine hybrid", id="engine-hybrid")
        yield Static("", id="engine-line")
        yield Static("", id="engine-notes")

    def column(self, slot: str) -> RankingColumn:
        return self.query_one(f"#{slot}", RankingColumn)

    @property
    def columns(self) -> list[RankingColumn]:
        return [self.column(slot) for slot in ENGINE_SLOTS]

    @property
    def active(self) -> bool:
        return self.state.active

    @property
    def answer(self) -> EngineAnswer | None:
        return self.state.answer

    @property
    def shown_generation(self) -> int:
        return self.state.shown_generation

    @property
    def pending(self) -> bool:
        return self.state.pending

    def draw(self, state: EngineState, view: EngineView, selected: str | None) -> None:
        self.state = state
        self.set_class(state.active, "-on")
        self.screen.set_class(state.active, "-engine")
        if not state.active:
            return
        for slot, title in view.titles.items():
            self.column(slot).set_title(title)
        if view.line is not None:
            line = self.query_one("#engine-line", Static)
            line.update(view.line)
            line.set_classes(f"-{view.line_kind}")
            self.set_class(True, "-line")
            return
        self.set_class(False, "-line")
        self.query_one("#engine-notes", Static).update(view.notes or "")
        self.set_class(view.notes is not None, "-notes")
        for slot, shown in view.columns.items():
            column = self.column(slot)
            if shown.rows is None:
                column.show_message(shown.message or "", shown.kind)
            else:
                column.show_rows(shown.rows, selected)

    def select(self, name: str | None) -> None:
        for column in self.columns:
            column.select(name)
