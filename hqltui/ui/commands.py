"""The command palette (ctrl+p): every app action under a namespaced title.

Titles read ``lexical: …``, ``view: …``, ``vault: …``, ``index: …`` and
``jobs: …`` (the jobs panel). The current lexical arm is marked, not hidden, so the
list is stable to learn.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from hqltui.ui.app import HqlApp


class HqlCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app: HqlApp = self.app  # type: ignore[assignment]
        main = app.main
        commands: list[tuple[str, str, Callable[[], object]]] = []
        for arm in ("bm25", "hashbag"):
            current = " (current)" if app.lexical == arm else ""
            commands.append(
                (f"lexical: {arm}{current}", f"rank the lexical column and hybrid with {arm}",
                 partial(app.action_set_lexical, arm))
            )
        commands += [
            ("vault: reload", "read the vault and its index again", app.action_reload),
            ("index: build", "run hql-semantics build in the background (F7)",
             app.action_build_index),
            ("index: verify", "check the index against the vault, list every problem (F8)",
             app.action_verify_index),
            ("jobs: cancel", "stop the running jobs; the old index stays as it was (ctrl+g)",
             app.action_cancel_jobs),
            ("view: jobs", "show or hide the jobs panel (F10)", app.action_toggle_jobs),
            ("view: help", "every key binding", app.action_help),
            ("view: open card", "the selected card full-screen", app.action_open_card),
            ("view: edit card in $EDITOR", "suspend the app and edit the selected card",
             app.action_edit_card),
            ("view: all warnings", "every warning in full", app.action_show_warnings),
            ("view: engine columns", "show or hide engine bm25 / vector / hybrid (F9)",
             app.action_toggle_engine),
            ("engine: sync + build", "upload the cards, then build the engine indexes (F11)",
             app.action_engine_sync),
            ("engine: verify", "compare the engine's rows and indexes with the vault (F12)",
             app.action_engine_verify),
            ("view: query", "put the cursor in the query", main.action_focus_query),
            ("view: lexical column", "focus the lexical column",
             partial(main.action_focus_column, "lexical")),
            ("view: semantic column", "focus the semantic column",
             partial(main.action_focus_column, "semantic")),
            ("view: hybrid column", "focus the hybrid column",
             partial(main.action_focus_column, "hybrid")),
            ("view: card list", "focus the card list", main.action_focus_cards),
            ("view: filter cards", "type to filter the card list", main.action_filter_cards),
        ]
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
