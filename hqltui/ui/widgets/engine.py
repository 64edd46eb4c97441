"""The engine row: engine BM25, engine vector and engine hybrid, below the local row.

Hidden until the user turns it on (F9; F11 runs sync + build, F12 verify). The
row runs its own workers, apart from the local query worker, so a slow engine
never holds up local re-ranking:

* ``engine-query``: one exclusive worker per query the app starts (the app's own
  debounce applies); each carries the app's generation number and an answer is
  shown only when it is newer than the one on screen;
* ``engine-check``: an engine verify (rows and indexes against the vault) whose
  stale / missing / orphan counts go in the header; run when the row is turned
  on, when the vault reloads and after an engine job.

Each engine column shows, per card, its rank difference with the matching local
column (bm25, semantic, hybrid of bm25 + semantic): ``=``, ``▲n`` (the engine
puts it n places higher), ``▼n``, ``new`` (not in the local column). A refusal
(no ``[engine]``, a variable unset) or an engine failure is one line in place of
the three columns. ``hotdata`` and ``pyarrow`` are imported in the workers only.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static

from hqltui.ui import render
from hqltui.ui.widgets.ranking import RankingColumn, Row
from producer.terminal import shown

ENGINE_SLOTS = ("engine-bm25", "engine-semantic", "engine-hybrid")
ENGINE_ARMS = {"engine-bm25": "bm25", "engine-semantic": "semantic", "engine-hybrid": "hybrid"}
# The local ranking each engine column is compared with (the engine has BM25 only).
REFERENCE = {"engine-bm25": "lexical", "engine-semantic": "semantic", "engine-hybrid": "hybrid"}
EMPTY = {"engine-bm25": "no engine bm25 match", "engine-semantic": "no engine vector match",
         "engine-hybrid": "no match in either engine arm"}


def rank_delta(local_rank: int | None, engine_rank: int) -> str:
    """How the engine moved a card against the local column: ``=``, ``▲2``, ``▼1``, ``new``.

    ``▲n``: the engine ranks the card n places higher (nearer the top) than the local
    column; ``new``: the local column does not show the card at all.
    """
    if local_rank is None:
        return "new"
    if local_rank == engine_rank:
        return "="
    if local_rank > engine_rank:
        return f"▲{local_rank - engine_rank}"
    return f"▼{engine_rank - local_rank}"


# --------------------------------------------------------------------- messages


class EngineAnswered(Message):
    """The engine's answer for query ``generation``, with the local bm25 answer it is
    compared with."""

    def __init__(self, generation: int, text: str, answer: Any, reference: Any) -> None:
        super().__init__()
        self.generation = generation
        self.text = text
        self.answer = answer
        self.reference = reference


class EngineUnavailable(Message):
    """The engine cannot answer: ``refusal`` (nothing sent) or ``failure`` (its message)."""

    def __init__(self, generation: int, kind: str, message: str, fix: str | None) -> None:
        super().__init__()
        self.generation = generation
        self.kind = kind
        self.message = message
        self.fix = fix


class EngineChecked(Message):
    """An engine verify finished: its report, or the line saying why there is none."""

    def __init__(self, report: Any, kind: str = "", message: str = "",
                 fix: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.kind = kind
        self.message = message
        self.fix = fix


# ------------------------------------------------------------------------ widget


class EngineRow(Vertical):
    """Three engine columns, or one line in their place; owns the engine workers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.active = False
        self.generation = 0  # newest engine query started
        self.shown_generation = 0
        self.answer: Any = None  # EngineAnswer on screen
        self.reference: Any = None  # the local (bm25) Answer it is compared with
        self.report: Any = None  # the newest VerifyReport
        self.check_line: tuple[str, str, str | None] | None = None  # (kind, message, fix)
        self.unavailable: tuple[str, str, str | None] | None = None
        self.checking = False
        # Set on unmount: ends any engine wait (a Retry-After, a poll) in the row's workers
        # at once, so quitting never waits it out. Each query also has its own event, set
        # when a newer query supersedes it.
        self._stop_engine = threading.Event()
        self._engine_query_cancel: threading.Event | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="engine-columns"):
            yield RankingColumn("engine-bm25", "engine bm25", id="engine-bm25")
            yield RankingColumn("engine-semantic", "engine vector", id="engine-semantic")
            yield RankingColumn("engine-hybrid", "engine hybrid", id="engine-hybrid")
        yield Static("", id="engine-line")

    # ---------------------------------------------------------------- helpers

    @property
    def hql(self) -> Any:
        return self.app

    def column(self, slot: str) -> RankingColumn:
        return self.query_one(f"#{slot}", RankingColumn)

    @property
    def columns(self) -> list[RankingColumn]:
        return [self.column(slot) for slot in ENGINE_SLOTS]

    def _options(self, cancel: threading.Event | None = None) -> Any:
        from hqltui.core.engine import Options

        extra = dict(getattr(self.app, "engine_options", None) or {})
        extra["cancel"] = cancel if cancel is not None else self._stop_engine
        return Options(**extra)

    def on_unmount(self) -> None:
        self._stop_engine.set()
        if self._engine_query_cancel is not None:
            self._engine_query_cancel.set()

    # ---------------------------------------------------------------- toggling

    def toggle(self) -> bool:
        self.active = not self.active
        self.set_class(self.active, "-on")
        self.screen.set_class(self.active, "-engine")
        if self.active:
            self.check()
            self.start_query(self.hql.generation, self.hql.text, submitted=False)
        return self.active

    # ------------------------------------------------------------------ query

    def start_query(self, generation: int, text: str, submitted: bool) -> None:
        """Called by the app each time it starts a local query (already debounced)."""
        session = self.hql.session
        if not self.active or session is None:
            return
        self.generation = max(self.generation, generation)
        if not text.strip():
            self._show_answer(generation, text, None, None)
            return
        if self.shown_generation == 0 or self.answer is None:
            self._busy("asking the engine…")
        if self._engine_query_cancel is not None:
            self._engine_query_cancel.set()  # the older query's answer would never be shown
        cancel = self._engine_query_cancel = threading.Event()
        if self._stop_engine.is_set():
            cancel.set()
        self._titles()  # mark what is on screen as out of date until this answer comes
        self.run_worker(
            partial(self._ask, session, generation, text, submitted, cancel),
            name=f"engine query {generation}",
            description=f"engine query {generation}",  # never repr() the session
            group="engine-query",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def _ask(self, session: Any, generation: int, text: str, submitted: bool,
             cancel: threading.Event) -> None:
        """Runs in a thread: the engine's three arms, and the local bm25 answer to compare."""
        from hqltui.core.engine import (
            EngineCancelled,
            EngineFailure,
            EngineRefused,
            LocalCards,
            search,
            settings_or_refuse,
        )

        try:
            local = LocalCards.from_session(session)
            settings = settings_or_refuse(local)
            answer = search(local, settings, text, live=submitted,
                            options=self._options(cancel))
        except EngineCancelled:
            return  # superseded by a newer query, or the row is closing: nothing to show
        except EngineRefused as exc:
            self.post_message(EngineUnavailable(generation, "refusal", exc.refusal.message,
                                                exc.refusal.fix))
            return
        except EngineFailure as exc:
            self.post_message(EngineUnavailable(generation, "failure", str(exc), None))
            return
        reference = session.query(text, lexical="bm25", live=submitted)
        self.post_message(EngineAnswered(generation, text, answer, reference))

    @on(EngineAnswered)
    def _answered(self, message: EngineAnswered) -> None:
        message.stop()
        self._show_answer(message.generation, message.text, message.answer, message.reference)

    @on(EngineUnavailable)
    def _unavailable(self, message: EngineUnavailable) -> None:
        message.stop()
        if message.generation < self.shown_generation:
            return  # an older answer than the one on screen: never shown
        self.shown_generation = message.generation
        self.answer = self.reference = None
        self.unavailable = (message.kind, message.message, message.fix)
        self.paint()

    def _show_answer(self, generation: int, text: str, answer: Any, reference: Any) -> None:
        if generation < self.shown_generation:
            return
        self.shown_generation = generation
        self.answer = answer
        self.reference = reference
        self.unavailable = None
        self.paint()

    # ------------------------------------------------------------------ check

    def check(self) -> None:
        """Run an engine verify in the background; its counts go in the header."""
        session = self.hql.session
        if not self.active or session is None:
            return
        self.checking = True
        self.run_worker(
            partial(self._verify, session),
            name="engine check",
            description="engine check",
            group="engine-check",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def _verify(self, session: Any) -> None:
        from hqltui.core.engine import (
            EngineCancelled,
            EngineFailure,
            EngineRefused,
            LocalCards,
            settings_or_refuse,
            verify,
        )

        try:
            local = LocalCards.from_session(session)
            settings = settings_or_refuse(local)
            report = verify(local, settings, self._options())
        except EngineCancelled:
            return  # the row is closing
        except EngineRefused as exc:
            self.post_message(EngineChecked(None, "refusal", exc.refusal.message,
                                            exc.refusal.fix))
            return
        except EngineFailure as exc:
            self.post_message(EngineChecked(None, "failure", str(exc)))
            return
        self.post_message(EngineChecked(report))

    @on(EngineChecked)
    def _checked(self, message: EngineChecked) -> None:
        message.stop()
        self.set_report(message.report, message.kind, message.message, message.fix)

    def set_report(self, report: Any, kind: str = "", message: str = "",
                   fix: str | None = None) -> None:
        """A verify report from the check or from an engine verify job."""
        self.checking = False
        self.report = report
        self.check_line = (kind, message, fix) if report is None else None
        self.hql.engine_status_changed()
        self.paint()

    # --------------------------------------------------------------- painting

    def _busy(self, text: str) -> None:
        for column in self.columns:
            column.show_message(Text(text, style=self.hql.palette.muted), "busy")
        self.show_columns()

    def show_line(self, text: Text, kind: str) -> None:
        line = self.query_one("#engine-line", Static)
        line.update(text)
        line.set_classes(f"-{kind}")
        self.set_class(True, "-line")

    def show_columns(self) -> None:
        self.set_class(False, "-line")

    @property
    def pending(self) -> bool:
        """A newer engine query than the answer on screen is still out."""
        return self.generation > self.shown_generation

    def _titles(self) -> None:
        p = self.hql.palette
        mark = (" · asking…", p.accent) if self.pending else ""
        self.column("engine-bm25").set_title(
            Text.assemble(("engine bm25", "bold"), (" · Δ vs local bm25", p.muted), mark))
        self.column("engine-semantic").set_title(
            Text.assemble(("engine vector", "bold"), " (", ("approximate", p.warning), ")",
                          (" · Δ", p.muted), mark))
        self.column("engine-hybrid").set_title(
            Text.assemble(("engine hybrid", "bold"), (" · Δ vs local (bm25)", p.muted), mark))

    def _unavailable_line(self, kind: str, message: str, fix: str | None) -> Text:
        p = self.hql.palette
        out = Text(no_wrap=False)
        lead = {"refusal": "engine refused: ", "empty": "engine: "}.get(kind, "engine failed: ")
        out.append(lead, style=p.warning if kind == "empty" else p.error)
        out.append(shown(message))
        if fix:
            out.append(" · fix: ", style="bold")
            out.append(shown(fix), style=p.accent)
        return out

    def paint(self) -> None:
        if not self.active:
            return
        p = self.hql.palette
        self._titles()
        blocked = self.unavailable
        if self.check_line and self.check_line[0] == "refusal":
            blocked = self.check_line
        elif self.report is not None and any(pr.kind == "no-rows" for pr in self.report.problems):
            blocked = ("empty", f"{self.report.table} has no rows on the engine yet",
                       "F11 runs engine sync + build")
        if blocked is not None:
            self.show_line(self._unavailable_line(*blocked), blocked[0])
            return
        self.show_columns()
        answer = self.answer
        if answer is None:
            for column in self.columns:
                column.show_message(Text("type a query to rank on the engine",
                                         style=p.muted), "empty")
            return
        stale = set(self.report.parity.stale) if self._parity() else set()
        rankings = answer.rankings()
        reference = self.reference
        for slot in ENGINE_SLOTS:
            column = self.column(slot)
            ranking = rankings.get(ENGINE_ARMS[slot])
            local = getattr(reference, REFERENCE[slot], None) if reference is not None else None
            if ranking is None:
                column.show_message(Text("not asked", style=p.muted), "busy")
            elif not ranking.ok:
                column.show_message(self.hql._refusal_text(ranking.refusal), "refusal")
            elif not ranking.hits:
                column.show_message(Text(EMPTY[slot], style=p.warning), "none")
            else:
                rows = [Row(hit.rank, hit.card, render.score(hit.score),
                            self._delta(hit, local, stale)) for hit in ranking.hits]
                column.show_rows(rows, self.hql.selected)

    def _parity(self) -> Any:
        return getattr(self.report, "parity", None) if self.report is not None else None

    def _delta(self, hit: Any, local: Any, stale: set[str]) -> Text:
        p = self.hql.palette
        out = Text()
        if local is None or not local.ok:
            out.append("  ")
        else:
            found = local.hit(hit.card)
            delta = rank_delta(found.rank if found is not None else None, hit.rank)
            style = p.muted if delta == "=" else p.accent if delta == "new" else \
                p.success if delta.startswith("▲") else p.warning
            out.append(delta, style=style)
        if hit.card in stale:
            out.append(" !", style=p.warning)
        return out

    def select(self, name: str | None) -> None:
        for column in self.columns:
            column.select(name)

    # ----------------------------------------------------------------- header

    def header(self) -> Text:
        """The header's engine part: counts from the newest verify, or why there are none."""
        p = self.hql.palette
        out = Text()
        out.append("engine ", style="bold")
        report = self.report
        if report is None:
            if self.check_line is not None:
                kind, message, _ = self.check_line
                out.append("refused — see the engine row" if kind == "refusal"
                           else f"check failed: {message}", style=p.error)
            else:
                out.append("checking…", style=p.muted)
            return out
        out.append(report.table)
        parity = report.parity
        if parity is None:
            kinds = [problem.kind for problem in report.problems]
            if "no-rows" in kinds:
                out.append(" · no rows yet", style=p.warning)
                out.append(" — F11 syncs and builds", style=p.muted)
            return out
        counts = report.counts()
        out.append(f" · {parity.same} in step ")
        for i, label in enumerate(("stale", "missing", "orphan")):
            if i:
                out.append(" ")
            count = counts[label]
            style = (p.error if label == "missing" else p.warning) if count else ""
            out.append(f"{count} {label}", style=style)
        index_problems = [pr for pr in report.problems if pr.kind.startswith("index-")]
        if index_problems:
            out.append(" · indexes not ready", style=p.warning)
            out.append(" — F11 builds", style=p.muted)
        elif report.problems:
            out.append(" · F11 syncs and builds", style=p.muted)
        else:
            out.append(" · indexes ready", style=p.success)
        return out
