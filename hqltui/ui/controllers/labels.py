"""Labelling from the keyboard: what a label key does to the labels file, and undo.

The controller owns no state the screen shows (the app's ``ScreenState.labels``
holds the file as last read); it keeps the undo list of label changes and turns
each key into one ``hqltui.core.labels.change`` and the one-line notice the
user sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hqltui.core.labels import Label, Labels

UNDO_DEPTH = 100


@dataclass(frozen=True)
class Outcome:
    """What a label key did: the labels now (None: unchanged) and the notice to show."""

    labels: Labels | None
    notice: str
    severity: str = "information"


def _quote(text: str) -> str:
    return f"“{text if len(text) <= 40 else text[:39] + '…'}”"


class LabelsController:
    def __init__(self) -> None:
        self.undo: list[tuple[str, Label, str]] = []  # (query text, label before, what)

    def label(self, labels: Labels | None, text: str, card: str | None, what: str
              ) -> Outcome:
        """``what``: ``relevant`` or ``decoy`` toggles ``card``; ``kind`` cycles the kind."""
        if labels is None:
            return Outcome(None, "the vault is not loaded yet", "warning")
        # Loaded with the session (labels are read once it is): not at start-up.
        from hqltui.core.labels import (
            LabelsError,
            change,
            cycle_kind,
            toggle_decoy,
            toggle_relevant,
        )

        if not text:
            return Outcome(None, "type a query first: labels belong to the query on screen",
                           "warning")
        if what == "kind":
            edit: Callable[[Label], Label] = cycle_kind
        elif card is None:
            return Outcome(None, "select a card first", "warning")
        else:
            edit = (lambda lab: toggle_relevant(lab, card)) if what == "relevant" else (
                lambda lab: toggle_decoy(lab, card))
        try:
            done = change(labels, text, edit)
        except LabelsError as exc:
            return Outcome(None, str(exc), "error")
        after = done.after
        if what == "kind":
            said = f"kind of {_quote(text)}: {after.kind or 'none'}"
        else:
            now = after.mark(card or "")
            said = (f"{card}: {now} for {_quote(text)}" if now
                    else f"{card}: no longer {what} for {_quote(text)}")
        self.undo = [*self.undo[-UNDO_DEPTH + 1:], (text, done.before, said)]
        notice = said
        if done.created:
            notice = f"created {done.labels.path.name} with the first label ({said})"
        elif not after.saved and not after.empty:
            notice = f"{said} · kept until a relevant card is marked (eval needs one)"
        return Outcome(done.labels, notice)

    def undo_last(self, labels: Labels | None) -> Outcome:
        if labels is None or not self.undo:
            return Outcome(None, "no label change to undo", "warning")
        from hqltui.core.labels import LabelsError, change

        text, before, said = self.undo[-1]
        try:
            done = change(labels, text, lambda _label: before)
        except LabelsError as exc:
            return Outcome(None, str(exc), "error")
        self.undo.pop()
        return Outcome(done.labels, f"undone: {said}")
