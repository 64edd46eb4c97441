"""Related cards in the app: the card pane's section, the full list, link suggestions.

The controller gives each session on screen one ``Relatedness`` (made lazily;
warmed in a thread worker once the columns can rank, so the pane's first look
costs a few milliseconds), opens the links screen for the selected card's full
related list, and computes the vault's link suggestions in a thread worker that
reports progress to that screen and stops when the screen closes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.worker import get_current_worker

from hqltui.ui import related_views
from hqltui.ui.related_views import RelatedPane
from producer.terminal import shown

if TYPE_CHECKING:
    from textual.app import App

    from hqltui.ui.screens.links import LinksScreen
    from hqltui.ui.state import ScreenState

FULL_LIST = 50
SUGGESTIONS = 200
GROUP = "links"


class RelatedController:
    def __init__(self, app: App[Any]) -> None:
        self.app = app

    def loaded(self, state: ScreenState) -> ScreenState:
        """A new session on screen: its related scorer (nothing computed yet)."""
        from hqltui.core.related import Relatedness

        if state.session is None:
            return state
        hint = self.app.keys.hint("app.related")  # type: ignore[attr-defined]
        return replace(state, related=RelatedPane(Relatedness(state.session), hint))

    def warm(self, state: ScreenState) -> None:
        """Make the scorer's structures in a worker (the term weights: a second on 17k cards)."""
        pane = state.related
        if pane is not None:
            # A description, or Textual repr()s the work: the whole session (30 s on man1).
            self.app.run_worker(pane.relatedness.prepare, name="related (prepare)",
                                description="related (prepare)", group="related",
                                exclusive=True, thread=True, exit_on_error=False)

    def _screen(self, state: ScreenState, title: Text, waiting: str, pairs: bool = True
                ) -> LinksScreen:
        from hqltui.ui.screens.links import LinksScreen

        assert state.session is not None
        titles = {c.name: c.title for c in state.session.vault.cards}
        p = self.app.palette  # type: ignore[attr-defined]
        return LinksScreen(title, Text(waiting, style=p.muted), titles, p, pairs)

    def open_related(self, state: ScreenState) -> None:
        pane, name = state.related, state.selected
        if pane is None or name is None or state.card(name) is None:
            self.app.notify("select a card first", severity="warning", timeout=2)
            return
        answer = pane.relatedness.related(name, FULL_LIST)
        title = Text.assemble(("related to ", "bold"), (shown(name), "bold"))
        screen = self._screen(state, title, "", pairs=False)
        self.app.push_screen(screen)
        if answer.refusal is not None:
            note = Text(shown(answer.refusal.message), style=self.app.palette.warning)  # type: ignore[attr-defined]
        else:
            assert answer.provenance is not None
            note = self._note(answer.provenance.label(), answer.duplicates)
        screen.call_after_refresh(screen.show_rows, related_views.related_rows(answer), note)

    def _note(self, label: str, duplicates: tuple[str, ...] = ()) -> Text:
        p = self.app.palette  # type: ignore[attr-defined]
        note = Text(shown(label), style=p.muted)
        if duplicates:
            note.append("  · same text: " + shown(", ".join(duplicates)))
        return note

    def open_suggestions(self, state: ScreenState) -> None:
        pane = state.related
        if pane is None:
            self.app.notify("the vault is not loaded yet", severity="warning", timeout=2)
            return
        title = Text.assemble(("link suggestions", "bold"),
                              " · near cards that no link or relation joins yet")
        screen = self._screen(state, title, "comparing cards…")
        self.app.push_screen(screen, callback=self._cancel_suggestions)
        self.app.run_worker(partial(self._suggest, pane, screen), name="link suggestions",
                            description="link suggestions", group=GROUP, exclusive=True,
                            thread=True, exit_on_error=False)

    def _cancel_suggestions(self, _: object) -> None:
        """The screen closed: stop comparing cards for it."""
        self.app.workers.cancel_group(self.app, GROUP)

    def _suggest(self, pane: RelatedPane, screen: LinksScreen) -> None:
        from hqltui.core.suggestions import FULL_SCORE_CARDS, suggest_links

        worker = get_current_worker()
        relatedness = pane.relatedness
        cards = len(relatedness.session.names)
        method = "card vectors + lexical" if cards <= FULL_SCORE_CARDS else "card vectors"
        call = self.app.call_from_thread

        def progress(done: int, total: int) -> None:
            if not worker.is_cancelled:
                screen.post_message(screen.Progress(done, total, method))

        relatedness.prepare()
        answer = suggest_links(relatedness, SUGGESTIONS, progress=progress,
                               cancelled=lambda: worker.is_cancelled, blas_threads=1)
        if worker.is_cancelled:
            return
        if answer.refusal is not None:
            note = Text(shown(answer.refusal.message), style=self.app.palette.warning)  # type: ignore[attr-defined]
        else:
            assert answer.provenance is not None
            note = self._note(f"{len(answer.pairs)} pairs · {answer.provenance.label()}")
        call(screen.show_rows, related_views.suggestion_rows(answer.pairs), note)
