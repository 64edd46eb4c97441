"""`hql-tui VAULT`: three rankings of one query side by side.

The app owns the state — the session, the newest answer shown, the lexical arm,
the selected card — and hands widgets what to display. All reading, scoring
and embedding happens in ``hqltui.core``, in thread workers:

* ``session`` group: load or reload the vault and its index (start-up paints
  "loading vault…" first; the core, numpy and the index are imported there);
* ``query`` group: one exclusive worker per keystroke burst (debounced). Each
  request carries a generation number, and an answer is shown only when it is
  newer than the one on screen, so a slow old answer never replaces a new one;
* ``watch`` group: a cheap stat of the vault's files every few seconds, which
  reloads the session when something changed.

* ``jobs`` group: index build / verify (and other jobs) in thread workers that
  are never exclusive, so a query never cancels them (``hqltui.ui.jobs``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.worker import Worker, WorkerState, get_current_worker

from hqltui.core import oneline
from hqltui.ui import render
from hqltui.ui.commands import HqlCommands
from hqltui.ui.jobs import JOB_BINDINGS, JobsMixin
from hqltui.ui.palette import Palette
from hqltui.ui.screens.card import CardScreen
from hqltui.ui.screens.confirm import ConfirmScreen
from hqltui.ui.screens.help import HelpScreen
from hqltui.ui.screens.main import SLOTS, MainScreen
from hqltui.ui.screens.warnings import WarningsScreen
from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.engine import EngineRow
from hqltui.ui.widgets.panes import CardDetail, StatusLine, WarningsStrip
from hqltui.ui.widgets.query import QueryInput
from hqltui.ui.widgets.ranking import RankingColumn, Row
from producer.config import LEXICAL_ARMS
from producer.terminal import shown, shown_body

READY_ENV = "HQL_TUI_READY_FILE"
# How often a session-load worker checks whether the app is quitting.
LOAD_POLL_SECONDS = 0.05
# The key that builds the index (the jobs panel).
BUILD_HINT = "press F7"
# The strip lists what blocks or skews a ranking first.
WARNING_ORDER = {"error": 0, "arm": 1, "config": 1, "stale": 2, "absent": 3, "orphan": 4,
                 "embedder": 5, "loader": 6, "link": 7}

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


# ------------------------------------------------------------------------ messages


class SessionLoaded(Message):
    def __init__(self, session: Any, reason: str) -> None:
        super().__init__()
        self.session = session
        self.reason = reason


class SessionFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class AnswerReady(Message):
    """An answer for query ``generation``; ``partial`` while the model still loads."""

    def __init__(
        self, generation: int, text: str, arm: str, answer: Any, partial: bool = False
    ) -> None:
        super().__init__()
        self.generation = generation
        self.text = text
        self.arm = arm
        self.answer = answer
        self.partial = partial


class PartialAnswer:
    """Lexical only, while the semantic arm waits for a live query vector."""

    def __init__(self, query: str, lexical: Any) -> None:
        self.query = query
        self.lexical = lexical
        self.semantic = None
        self.hybrid = None


class VaultChanged(Message):
    pass


# ----------------------------------------------------------------------------- app


class HqlApp(JobsMixin, App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "hql-tui"
    COMMANDS = App.COMMANDS | {HqlCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "quit", priority=True, id="app.quit"),
        Binding("f1", "help", "help", id="app.help"),
        Binding("question_mark", "help", "help", show=False, id="app.help-key"),
        Binding(
            "f2", "toggle_lexical", "lexical", tooltip="switch bm25 / hashbag", id="app.lexical"
        ),
        Binding("f3", "open_card", "open", tooltip="open card", id="app.open-card"),
        Binding("f4", "edit_card", "edit", id="app.edit-card"),
        Binding("f5", "reload", "reload", id="app.reload"),
        Binding("f6", "show_warnings", "warnings", id="app.warnings"),
        *JOB_BINDINGS,  # f7 build, f8 verify, f10 jobs panel, ctrl+g cancel
        Binding("f9", "toggle_engine", "engine", id="app.engine-view"),
        Binding("f11", "engine_sync", "engine sync", show=False, id="app.engine-sync"),
        Binding("f12", "engine_verify", "engine verify", show=False, id="app.engine-verify"),
    ]

    lexical: reactive[str] = reactive("bm25", init=False)

    def __init__(
        self,
        vault: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        session_factory: Callable[[Path], Any] | None = None,
        history_file: Path | None = None,
        poll_interval: float | None = 2.0,
        debounce: float = 0.05,
        cursor_blink: bool = True,
        ready_file: str | None = None,
    ) -> None:
        super().__init__()
        self.vault_path = Path(vault)
        self.clock: Clock = clock or _utc_now
        self._session_factory = session_factory
        self._history_file = history_file
        self.poll_interval = poll_interval
        self.debounce = debounce
        self.cursor_blink = cursor_blink
        self.ready_file = ready_file if ready_file is not None else os.environ.get(READY_ENV)
        self.session: Any = None
        self.load_error: str | None = None
        self.loading = "vault"
        self.text = ""
        self.generation = 0
        self.shown_generation = 0
        self.shown_partial = False
        self.live_checked = False
        self.summary: Any = None
        self.answers_shown = 0
        self.painted: tuple[int, float] = (0, 0.0)
        self.answer: Any = None
        self.answer_text = ""
        self.answer_arm: str | None = None  # the lexical arm the answer on screen used
        self.selected: str | None = None
        self.pinned = False  # the user chose ``selected`` since the query was last edited
        self.statuses: dict[str, str] = {}
        self.palette = Palette()
        self.history: Any = None
        self._debounce_timer: Any = None
        self._signature: Any = None
        self._arm_initialised = False

    # ------------------------------------------------------------------ start-up


    def notify(self, message: str, *, markup: bool = False, **kwargs: Any) -> None:
        """Plain text by default: messages quote `[semantics]`, engine errors and paths,
        which Textual markup would silently eat; control characters shown as ``\\xNN``."""
        if "title" in kwargs:
            kwargs["title"] = shown(kwargs["title"])
        super().notify(shown(message), markup=markup, **kwargs)

    @property
    def shown_arm(self) -> str:
        """The lexical arm behind the columns on screen: labels follow the numbers shown,
        not a switch whose answer has not arrived yet."""
        return self.answer_arm if self.answer is not None and self.answer_arm else self.lexical

    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    def on_mount(self) -> None:
        self.palette = Palette.from_variables(self.get_css_variables())
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def main_screen_mounted(self) -> None:
        """Called by the main screen once its widgets exist: paint, then load."""
        self.query_one(QueryInput).cursor_blink = self.cursor_blink
        self.query_one("#card-filter").cursor_blink = self.cursor_blink  # type: ignore[attr-defined]
        self._show_loading()
        self.call_after_refresh(self._mark_ready, "first-paint")
        self._load_session("start")
        if self.poll_interval:
            self.set_interval(self.poll_interval, self._poll)

    def _theme_changed(self, _theme: Any) -> None:
        self.palette = Palette.from_variables(self.get_css_variables())
        self.main.query_one(CardList).palette = self.palette
        self._refresh_all()

    def _mark_ready(self, event: str) -> None:
        if not self.ready_file:
            return
        torch = "torch" in sys.modules or "transformers" in sys.modules
        line = f"{event} {time.time():.6f} torch={int(torch)}\n"
        try:
            with open(self.ready_file, "a", encoding="utf-8") as fh:
                fh.write(line)
        except OSError:
            pass

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # ------------------------------------------------------------------- session

    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _load_session(self, reason: str) -> None:
        try:
            session = self._read_session()
            if session is None:
                return  # quitting, or a newer load replaced this one
            history = self.history
            if history is None:
                from hqltui.core.history import History

                history = History(self._history_file)
                history.load()
                self.history = history
        except (OSError, ValueError) as exc:
            self.post_message(SessionFailed(str(exc)))
            return
        self.post_message(SessionLoaded(session, reason))

    def _read_session(self) -> Any:
        """Load the session in a daemon thread, and give up waiting for it once this
        worker is cancelled: a quit must not wait for a long load (the pool thread
        of a worker is joined at exit; a daemon thread is not)."""
        worker = get_current_worker()
        box: dict[str, Any] = {}
        done = threading.Event()

        def load() -> None:
            try:
                if self._session_factory is not None:
                    box["session"] = self._session_factory(self.vault_path)
                else:
                    from hqltui.core.session import Session

                    box["session"] = Session.load(self.vault_path, clock=self.clock)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the worker below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=load, name="session-load", daemon=True).start()
        while not done.wait(LOAD_POLL_SECONDS):
            if worker.is_cancelled:
                return None
        if "error" in box:
            raise box["error"]
        return box["session"]

    @on(SessionLoaded)
    def _session_loaded(self, message: SessionLoaded) -> None:
        if not self.is_running:
            return  # shutting down: the screen's widgets are already being pruned
        first = self.session is None
        self.session = message.session
        self.load_error = None
        self.loading = ""
        if not self._arm_initialised:
            self._arm_initialised = True
            self.set_reactive(HqlApp.lexical, self._default_arm())
        if first and self.history is not None:
            self.main.query_one(QueryInput).set_history(self.history.entries)
        self.summary = self.session.index_summary()
        self.statuses = {name: self._card_status(name) for name in self._card_names()}
        self._signature = None
        self._watch_baseline()
        self.main.query_one(CardList).palette = self.palette
        self._show_cards()
        self._show_status()
        self.main.query_one(EngineRow).check()
        self._show_warnings()
        if message.reason != "start":
            self.notify("vault reloaded", timeout=2)
        if self.text.strip():
            self._start_query()
        else:
            self._show_empty()
        self._show_detail()
        self.call_after_refresh(self._mark_ready, "vault-loaded")

    @on(SessionFailed)
    def _session_failed(self, message: SessionFailed) -> None:
        if not self.is_running:
            return  # shutting down: the screen's widgets are already being pruned
        self.loading = ""
        self.load_error = message.message
        self.session = None  # never rank, build or verify against a vault that is gone
        self.main.query_one(StatusLine).update(
            Text(f"{shown(self.vault_path)} · cannot be opened: {shown(message.message)}",
                 style=self.palette.error)
        )
        for column in self.main.columns:
            column.show_message(Text(shown(message.message), style=self.palette.error),
                                "refusal")
        self._show_warnings()
        self.call_after_refresh(self._mark_ready, "vault-failed")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One funnel for unexpected errors: shown, never a traceback."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        if event.worker.group == "session":
            self.post_message(SessionFailed(f"{type(error).__name__}: {error}"))
        elif event.worker.group == "watch":
            return
        else:
            self.notify(f"{type(error).__name__}: {error}", title=event.worker.name,
                        severity="error", timeout=8)

    # --------------------------------------------------------------- file watch

    def _watch_extra(self) -> list[str]:
        index = self._index_file()
        return [index] if index else []

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _watch_baseline(self) -> None:
        from hqltui.core.watch import signature

        self._signature = signature(self.vault_path, self._watch_extra())

    def _poll(self) -> None:
        if self.session is None or self._signature is None:
            return
        self._check_changes()

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _check_changes(self) -> None:
        from hqltui.core.watch import signature

        before = self._signature
        now = signature(self.vault_path, self._watch_extra())
        if before is not None and now != before and not get_current_worker().is_cancelled:
            self._signature = now
            self.post_message(VaultChanged())

    @on(VaultChanged)
    def _vault_changed(self) -> None:
        self._load_session("changed")

    def action_reload(self) -> None:
        self.main.query_one(StatusLine).update(Text("reloading vault…", style=self.palette.muted))
        self._load_session("key")

    # --------------------------------------------------------------------- query

    @on(QueryInput.Changed, "#query")
    def _query_changed(self, event: QueryInput.Changed) -> None:
        self.text = event.value
        self.pinned = False
        if self._debounce_timer is not None:
            self._debounce_timer.stop()
        self._debounce_timer = self.set_timer(self.debounce, self._start_query)

    @on(QueryInput.Submitted, "#query")
    def _query_submitted(self, event: QueryInput.Submitted) -> None:
        text = event.value.strip()
        if self._debounce_timer is not None:
            self._debounce_timer.stop()
        self.text = event.value
        self._start_query(submitted=True)
        if text and self.history is not None:
            self.history.add(text)
            self.main.query_one(QueryInput).remember(text)
        self.main.action_focus_column("hybrid")

    def _start_query(self, submitted: bool = False) -> None:
        self._debounce_timer = None
        if self.session is None:
            return
        self.generation += 1
        generation, text, arm = self.generation, self.text, self.lexical
        self.main.query_one(EngineRow).start_query(generation, text, submitted)
        if not text.strip():
            self._show_answer(generation, text, arm, None)
            return
        self._run_query(self.session, generation, text, arm, submitted)

    def _run_query(self, session: Any, generation: int, text: str, arm: str,
                   submitted: bool) -> None:
        self.run_worker(
            partial(self._answer, session, generation, text, arm, submitted),
            name=f"query {generation}",
            description=f"query {generation}",  # never repr() the session: it is large
            group="query",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def _answer(self, session: Any, generation: int, text: str, arm: str,
                submitted: bool) -> None:
        """Runs in a thread. The first query the index does not hold may load a model:
        the lexical column is shown first, the semantic one says so until it is ready."""
        if self._may_load_model(session, text):
            lexical = session.rank(text, arm)
            self.post_message(
                AnswerReady(generation, text, arm, PartialAnswer(text, lexical), partial=True)
            )
        answer = session.query(text, lexical=arm, live=submitted)
        self.post_message(AnswerReady(generation, text, arm, answer))

    def _may_load_model(self, session: Any, text: str) -> bool:
        if self.live_checked:
            return False
        return bool(session.needs_live_vector(text))

    @on(AnswerReady)
    def _answer_ready(self, message: AnswerReady) -> None:
        if not self.is_running:
            return  # shutting down: the screen's widgets are already being pruned
        answer = message.answer
        if not message.partial:
            source = _vector_source(answer)
            if source is not None and source.startswith("live:"):
                self.live_checked = True
            elif answer.semantic is not None and not answer.semantic.ok:
                self.live_checked = True
        self._show_answer(
            message.generation, message.text, message.arm, answer, partial=message.partial
        )

    def _show_answer(
        self, generation: int, text: str, arm: str, answer: Any, partial: bool = False
    ) -> None:
        """Show an answer unless the screen already holds a newer one (or this one, complete)."""
        newer = generation > self.shown_generation
        completes = generation == self.shown_generation and self.shown_partial and not partial
        if not (newer or completes):
            return  # an older answer than the one on screen: never shown
        self.shown_generation = generation
        self.shown_partial = partial
        self.answer = answer
        self.answer_text = text
        self.answer_arm = arm
        if answer is None:
            self._show_empty()
        else:
            self._pick_selection()
            self._show_columns()
        self._show_warnings()
        self._show_detail()
        if not partial:
            self.answers_shown += 1
            self.call_after_refresh(self._answer_painted, self.answers_shown)

    def _answer_painted(self, count: int) -> None:
        """Instrumentation for the keystroke benchmark: when an answer reached the screen."""
        self.painted = (count, time.perf_counter())
        self._mark_ready("answer-painted")  # the same, for a benchmark driving a real terminal

    # ------------------------------------------------------------------ choices

    def watch_lexical(self, arm: str) -> None:
        self._show_column_titles()
        if self.session is not None and self.text.strip():
            self._start_query()

    def action_toggle_lexical(self) -> None:
        self.lexical = "hashbag" if self.lexical == "bm25" else "bm25"

    def action_set_lexical(self, arm: str) -> None:
        if arm in LEXICAL_ARMS:
            self.lexical = arm

    @on(RankingColumn.Selected)
    def _column_selected(self, message: RankingColumn.Selected) -> None:
        self._select(message.name, source=message.slot)

    @on(CardList.Selected)
    def _card_selected(self, message: CardList.Selected) -> None:
        self._select(message.name, source="cards")

    @on(RankingColumn.Opened)
    @on(CardList.Opened)
    def _card_opened(self, message: RankingColumn.Opened | CardList.Opened) -> None:
        self._select(message.name, source="")
        self.action_open_card()

    def _select(self, name: str, source: str) -> None:
        self.pinned = True
        if name == self.selected:
            return
        self.selected = name
        main = self.main
        for column in main.columns:
            if column.slot != source:
                column.select(name)
        if source != "cards":
            main.query_one(CardList).select(name)
        main.query_one(EngineRow).select(name)
        self._show_detail()

    def _pick_selection(self) -> None:
        """Keep a card the user chose while any column ranks it; else the best hybrid hit."""
        rankings = self._rankings()
        ranked = [r.names() for r in rankings.values() if r is not None and r.ok]
        if self.pinned and any(self.selected in names for names in ranked):
            return
        for slot in ("hybrid", "semantic", "lexical"):
            ranking = rankings.get(slot)
            if ranking is not None and ranking.ok and ranking.hits:
                self.selected = ranking.hits[0].card
                return

    # ------------------------------------------------------------------ actions

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        groups = [("app (everywhere)", [b for b in self.BINDINGS if b not in JOB_BINDINGS])]
        groups.append(("jobs (everywhere)", list(JOB_BINDINGS)))
        groups.append(("main screen", list(MainScreen.BINDINGS)))
        groups.append(("query input", list(QueryInput.BINDINGS)))
        groups.append(("columns", list(RankingColumn.BINDINGS)))
        groups.append(("card list", list(CardList.BINDINGS)))
        groups.append(("card screen", list(CardScreen.BINDINGS)))
        groups.append(("help", list(HelpScreen.BINDINGS)))
        groups.append(("confirmation", list(ConfirmScreen.BINDINGS)))
        notes = [
            "",
            "ctrl+p opens the command palette (lexical: bm25 | hashbag, view: …, vault: reload).",
            "Jobs: index: build / verify, jobs: cancel, view: jobs in the palette too; a build",
            "runs hql-semantics in the background and reloads the vault when it succeeds.",
            "Keys with ctrl or F work while typing; esc leaves the query so single letters work.",
            "Enter on a column or card row opens the card; tab moves between panes.",
            "Badges: LS ranked by both arms · L· lexical only · ·S semantic only ·",
            "! stale (text changed since the index was built) · × missing (no index row).",
            "Engine columns (F9): ▲n / ▼n the engine ranks the card n places higher / lower",
            "than the local column, = the same, new: not in the local column; ! engine-stale.",
        ]
        self.push_screen(HelpScreen(groups, notes))

    def action_open_card(self) -> None:
        name = self.selected
        card = self._card(name) if name else None
        if card is None:
            self.notify("select a card first", severity="warning", timeout=2)
            return
        header = Text.assemble((shown(card.title), "bold"), "  ",
                               (f"{shown(card.name)} · {shown(card.path)}", self.palette.muted))
        self.push_screen(CardScreen(card.name, header, self._detail(card.name, full=True)))

    def action_edit_card(self) -> None:
        name = self.selected
        card = self._card(name) if name else None
        if card is None:
            self.notify("select a card first", severity="warning", timeout=2)
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        path = self.vault_path / card.path
        try:
            with self.suspend():
                subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (OSError, ValueError) as exc:
            self.notify(f"cannot run {editor}: {exc}", severity="error", timeout=6)
            return
        except Exception as exc:  # suspend is unsupported in some drivers (tests, web)
            self.notify(f"cannot suspend to run {editor}: {exc}", severity="error", timeout=6)
            return
        self._check_changes()

    def action_show_warnings(self) -> None:
        self.push_screen(WarningsScreen(self._warnings_text(one_line=False)))

    # ------------------------------------------------------------- session view

    def _default_arm(self) -> str:
        search = getattr(self.session, "search", None)
        arm = getattr(search, "lexical", "bm25")
        return arm if arm in LEXICAL_ARMS else "bm25"

    def _card_names(self) -> list[str]:
        return [card.name for card in self.session.vault.cards]

    def _card(self, name: str | None) -> Any:
        if self.session is None or name is None:
            return None
        return self.session.vault.by_name.get(name)

    def _card_status(self, name: str) -> str:
        if self.summary is None or self.summary.state != "ok":
            return ""
        return self.session.card_status(name) or ""

    def _index_file(self) -> str | None:
        config = getattr(self.session, "config", None)
        path = getattr(config, "index_path", None)
        return str(path) if path else None

    def _rankings(self) -> dict[str, Any]:
        answer = self.answer
        if answer is None:
            return {}
        return {"lexical": answer.lexical, "semantic": answer.semantic, "hybrid": answer.hybrid}

    # ----------------------------------------------------------------- painting

    def _refresh_all(self) -> None:
        if self.session is None:
            return
        self._show_cards()
        self._show_status()
        if self.answer is None:
            self._show_empty()
        else:
            self._show_columns()
        self._show_warnings()
        self._show_detail()

    def _show_loading(self) -> None:
        main = self.main
        main.query_one(StatusLine).update(
            Text(f"{shown(self.vault_path)} · loading vault…", style=self.palette.muted)
        )
        for column in main.columns:
            column.show_message(Text("loading vault…", style=self.palette.muted), "busy")
        main.query_one(WarningsStrip).show(Text("loading…", style=self.palette.muted))
        self._show_column_titles()

    def _show_status(self) -> None:
        text = self.with_jobs_status(self._status_text())  # running jobs, a failed index job
        engine = self.main.query_one(EngineRow)
        if engine.active:  # a second header line: the engine's stale / missing / orphan counts
            text = Text.assemble(text, "\n", engine.header(), no_wrap=True, overflow="ellipsis")
        self.main.query_one(StatusLine).update(text)

    def engine_status_changed(self) -> None:
        if self.session is not None:
            self._show_status()

    def action_engine_sync(self) -> None:
        """F11: the job "engine: sync + build" (hqltui.ui.engine_jobs)."""
        from hqltui.ui import engine_jobs

        engine_jobs.start(self, "sync")

    def action_engine_verify(self) -> None:
        """F12: the job "engine: verify"."""
        from hqltui.ui import engine_jobs

        engine_jobs.start(self, "verify")

    def action_toggle_engine(self) -> None:
        """F9: the engine row of columns below the local one (and its header line)."""
        self.main.query_one(EngineRow).toggle()
        self.engine_status_changed()

    def session_missing(self) -> str:
        """Why there is no session to act on."""
        if self.load_error:
            return f"the vault cannot be opened: {self.load_error}"
        return "the vault is still loading"

    def _status_text(self) -> Text:
        p = self.palette
        session = self.session
        if session is None:
            return Text(f"{shown(self.vault_path)} · cannot be opened: {shown(self.load_error)}",
                        style=p.error)
        vault = session.vault
        name = shown(self.vault_path.name or str(self.vault_path))
        out = Text.assemble((name, "bold"), " · ", render.plural(len(vault.cards), "card"))
        summary = self.summary
        out.append(" · ")
        config_errors = getattr(session.config, "errors", {})
        if summary is None or summary.state != "ok":
            if "semantics" in config_errors:
                out.append("index unusable", style=p.error)
                out.append(" — hql.toml is refused, see warnings", style=p.muted)
            elif summary is not None and summary.state == "refused":
                out.append("index unusable", style=p.error)
                out.append(" — see warnings", style=p.muted)
            else:
                out.append("no index", style=p.warning)
                out.append(f" — build one: {BUILD_HINT}", style=p.muted)
            return out
        counts = [
            ("fresh", summary.fresh, p.success),
            ("stale", summary.stale, p.warning),
            ("missing", summary.missing, p.error),
            ("orphan", summary.orphan, p.warning),
        ]
        out.append("index ")
        for i, (label, count, style) in enumerate(counts):
            if i:
                out.append(" ")
            out.append(f"{count} {label}", style=style if count and label != "fresh" else "")
        out.append(" · ")
        out.append(shown(render.short_model(summary.model)), style=p.primary)
        out.append(f" {shown(render.short_revision(summary.revision))}")
        out.append(f" · built {render.age(_parse_time(summary.built_at), self.clock())} ago")
        return out

    def _show_cards(self) -> None:
        rows = [(name, self.statuses.get(name, "")) for name in self._card_names()]
        self.main.query_one(CardList).set_cards(rows, self.selected)

    def _show_column_titles(self) -> None:
        main = self.main
        p = self.palette
        main.column("lexical").set_title(
            Text.assemble(("lexical", "bold"), " · ", (self.shown_arm, p.accent),
                          (" · fused · F2 switches", p.muted))
        )
        main.column("semantic").set_title(Text("semantic", style="bold"))
        main.column("hybrid").set_title(
            Text.assemble(("hybrid", "bold"), (f" · rrf of {self.shown_arm} + semantic", p.muted))
        )

    def _show_empty(self) -> None:
        for column in self.main.columns:
            column.show_message(
                Text("type a query to rank the cards", style=self.palette.muted), "empty"
            )
        self._show_column_titles()

    def _show_columns(self) -> None:
        rankings = self._rankings()
        main = self.main
        lexical, semantic, hybrid = (rankings[s] for s in SLOTS)
        in_lex = set(lexical.names()) if lexical.ok else set()
        in_sem = set(semantic.names()) if semantic is not None and semantic.ok else set()
        if hybrid is not None and hybrid.ok:
            for hit in hybrid.hits:
                arms = hit.arms or {}
                if arms.get(self.shown_arm) is not None:
                    in_lex.add(hit.card)
                if arms.get("semantic") is not None:
                    in_sem.add(hit.card)
        empty = {"lexical": "no lexical match", "semantic": "no semantic match",
                 "hybrid": "no match in either arm"}
        for slot, ranking in zip(SLOTS, (lexical, semantic, hybrid), strict=True):
            column = main.column(slot)
            if ranking is None:
                wait = ("loading the model for a live query vector…" if slot == "semantic"
                        else "waiting for the semantic arm…")
                column.show_message(Text(wait, style=self.palette.muted), "busy")
            elif not ranking.ok:
                column.show_message(self._refusal_text(ranking.refusal), "refusal")
            elif not ranking.hits:
                column.show_message(Text(empty[slot], style=self.palette.warning), "none")
            else:
                rows = [
                    Row(hit.rank, hit.card, render.score(hit.score),
                        self._badges(hit.card, in_lex, in_sem))
                    for hit in ranking.hits
                ]
                column.show_rows(rows, self.selected)
        self._show_column_titles()
        main.query_one(CardList).select(self.selected)

    def _badges(self, name: str, in_lex: set[str], in_sem: set[str]) -> Text:
        p = self.palette
        out = Text()
        if name in in_lex and name in in_sem:
            out.append("LS", style=p.success)
        elif name in in_lex:
            out.append("L·", style=p.muted)
        elif name in in_sem:
            out.append("·S", style=p.muted)
        else:
            out.append("  ")
        status = self.statuses.get(name, "")
        if status == "stale":
            out.append(" !", style=p.warning)
        elif status == "missing":
            out.append(" ×", style=p.error)
        return out

    def _refusal_text(self, refusal: Any) -> Text:
        p = self.palette
        out = Text()
        out.append("refused\n", style=p.error)
        out.append(shown(refusal.message))
        if refusal.fix == "live":
            out.append("\n\nfix: ", style="bold")
            out.append("press Enter in the query to embed it with the http embedder",
                       style=p.accent)
        elif refusal.fix:
            out.append("\n\nfix: ", style="bold")
            out.append(shown(refusal.fix), style=p.accent)
        return out

    # ---------------------------------------------------------------- warnings

    def _all_warnings(self) -> list[tuple[str, str]]:
        """(kind, message) from the session, then from the answer on screen, without repeats."""
        found: list[tuple[str, str]] = []
        if self.load_error:
            found.append(("error", self.load_error))
        session_warnings = list(getattr(self.session, "warnings", ()) or ())
        answer_warnings: list[Any] = []
        for ranking in self._rankings().values():
            if ranking is not None:
                answer_warnings.extend(ranking.warnings)
        seen: set[str] = set()
        for warning in [*session_warnings, *answer_warnings]:
            kind = getattr(warning, "kind", "warning")
            message = getattr(warning, "message", str(warning))
            if message not in seen:
                seen.add(message)
                found.append((kind, message))
        return found

    def _warnings_text(self, one_line: bool) -> Text:
        """Every warning, most severe first; ``one_line`` cuts each to the strip's width."""
        p = self.palette
        found = sorted(self._all_warnings(), key=lambda w: WARNING_ORDER.get(w[0], 9))
        out = Text(no_wrap=one_line, overflow="ellipsis" if one_line else "fold")
        if not found:
            out.append("none", style=p.muted)
            return out
        for i, (kind, message) in enumerate(found):
            style = p.error if kind in ("error", "arm", "config") else p.warning
            if i:
                out.append("\n")
            out.append(f"{kind}: ", style=style)
            out.append(shown(oneline.one_line(message) if one_line else message))
        return out

    def _show_warnings(self) -> None:
        strip = self.main.query_one(WarningsStrip)
        count = len(self._all_warnings()) if self.session is not None or self.load_error else 0
        strip.border_title = f"warnings ({count}) · F6 shows them in full" if count else "warnings"
        strip.show(self._warnings_text(one_line=True))

    # ------------------------------------------------------------------ detail

    def _show_detail(self) -> None:
        pane = self.main.query_one(CardDetail)
        if self.session is None:
            pane.show(Text(""))
            return
        if self.selected is None or self._card(self.selected) is None:
            hint = "select a card in a column or in the card list"
            pane.show(Text(hint, style=self.palette.muted))
            return
        pane.show(self._detail(self.selected, full=False))

    def _detail(self, name: str, full: bool) -> RenderableType:
        p = self.palette
        session = self.session
        card = self._card(name)
        vault = session.vault
        head = Text()
        if not full:
            head.append(shown(card.title), style="bold")
            head.append(f"  {shown(card.name)} · {shown(card.path)}", style=p.muted)
            head.append("\n")
        status = self.statuses.get(name, "")
        head.append("index: ", style="bold")
        if not status and self.summary is not None and self.summary.state == "refused":
            head.append("index unusable (see warnings)", style=p.error)  # a file is there
        else:
            head.append(status or "no index", style={"stale": p.warning, "missing": p.error}.get(
                status, p.muted))
        # Ranks in every column.
        rankings = self._rankings()
        head.append("\nranks: ", style="bold")
        if not rankings:
            head.append("no query", style=p.muted)
        for i, slot in enumerate(SLOTS):
            ranking = rankings.get(slot)
            if ranking is None:
                continue
            label = self.shown_arm if slot == "lexical" else slot
            if i:
                head.append("  │  ", style=p.muted)
            head.append(f"{label} ", style=p.accent)
            if not ranking.ok:
                head.append("refused", style=p.error)
                continue
            hit = ranking.hit(name)
            if hit is None:
                head.append("—", style=p.muted)
            else:
                head.append(f"#{hit.rank} {render.score(hit.score)}")
        hybrid = rankings.get("hybrid")
        hit = hybrid.hit(name) if hybrid is not None and hybrid.ok else None
        if hit is not None and hit.arms:
            parts = []
            for arm, arm_score in hit.arms.items():
                where = ("—" if arm_score is None
                         else f"#{arm_score.rank} {render.score(arm_score.score)}")
                parts.append(f"{arm} {where}")
            head.append(f"\n       fused from {', '.join(parts)}", style=p.muted)
        # Provenance.
        if rankings:
            head.append("\nprovenance:", style="bold")
            for slot in SLOTS:
                ranking = rankings.get(slot)
                if ranking is not None and ranking.retrieval is not None:
                    head.append("\n  ")
                    head.append_text(self._provenance(ranking.retrieval))
        # Links.
        outgoing = [link.target for link in card.links]
        resolved = [t for t in outgoing if t in vault.by_name]
        unresolved = [t for t in outgoing if t not in vault.by_name]
        backlinks = vault.backlinks(name)
        head.append("\nlinks → ", style="bold")
        head.append(shown(", ".join(dict.fromkeys(resolved))) or "—")
        head.append("\nbacklinks ← ", style="bold")
        head.append(shown(", ".join(backlinks)) or "—")
        if unresolved:
            head.append("\nunresolved: ", style=p.warning)
            head.append(
                shown(", ".join(dict.fromkeys(oneline.link_target(t) for t in unresolved)))
            )
        terms = render.query_terms(self.answer_text) if self.answer is not None else set()
        body = render.body_text(shown_body(card.body), terms, mark=p.mark, heading=p.heading)
        return Group(head, Text("─" * 40, style=p.muted), body)

    def _provenance(self, retrieval: Any) -> Text:
        p = self.palette
        out = Text()
        out.append(f"{retrieval.arm}: ", style=p.accent)
        if retrieval.fusion:
            weights = ", ".join(f"{k} {v:g}" for k, v in (retrieval.weights or {}).items())
            windows = ", ".join(f"{k} {v}" for k, v in (retrieval.windows or {}).items())
            out.append(f"{retrieval.fusion} k={retrieval.k:g} · weights {weights} · "
                       f"windows {windows}")
            return out
        out.append(shown(render.short_model(retrieval.model)))
        out.append(f" {shown(render.short_revision(retrieval.revision))}")
        out.append(f" · {retrieval.metric}")
        out.append(" · approximate" if retrieval.approximate else " · exact")
        if retrieval.query_vector_source and retrieval.arm == "semantic":
            out.append(f" · query vector: {retrieval.query_vector_source}")
        return out


def _vector_source(answer: Any) -> str | None:
    semantic = getattr(answer, "semantic", None)
    retrieval = getattr(semantic, "retrieval", None)
    return getattr(retrieval, "query_vector_source", None)


def _parse_time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def main(vault: str) -> int:
    from producer.vault import vault_problem

    path = Path(vault)
    problem = vault_problem(path)
    if problem:
        print(f"hql-tui: {shown(problem)}", file=sys.stderr)
        return 1
    app = HqlApp(path)
    result = app.run()
    return int(result or 0)
