"""The query worker: one exclusive thread worker per keystroke burst (debounced).

The debounce waits only inside a burst: a keystroke after a quiet spell (no key for
the debounce) is answered at once, and keys that follow it within the debounce wait
for the burst to end. Typing at a human pace thus never waits for the timer, and a
paste or a fast burst still runs one query for its last text (plus one for its first
key).

Each request carries a generation number; the app shows an answer only when it is
newer than the one on screen (``hqltui.ui.state.with_answer``), so a slow old answer
never replaces a new one. The first query the index does not hold may load a model:
the lexical column is posted first, the semantic one says so until it is ready.

The debounce's clock and timer are one injectable object (``DebounceTimer``; by
default the monotonic clock and the app's timers), so a test decides when a burst
ends instead of sleeping past it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from hqltui.ui.messages import AnswerReady
from hqltui.ui.state import PartialAnswer

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from hqltui.core.session import Answer, Session

Started = Callable[[int, str, bool], None]  # (generation, text, submitted)


class Stoppable(Protocol):
    def stop(self) -> None: ...


class DebounceTimer(Protocol):
    def now(self) -> float: ...

    def later(self, delay: float, callback: Callable[[], None]) -> Stoppable: ...


class AppTimer:
    """The debounce as the app runs it: the monotonic clock and the app's own timers."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    def now(self) -> float:
        return time.monotonic()

    def later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.app.set_timer(delay, callback)


class QueryController:
    def __init__(self, app: App[Any], debounce: float, started: Started,
                 timer: DebounceTimer | None = None) -> None:
        self.app = app
        self.debounce = debounce
        self.timer = timer or AppTimer(app)
        self.started = started  # told of every query started (the engine row asks too)
        self.generation = 0
        self.live_checked = False  # a live query vector was tried: no more partial answers
        self._timer: Stoppable | None = None
        self._last_key = -float("inf")  # self.timer.now() at the last keystroke

    def later(self, start: Callable[[], None]) -> None:
        """``start`` now after a quiet spell, else after the debounce, unless another
        keystroke comes first."""
        now = self.timer.now()
        quiet = self._timer is None and now - self._last_key >= self.debounce
        self._last_key = now
        self.cancel()
        if quiet:
            start()
        else:
            self._timer = self.timer.later(self.debounce, start)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = None

    def start(self, session: Session | None, text: str, arm: str, submitted: bool,
              fusion: str | None = None) -> None:
        """``fusion``: hybrid's method for this query (None: the vault's ``[search]``)."""
        self._timer = None
        if session is None:
            return
        self.generation += 1
        generation = self.generation
        self.started(generation, text, submitted)
        if not text.strip():
            self.app.post_message(AnswerReady(generation, text, arm, None))
            return
        self.app.run_worker(
            partial(self._answer, session, generation, text, arm, submitted, fusion),
            name=f"query {generation}",
            description=f"query {generation}",  # never repr() the session: it is large
            group="query",
            exclusive=True,
            thread=True,
            exit_on_error=False,
        )

    def _answer(self, session: Session, generation: int, text: str, arm: str,
                submitted: bool, fusion: str | None = None) -> None:
        """Runs in a thread."""
        if not self.live_checked and session.needs_live_vector(text):
            lexical = session.rank(text, arm)
            self.app.post_message(
                AnswerReady(generation, text, arm, PartialAnswer(text, lexical), partial=True))
        config = None if fusion is None else session.search.fusion_config(fusion)
        answer = session.query(text, lexical=arm, live=submitted, fusion=config)
        self.app.post_message(AnswerReady(generation, text, arm, answer))

    def answered(self, answer: Answer | PartialAnswer | None, partial: bool) -> None:
        """A complete answer that tried a live vector (or refused semantic) ends the
        partial answers: the model is loaded, or will not be."""
        if partial or answer is None or answer.semantic is None:
            return
        retrieval = answer.semantic.retrieval
        source = retrieval.query_vector_source if retrieval is not None else None
        if (source is not None and source.startswith("live:")) or not answer.semantic.ok:
            self.live_checked = True
