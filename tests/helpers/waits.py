"""Waiting on what the app did, never on a guessed pause.

The app's debounce is driven by the test (``ManualDebounce``): keys typed together are
one burst, and ``settle`` ends the burst. ``settle`` then waits for every worker and
for the screen to take their messages, until a round finds nothing left to do; the
app's marks (``hqltui.ui.marks``: answers painted per query generation, a reload
swapped in) are awaited with ``until``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A guard only: a wait that never ends fails the test instead of hanging the run.
GIVE_UP_SECONDS = 120.0


@dataclass
class _Pending:
    callback: Callable[[], None]
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True


class ManualDebounce:
    """The app's debounce clock and timer, moved by the test: time stands still while
    keys are typed; ``idle`` is the quiet spell after them (a pending burst's query runs)."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.pending: _Pending | None = None

    def now(self) -> float:
        return self.clock

    def later(self, delay: float, callback: Callable[[], None]) -> _Pending:
        self.pending = _Pending(callback)
        return self.pending

    def idle(self) -> bool:
        """Time passes beyond any debounce; a burst's pending query starts. True if one did."""
        self.clock += 3600.0
        pending, self.pending = self.pending, None
        if pending is None or pending.stopped:
            return False
        pending.callback()
        return True


async def until(app: Any, done: Callable[[], bool]) -> None:
    """Once ``done()`` holds after one of the app's marks (or already)."""
    await asyncio.wait_for(app.marks.until(done), GIVE_UP_SECONDS)


async def _workers_done(app: Any) -> None:
    """Wait for every worker that is not cancelled. An exclusive worker (a file-watch
    check, a query) is cancelled when a newer one replaces it; that is the app working,
    not a failure, so the wait goes on with the workers still alive."""
    from textual.worker import WorkerCancelled

    for _ in range(50):
        alive = [w for w in app.workers if not w.is_cancelled]
        try:
            await app.workers.wait_for_complete(alive)
            return
        except WorkerCancelled:
            continue


def _busy(app: Any) -> bool:
    return any(not w.is_finished and not w.is_cancelled for w in app.workers)


async def settle(pilot: Any, rounds: int = 2) -> None:
    """Until the app is quiet: the first frame drawn, the typing burst ended, every
    worker finished and the screen caught up with their messages, ``rounds`` times in
    a row with nothing new to do."""
    app = pilot.app
    await until(app, lambda: app.marks.reached["first-paint"] > 0)
    debounce = app.queries.timer
    quiet = 0
    for _ in range(500):
        await pilot.pause()
        fired = debounce.idle() if isinstance(debounce, ManualDebounce) else False
        busy = _busy(app)
        if busy:
            await _workers_done(app)
        if fired or busy:
            quiet = 0
            continue
        quiet += 1
        if quiet >= rounds:
            return


async def type_query(pilot: Any, text: str) -> None:
    """Put ``text`` in the query input in one change (one answer, deterministic
    selection), then wait until an answer to it is painted."""
    from hqltui.ui.widgets.query import QueryInput

    app = pilot.app
    app.main.query_one(QueryInput).value = text
    await settle(pilot)
    await until(app, lambda: app.marks.painted_generation >= app.queries.generation)


async def until_shown(pilot: Any, done: Callable[[], bool], tries: int = 400) -> None:
    """For what no mark names (a widget that paints once mounted, a job's thread): the
    screen's catch-up is awaited (``pilot.pause()``: queues drained, the process idle)
    until ``done()`` holds."""
    for _ in range(tries):
        if done():
            return
        await pilot.pause()
    raise AssertionError(f"never shown: {getattr(done, '__doc__', None) or done}")


async def select_card(pilot: Any, name: str) -> None:
    """Select ``name`` as a click in the card list does."""
    from hqltui.ui.widgets.cards import CardList

    pilot.app.main.query_one(CardList).post_message(CardList.Selected(name))
    await settle(pilot)


async def frame_before_idle(pilot: Any, table: Any) -> None:
    """Draw every line of ``table`` now, before its idle measures the rows just added (the
    frame that once kept auto-width columns as narrow as their labels), then settle."""
    for y in range(table.size.height):
        table.render_line(y)
    await settle(pilot)
