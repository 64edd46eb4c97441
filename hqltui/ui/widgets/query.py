"""The query input, with the persisted history on up and down."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class QueryInput(Input):
    BINDING_GROUP_TITLE = "Query"
    # Input sets its virtual width to the text's on every key; the query line is one row
    # of fixed size (CSS), so that needs a repaint, not a layout of the whole screen.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)
    BINDINGS = [
        Binding("up", "history(-1)", "older query", show=False, id="query.history-back"),
        Binding("down", "history(1)", "newer query", show=False, id="query.history-forward"),
    ]

    def __init__(self, **kwargs: Any) -> None:  # Widget's name, id, classes
        super().__init__(**kwargs)
        self.history: list[str] = []
        self._position: int | None = None
        self._draft = ""

    def set_history(self, entries: list[str]) -> None:
        self.history = list(entries)
        self._position = None

    def remember(self, text: str) -> None:
        if text in self.history:
            self.history.remove(text)
        self.history.append(text)
        self._position = None

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        if self._position is None:
            if step > 0:
                return
            self._draft = self.value
            position = len(self.history) - 1
        else:
            position = self._position + step
        if position >= len(self.history):
            self._position = None
            self.value = self._draft
        else:
            self._position = max(position, 0)
            self.value = self.history[self._position]
        self.cursor_position = len(self.value)
