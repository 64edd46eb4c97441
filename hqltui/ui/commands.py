"""The command palette: every app action under a namespaced title.

Titles read ``lexical: …``, ``view: …``, ``vault: …``, ``index: …`` and
``jobs: …`` (the jobs panel). The current lexical arm is marked, not hidden, so the
list is stable to learn.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from hqltui.core.names import FUSIONS, LEXICAL_CHOICES

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from hqltui.ui.keys import Keys


class _Host(Protocol):
    """What the palette reads of the app: the arm on screen, the active keys."""

    lexical: str
    keys: Keys
    screen_stack: list[DOMNode]

    async def run_action(self, action: str, default_namespace: DOMNode | None = None) -> bool:
        ...


class HqlCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast("_Host", self.app)
        h = app.keys.hint
        main = app.screen_stack[0]

        def run(action: str, on: DOMNode | None = None) -> Callable[[], object]:
            return partial(app.run_action, action, on)

        commands: list[tuple[str, str, Callable[[], object]]] = []
        for arm in LEXICAL_CHOICES:
            current = " (current)" if app.lexical == arm else ""
            commands.append(
                (f"lexical: {arm}{current}", f"rank the lexical column and hybrid with {arm}",
                 run(f"set_lexical('{arm}')"))
            )
        fusion = getattr(getattr(app, "state", None), "fusion_method", None)
        for method, entry in FUSIONS.items():
            current = " (current)" if fusion == method else ""
            commands.append(
                (f"fusion: {method}{current}",
                 f"hybrid by {entry.summary} ({h('app.fusion')} cycles)",
                 run(f"set_fusion('{method}')"))
            )
        snippets = getattr(getattr(app, "state", None), "snippets", True)
        # How edits are noticed: OS file notifications, or the periodic scan alone.
        watching = getattr(getattr(app, "autobuild", None), "watching", "scan")
        commands += [
            ("vault: reload", "read the vault and its index again", run("reload")),
            ("index: build", f"run hql-semantics build in the background ({h('jobs.build')})",
             run("build_index")),
            ("index: auto-build on / off", "re-embed edited cards in the background, after "
             f"the vault is quiet; edits noticed by {watching} ({h('jobs.auto-build')})",
             run("toggle_auto_build")),
            ("index: verify", "check the index against the vault, list every problem "
             f"({h('jobs.verify')})", run("verify_index")),
            ("jobs: cancel", "stop the running jobs; the old index stays as it was "
             f"({h('jobs.cancel')})", run("cancel_jobs")),
            ("view: jobs", f"show or hide the jobs panel ({h('jobs.panel')})",
             run("toggle_jobs")),
            ("view: help", "every key binding", run("help")),
            ("view: open card", "the selected card full-screen", run("open_card")),
            ("view: edit card in $EDITOR", "suspend the app and edit the selected card",
             run("edit_card")),
            ("view: all warnings", "every warning in full", run("show_warnings")),
            ("view: related cards", "the selected card's nearest cards in full, linked ones "
             f"marked ({h('app.related')})", run("related")),
            ("view: link suggestions", "near cards that no link joins yet, across the vault "
             f"({h('app.link-suggestions')})", run("link_suggestions")),
            (f"view: passage snippets ({'on' if snippets else 'off'})",
             "show or hide the passage that answered under semantic and hybrid rows "
             f"({h('app.snippets')})", run("toggle_snippets")),
            ("view: engine columns", "show or hide engine bm25 / vector / hybrid "
             f"({h('app.engine-view')})", run("toggle_engine")),
            ("engine: sync + build", "upload the cards, then build the engine indexes "
             f"({h('app.engine-sync')})", run("engine_sync")),
            ("engine: verify", "compare the engine's rows and indexes with the vault "
             f"({h('app.engine-verify')})", run("engine_verify")),
            ("view: labelled queries", "every labelled query with each arm's MRR@10, and "
             f"eval's summary ({h('app.labelled')})", run("labelled")),
            ("labels: mark relevant", "toggle the selected card relevant for the query "
             f"({h('main.label-relevant')})", run("label('relevant')")),
            ("labels: mark decoy", "toggle the selected card a decoy for the query "
             f"({h('main.label-decoy')})", run("label('decoy')")),
            ("labels: cycle kind", "the query's kind: paraphrase → keyword → none "
             f"({h('main.label-kind')})", run("label('kind')")),
            ("labels: undo", f"undo the last label change ({h('main.label-undo')})",
             run("label_undo")),
            ("view: query", "put the cursor in the query", run("focus_query", main)),
            ("view: lexical column", "focus the lexical column",
             run("focus_column('lexical')", main)),
            ("view: semantic column", "focus the semantic column",
             run("focus_column('semantic')", main)),
            ("view: hybrid column", "focus the hybrid column",
             run("focus_column('hybrid')", main)),
            ("view: card list", "focus the card list", run("focus_cards", main)),
            ("view: filter cards", "type to filter the card list", run("filter_cards", main)),
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
