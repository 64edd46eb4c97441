"""The relevance workbench: label keys, the labelled-queries screen, tune, its write.

A label key becomes one change to the labels file (``LabelsController``, which keeps
the undo list); the labelled-queries screen is scored in a thread worker on the
session on screen; ``tune`` runs on the same labels as a cancellable worker whose
progress and table that screen shows; writing tune's best fusion into ``[search]``
is asked for apart, after a confirmation that shows the lines it changes. The
controller holds the last tune result (``tune_result``) from its creation on; the
screen state stays the app's (``ScreenState.labels``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from hqltui.ui import messages, views
from hqltui.ui.controllers.labels import LabelsController, Outcome
from hqltui.ui.widgets.query import QueryInput

if TYPE_CHECKING:
    from hqltui.core.tune import TuneResult
    from hqltui.ui.app import HqlApp
    from hqltui.ui.screens.labelled import LabelledScreen

LABELS_GROUP = "labels"
TUNE_GROUP = "tune"


class WorkbenchController:
    def __init__(self, app: HqlApp, vault: Path, reload: Callable[[str], None]) -> None:
        self.app = app
        self.vault = vault
        self.reload = reload  # read the vault again (after [search] is written)
        self.labels = LabelsController()
        self.tune_result: TuneResult | None = None  # the last tune that finished

    # ------------------------------------------------------------- labelling

    def label(self, what: str) -> None:
        """Toggle the selected card relevant / a decoy for the query, or cycle its kind."""
        state = self.app.state
        self._labelled(self.labels.label(state.labels, state.labelled_text, state.selected,
                                         what))

    def undo(self) -> None:
        self._labelled(self.labels.undo_last(self.app.state.labels))

    def _labelled(self, done: Outcome) -> None:
        if done.labels is not None:
            self.app.state = replace(self.app.state, labels=done.labels)
            self.app.paint()
        self.app.notify(done.notice, severity=done.severity,
                        timeout=8 if done.severity == "error" else 3)

    # ------------------------------------------------- labelled-queries screen

    def screen(self) -> LabelledScreen | None:
        """The labelled-queries screen when it is on top (its module loads with it)."""
        from hqltui.ui.screens.labelled import LabelledScreen

        return self.app.screen if isinstance(self.app.screen, LabelledScreen) else None

    def open(self) -> None:
        """The labelled-queries screen, scored in a worker on the session on screen."""
        from hqltui.ui.screens.labelled import LabelledScreen

        app = self.app
        if isinstance(app.screen, LabelledScreen):
            return
        session, labels = app.state.session, app.state.labels
        if session is None or labels is None:
            app.notify("the vault is not loaded yet", severity="warning", timeout=3)
            return
        if labels.error:
            app.notify(labels.error, severity="error", timeout=8)
            return
        queries = labels.labelled()
        if not queries:
            app.notify(f"no labelled queries yet in {labels.path.name}: mark a relevant card "
                       f"for a query with {app.keys.hint('main.label-relevant')}",
                       severity="warning", timeout=5)
            return
        title, waiting = views.labelled_title(labels, len(queries), app.palette)
        app.push_screen(LabelledScreen(title, waiting), self._closed)
        lexical = session.search.lexical

        def score() -> None:
            from textual.worker import get_current_worker

            from hqltui.core.evaluation import evaluate

            worker = get_current_worker()
            report = evaluate(session, queries, cancelled=lambda: worker.is_cancelled)
            if not worker.is_cancelled:
                app.post_message(messages.LabelsScored(report, lexical))

        app.run_worker(score, name="labelled queries", description="labelled queries",
                       group=LABELS_GROUP, exclusive=True, thread=True, exit_on_error=False)

    def scored(self, message: messages.LabelsScored) -> None:
        if (screen := self.screen()) is not None:
            screen.show_report(message.report, message.lexical, self.app.palette)

    def _closed(self, text: str | None) -> None:
        """Back from the labelled-queries screen: its workers stop; a query chosen there
        is typed into the search."""
        self.app.workers.cancel_group(self.app, LABELS_GROUP)
        self.app.workers.cancel_group(self.app, TUNE_GROUP)
        if text:
            query = self.app.main.query_one(QueryInput)
            query.value = text
            query.cursor_position = len(text)
            self.app.main.action_focus_column("hybrid")

    # ------------------------------------------------------------------ tune

    def _tuning(self) -> bool:
        return any(w.group == TUNE_GROUP and not w.is_finished for w in self.app.workers)

    def tune(self) -> None:
        """``tune`` on the labels as a job: progress on the labelled-queries screen,
        cancellable, its table at the end; writing ``[search]`` is asked for apart."""
        from hqltui.core.tune import TooFewQueries, fold_count
        from hqltui.ui import labelled_views

        app = self.app
        screen, session, labels = self.screen(), app.state.session, app.state.labels
        if screen is None or session is None or labels is None:
            return
        if self._tuning():
            app.notify("tune is already running", severity="warning", timeout=3)
            return
        queries = labels.labelled()
        try:
            fold_count(queries, None)
        except TooFewQueries as exc:
            screen.show_tune(Text(f"tune: {exc}", style=app.palette.error))
            return
        self.tune_result = None
        cancel = app.keys.hint("labelled.tune-cancel")
        screen.show_tune(labelled_views.tune_progress(0, 1, cancel, app.palette))

        def progress(done: int, total: int) -> None:
            app.post_message(messages.TuneProgress(done, total))

        def run() -> None:
            from textual.worker import get_current_worker

            from hqltui.core.tune import tune

            worker = get_current_worker()
            result = tune(session, queries, progress=progress,
                          cancelled=lambda: worker.is_cancelled)
            app.post_message(messages.TuneDone(result))

        app.run_worker(run, name="tune", description="tune", group=TUNE_GROUP, exclusive=True,
                       thread=True, exit_on_error=False)

    def progress(self, message: messages.TuneProgress) -> None:
        from hqltui.ui import labelled_views

        if (screen := self.screen()) is not None:
            cancel = self.app.keys.hint("labelled.tune-cancel")
            screen.show_tune(labelled_views.tune_progress(message.done, message.total,
                                                          cancel, self.app.palette))

    def done(self, message: messages.TuneDone) -> None:
        from hqltui.core.tune import TuneResult
        from hqltui.ui import labelled_views

        assert isinstance(message.result, TuneResult)
        self.tune_result = message.result
        if (screen := self.screen()) is not None:
            screen.show_tune(labelled_views.tune_table(
                message.result, self.app.keys.hint("labelled.tune-write"), self.app.palette))

    def cancel(self) -> None:
        if self._tuning():
            self.app.workers.cancel_group(self.app, TUNE_GROUP)
            self.app.notify("tune cancelled: [search] is as it was", timeout=3)

    def write(self) -> None:
        """tune's best fusion into hql.toml's [search], after a confirmation showing it."""
        from hqltui.core.configure import preview_search, write_search
        from hqltui.core.tune import search_settings
        from hqltui.ui.screens.confirm import ConfirmScreen
        from producer.config import ConfigError

        app = self.app
        best = self.tune_result.best if self.tune_result is not None else None
        if best is None:
            app.notify(f"run tune first ({app.keys.hint('labelled.tune')})",
                       severity="warning", timeout=3)
            return
        settings = search_settings(best.config)
        try:
            before, after = preview_search(self.vault, settings)
        except ConfigError as exc:
            app.notify(str(exc), severity="error", timeout=8)
            return
        changed = [line for line in after.splitlines() if line not in before.splitlines()]
        body = Text("\n".join(changed) or "(no change)")

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                file = write_search(self.vault, settings)
            except ConfigError as exc:
                app.notify(str(exc), severity="error", timeout=8)
                return
            app.notify(f"wrote {best.config.label()} to {file.name}'s [search]", timeout=4)
            self.reload("key")

        keys = (app.keys.hint("confirm.yes"), app.keys.hint("confirm.no"))
        app.push_screen(ConfirmScreen(f"write {best.config.label()} to hql.toml's [search]?",
                                      body, yes="write", no="keep", keys=keys), answered)
