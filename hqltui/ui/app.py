"""`hql-tui VAULT`: three rankings of one query side by side.

The app wires the parts, toolong style: it holds the current ``ScreenState``
(``ui.state``), replaces it on every message (``ui.messages``) and has the main
screen paint what the pure views (``ui.views``) make of it. The work runs in the
thread workers of ``ui.controllers`` (session and watch, query, engine, jobs).
Keys and hints come from ``ui.keys`` (the user's keymap, applied with
``set_keymap``); ``ui.marks`` is the one hook the benchmarks read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import App
from textual.reactive import reactive
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from hqltui.core.names import DEFAULT_LEXICAL, FUSIONS, LEXICAL_ARMS, LEXICAL_CHOICES
from hqltui.ui import messages, views
from hqltui.ui.controllers.autobuild import AutoBuildController
from hqltui.ui.controllers.engine import EngineController
from hqltui.ui.controllers.jobs import JobsController
from hqltui.ui.controllers.query import DebounceTimer, QueryController
from hqltui.ui.controllers.readiness import ReadinessController
from hqltui.ui.controllers.related import RelatedController
from hqltui.ui.controllers.screens import ScreensController
from hqltui.ui.controllers.session import SessionController, SessionFactory
from hqltui.ui.controllers.workbench import WorkbenchController
from hqltui.ui.keys import BINDINGS, user_keys
from hqltui.ui.marks import Marks
from hqltui.ui.palette import Palette
from hqltui.ui.screens.help import every_table
from hqltui.ui.screens.main import MainScreen
from hqltui.ui.state import ScreenState, with_answer
from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.engine import EngineRow
from hqltui.ui.widgets.jobs import JobsPanel
from hqltui.ui.widgets.query import QueryInput
from hqltui.ui.widgets.ranking import RankingColumn
from producer.terminal import shown

if TYPE_CHECKING:
    from textual.command import Provider

    from hqltui.core.session import Answer, Session
    from hqltui.ui.state import PartialAnswer

Clock = Callable[[], datetime]


def _commands() -> type[Provider]:
    """The palette's commands, loaded when the palette first opens."""
    from hqltui.ui.commands import HqlCommands

    return HqlCommands


class HqlApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "hql-tui"
    COMMANDS = App.COMMANDS | {_commands}
    BINDINGS = [*BINDINGS]  # copied: App's list type is wider

    lexical: reactive[str] = reactive(DEFAULT_LEXICAL, init=False)

    def __init__(
        self,
        vault: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        session_factory: SessionFactory | None = None,
        history_file: Path | None = None,
        poll_interval: float | None = 2.0,
        debounce: float = 0.05,
        debounce_timer: DebounceTimer | None = None,
        cursor_blink: bool = True,
        ready_file: str | None = None,
        keymap_file: Path | None = None,
        auto_build: bool | None = None,
    ) -> None:
        super().__init__()
        self.vault_path = Path(vault)
        self.clock: Clock = clock or (lambda: datetime.now(UTC))
        self.poll_interval = poll_interval
        self.debounce = debounce
        self.cursor_blink = cursor_blink
        self.marks = Marks(ready_file)
        self.state = ScreenState(self.vault_path)
        self.palette = Palette()
        self.keys, self.keymap_notice = user_keys(every_table(), keymap_file)
        self.engine_options: dict[str, Any] = {}
        self.text = ""  # the query as typed
        self.sessions = SessionController(self, self.vault_path, self.clock, session_factory,
                                          history_file)
        self.queries = QueryController(self, debounce, lambda generation, text, submitted: (
            self.engine.start_query(self.state.session, generation, text, submitted)),
            debounce_timer)
        self.engine = EngineController(self, lambda: self.main.query_one(EngineRow),
                                       lambda: (self.palette, self.keys, self.state.selected),
                                       lambda: self.engine_options)
        self.jobs_ctl = jobs = JobsController(self, self.vault_path, self.clock,
                                              self._reload,
                                              lambda: self.main.query_one("#jobs", JobsPanel),
                                              lambda: self.marks.ready("job-shown"))
        # What tests and scripts read of the jobs (the controller's own objects).
        self.jobs, self.job_factories, self.last_job_events = (jobs.jobs, jobs.factories,
                                                               jobs.last_events)
        self.running_jobs, self.show_job_event = jobs.running, jobs.show_event
        self.workbench = WorkbenchController(self, self.vault_path, self._reload)
        self.readiness = ReadinessController(self)
        self.screens = ScreensController(self)
        self.related_ctl = RelatedController(self)
        # Edits re-embedded in the background (None: `[semantics] auto_build` decides).
        self.autobuild = AutoBuildController(self, self.vault_path, jobs, lambda: self.state,
                                             lambda: self.keys, auto_build,
                                             lambda: self.sessions.signature)

    # The state on screen, as tests and the benchmarks read it.
    @property
    def session(self) -> Session | None:
        return self.state.session

    @property
    def selected(self) -> str | None:
        return self.state.selected

    @property
    def answer(self) -> Answer | PartialAnswer | None:
        return self.state.answer

    @property
    def answer_arm(self) -> str | None:
        return self.state.answer_arm

    @property
    def shown_generation(self) -> int:
        return self.state.shown_generation

    @property
    def statuses(self) -> dict[str, str]:
        return dict(self.state.statuses)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # ------------------------------------------------------------- start-up

    def notify(self, message: str, *, markup: bool = False, **kwargs: Any) -> None:
        """Plain text by default: messages quote `[semantics]`, engine errors and paths,
        which Textual markup would silently eat; control characters shown as ``\\xNN``."""
        if "title" in kwargs:
            kwargs["title"] = shown(kwargs["title"])
        super().notify(shown(message), markup=markup, **kwargs)

    def get_default_screen(self) -> MainScreen:
        return MainScreen(jobs_hint=views.jobs_hint(self.keys))

    def on_mount(self) -> None:
        self.set_keymap(self.keys.keymap)
        if self.keymap_notice:
            title = "keymap used, with a clash" if self.keys.keymap else "keymap not used"
            self.notify(self.keymap_notice, title=title, severity="warning", timeout=10)
        self.palette = Palette.from_variables(self.get_css_variables())
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def on_main_screen_ready(self) -> None:
        """The main screen's widgets exist: paint, then load."""
        self.query_one(QueryInput).cursor_blink = self.cursor_blink
        self.query_one("#card-filter", Input).cursor_blink = self.cursor_blink
        self.main.paint_loading(self.state, self.palette, self.keys)
        self.call_after_refresh(self._first_painted)

    def _first_painted(self) -> None:
        """The first frame is on the terminal: read the vault now. The session worker
        imports the core (numpy, the tokeniser, YAML) and reads the cards; started
        before that frame, it would hold the interpreter while the frame is drawn."""
        self.marks.ready("first-paint")
        self.sessions.load("start", staged=True)
        if self.poll_interval:
            self.set_interval(self.poll_interval, self._poll)
            self.autobuild.watch(self._notified)

    def _theme_changed(self, _theme: object) -> None:
        self.palette = Palette.from_variables(self.get_css_variables())
        if self.state.session is not None:
            self.paint(cards=True)

    def on_unmount(self) -> None:
        self.engine.stop()
        self.jobs_ctl.stop()
        self.autobuild.stop()

    # -------------------------------------------------------------- session

    # The load's messages: what they change on screen is the readiness controller's.
    def on_session_loaded(self, message: messages.SessionLoaded) -> None:
        if self.is_running:  # else shutting down: the widgets are already being pruned
            self.readiness.loaded(message)
            self.autobuild.loaded()

    def on_session_stage(self, message: messages.SessionStage) -> None:
        if self.is_running:
            self.readiness.stage(message)

    def on_ranking_ready(self, message: messages.RankingReady) -> None:
        if self.is_running:
            self.readiness.ready(message)

    def on_session_failed(self, message: messages.SessionFailed) -> None:
        if self.is_running:
            self.readiness.failed(message)

    def _reload(self, reason: str) -> None:
        """Read the vault again: the session on screen keeps answering until the new
        one is ready to rank (staged only when there is none on screen). After a build,
        the cards on screen are kept when no file but the index changed."""
        on_hand = self.state.session if reason == "build" else None
        self.sessions.load(reason, self.lexical, staged=self.state.session is None,
                           on_hand=on_hand)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One funnel for unexpected errors: shown, never a traceback."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        if event.worker.group == "session":
            self.post_message(messages.SessionFailed(f"{type(error).__name__}: {error}"))
        elif event.worker.group != "watch":
            self.notify(f"{type(error).__name__}: {error}", title=event.worker.name,
                        severity="error", timeout=8)

    def _poll(self) -> None:
        if self.state.session is not None:
            self.sessions.poll(self.state.index_file, self.poll_interval or 0.0)

    def on_vault_changed(self) -> None:
        self.autobuild.changed()
        self._reload("changed")

    def _notified(self) -> None:
        """A file notification: look at the vault now, not at the next poll."""
        if self.state.session is not None:
            self.sessions.check(self.state.index_file)

    # ---------------------------------------------------------------- query

    @on(QueryInput.Changed, "#query")
    def _query_changed(self, event: QueryInput.Changed) -> None:
        self.text = event.value
        self.state = replace(self.state, pinned=False)
        self.queries.later(self.start_query)

    @on(QueryInput.Submitted, "#query")
    def _query_submitted(self, event: QueryInput.Submitted) -> None:
        text = event.value.strip()
        self.queries.cancel()
        self.text = event.value
        self.start_query(submitted=True)
        if text and self.sessions.remember(text):
            self.main.query_one(QueryInput).remember(text)
        self.main.action_focus_column("hybrid")

    def start_query(self, submitted: bool = False) -> None:
        """Rank the query now, or once the session is ready for the lexical arm (a query
        typed while it prepares is kept and answered then)."""
        session = self.state.session
        if session is not None and self.text.strip() and not self.readiness.ensure():
            self.readiness.submit_pending = self.readiness.submit_pending or submitted
            self.queries.cancel()
            return
        self.queries.start(session, self.text, self.lexical, submitted, self.state.fusion)

    def on_answer_ready(self, message: messages.AnswerReady) -> None:
        if not self.is_running:
            return  # shutting down: the screen's widgets are already being pruned
        self.queries.answered(message.answer, message.partial)
        self.show_answer(message.generation, message.text, message.arm, message.answer,
                         partial=message.partial)

    def show_answer(self, generation: int, text: str, arm: str,
                    answer: Answer | PartialAnswer | None, partial: bool = False) -> None:
        """Show an answer unless the screen already holds a newer one (or this one, complete)."""
        state = with_answer(self.state, generation, text, arm, answer, partial)
        if state is None:
            return  # an older answer than the one on screen: never shown
        labels = state.labels
        if labels is not None and labels.error is None and labels.changed_on_disk():
            from hqltui.core.labels import load_labels, pending_of

            # Edited in another window: the marks and metrics follow the file.
            state = replace(state, labels=load_labels(labels.path, pending_of(labels)))
        self.state = state
        self.paint(detail_later=True)
        if not partial:
            self.call_after_refresh(self.marks.answer_painted, self.marks.answer_shown(), text,
                                    generation)

    # -------------------------------------------------------------- choices

    def watch_lexical(self, arm: str) -> None:
        self.state = replace(self.state, lexical=arm)
        self.main.paint_titles(self.state, self.palette, self.keys)
        if self.state.session is None or not self.readiness.ensure():
            return  # answered when ready (an arm not built yet is being built)
        if self.state.preparing is not None:  # switched back to an arm that is ready
            self.readiness.ranking_ready()
        elif self.text.strip():
            self.start_query()

    def action_toggle_lexical(self) -> None:
        at = LEXICAL_CHOICES.index(self.lexical) if self.lexical in LEXICAL_CHOICES else -1
        self.lexical = LEXICAL_CHOICES[(at + 1) % len(LEXICAL_CHOICES)]

    def action_set_lexical(self, arm: str) -> None:
        if arm in LEXICAL_ARMS:
            self.lexical = arm

    # The fusion method (ctrl+t, the palette): hybrid re-fuses with the vault's parameters.
    def action_cycle_fusion(self) -> None:
        methods = list(FUSIONS)
        at = methods.index(self.state.fusion_method) if self.state.fusion_method in methods else -1
        self.action_set_fusion(methods[(at + 1) % len(methods)])

    def action_set_fusion(self, method: str) -> None:
        if method not in FUSIONS:
            return
        self.state = replace(self.state, fusion=method)
        self.main.paint_titles(self.state, self.palette, self.keys)
        self.notify(f"hybrid fusion: {method} ({FUSIONS[method].summary})", timeout=2)
        if self.state.session is not None and self.text.strip():
            self.start_query()

    # The passage snippets under semantic and hybrid rows (ctrl+o, p, the palette).
    def action_toggle_snippets(self) -> None:
        self.state = replace(self.state, snippets=not self.state.snippets)
        self.notify(f"passage snippets: {'on' if self.state.snippets else 'off'}", timeout=2)
        if self.state.answer is not None:
            self.paint()

    @on(RankingColumn.Selected)
    @on(CardList.Selected)
    def _selected(self, message: RankingColumn.Selected | CardList.Selected) -> None:
        self._select(message.name, getattr(message, "slot", "cards"))

    @on(RankingColumn.Opened)
    @on(CardList.Opened)
    def _card_opened(self, message: RankingColumn.Opened | CardList.Opened) -> None:
        self._select(message.name, source="")
        self.action_open_card()

    def _select(self, name: str, source: str) -> None:
        same = name == self.state.selected
        self.state = replace(self.state, selected=name, pinned=True)
        if not same:
            self.main.select(name, source)
            self.main.show_detail(views.detail_pane(self.state, self.palette))

    # ------------------------------------------- the workbench (its controller)

    def action_label(self, what: str) -> None:
        self.workbench.label(what)

    def action_label_undo(self) -> None:
        self.workbench.undo()

    def action_labelled(self) -> None:
        self.workbench.open()

    def on_labels_scored(self, message: messages.LabelsScored) -> None:
        self.workbench.scored(message)

    def action_tune_labels(self) -> None:
        self.workbench.tune()

    def on_tune_progress(self, message: messages.TuneProgress) -> None:
        self.workbench.progress(message)

    def on_tune_done(self, message: messages.TuneDone) -> None:
        self.workbench.done(message)

    def action_tune_cancel(self) -> None:
        self.workbench.cancel()

    def action_tune_write(self) -> None:
        self.workbench.write()

    # -------------------------------------------------------------- actions

    async def action_quit(self) -> None:
        """Quit; while an index build runs, ask first (``JobsController.quit``)."""
        self.jobs_ctl.quit(self.palette, self.keys)

    def action_help_quit(self) -> None:
        """Textual's ctrl+c notice, worded in plain text: ours are not markup, so its
        ``[b]…[/b]`` would be shown as typed."""
        self.notify(f"Press {self.keys.hint('app.quit')} to quit the app",
                    title="Do you want to quit?")

    def action_help(self) -> None:
        self.screens.help()

    def action_open_card(self) -> None:
        self.screens.open_card()

    def action_related(self) -> None:
        self.related_ctl.open_related(self.state)

    def action_link_suggestions(self) -> None:
        self.related_ctl.open_suggestions(self.state)

    def action_edit_card(self) -> None:
        self.screens.edit_card()

    def action_show_warnings(self) -> None:
        self.screens.warnings()

    def action_reload(self) -> None:
        self.main.show_status(Text("reloading vault…", style=self.palette.muted))
        self._reload("key")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = self.jobs_ctl.allows(action)
        return allowed if allowed is not True else super().check_action(action, parameters)

    def action_build_index(self) -> None:
        self.autobuild.resumed()
        self.jobs_ctl.build(self.state, self.palette, self.keys)

    def action_toggle_auto_build(self) -> None:
        self.autobuild.toggle()
        self._paint_status()

    def action_verify_index(self) -> None:
        self.jobs_ctl.verify(self.state, self.keys)

    def action_cancel_jobs(self) -> None:
        self.jobs_ctl.cancel()

    def action_toggle_jobs(self) -> None:
        self.main.query_one("#jobs", JobsPanel).toggle()

    def on_job_update(self, message: messages.JobUpdate) -> None:
        self.jobs_ctl.show_event(message.event)

    def action_engine_sync(self, kind: str = "sync") -> None:
        """The job "engine: sync + build" (``kind`` verify: "engine: verify")."""
        self.engine.start_job(kind, self.state.session, self.vault_path, self.jobs_ctl,
                              lambda: (self.state.session, self.queries.generation, self.text))

    def action_engine_verify(self) -> None:
        self.action_engine_sync("verify")

    def action_toggle_engine(self) -> None:
        self.engine.toggle(self.state.session, self.queries.generation, self.text)
        self._paint_status()

    @on(messages.EngineAnswered)
    @on(messages.EngineUnavailable)
    @on(messages.EngineChecked)
    def _engine_message(self, message: messages.EngineMessage) -> None:
        if self.is_running:  # else shutting down: the row is already being pruned
            self.engine.receive(message)

    # ------------------------------------------------------------- painting

    def on_status_changed(self) -> None:
        if self.is_running and self.state.session is not None:
            self._paint_status()

    def paint(self, cards: bool = False, columns: bool = True,
              detail_later: bool = False) -> None:
        if cards:
            self._paint_status()
        self.main.paint(self.state, self.palette, self.keys, cards=cards, columns=columns,
                        detail_later=detail_later)

    def on_detail_painted(self, _message: messages.DetailPainted) -> None:
        self.call_after_refresh(self.marks.ready, "card-painted")

    def _paint_status(self) -> None:
        text = views.status_line(self.state, self.palette, self.keys, self.clock())
        text = self.jobs_ctl.with_status(text, self.palette,  # auto-build, running jobs
                                         self.autobuild.status(self.palette))
        if self.engine.state.active:  # a second line: the engine's stale / missing counts
            from hqltui.ui import engine_views

            header = engine_views.header(self.engine.state, self.palette, self.keys)
            text = Text.assemble(text, "\n", header, no_wrap=True, overflow="ellipsis")
        self.main.show_status(text)


def main(vault: str) -> int:
    from producer.vaultpath import vault_problem

    if problem := vault_problem(vault):  # the string: Path("") is the current directory
        print(f"hql-tui: {shown(problem)}", file=sys.stderr)
        return 1
    return int(HqlApp(Path(vault)).run() or 0)
