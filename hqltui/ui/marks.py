"""The one hook the benchmarks and the tests read; no effect on the app.

* ``ready(event)``: with ``$HQL_TUI_READY_FILE`` set, appends ``EVENT TIME torch=0|1``:
  when the app reached that point, and whether torch or transformers had been
  imported by then (a benchmark on a real terminal reads it). Each is stamped at the
  refresh after what it names was drawn: ``first-paint`` (the main screen saying
  "loading vault…"), ``cards-shown`` (the card list, header and warnings of a loaded
  vault; the columns may still say "ranking…"), ``ranking-ready`` (the index open and
  the lexical arm built: the columns rank, or invite a query), ``vault-failed``,
  ``card-painted`` (the card pane of a new answer, drawn in the refresh after its
  columns), and ``answer-painted`` after each complete answer's columns, with ``q=``
  and the first 12 hex
  digits of the SHA-256 of the query it answers (so a reader can wait for the answer
  to one text, however keystrokes were coalesced);
  ``reload-shown`` (a reloaded vault's session swapped in and drawn), ``job-shown``
  (a job's event drawn in the jobs panel);
* ``painted``: ``(count, perf_counter)`` of the newest complete answer to reach the
  screen, stamped at the refresh that follows it (the keystroke benchmark);
* ``reached`` counts each event and ``painted_generation`` is the query generation of
  the newest complete answer drawn; ``until(done)`` is awaited (on the app's loop)
  until ``done()`` holds after some event: a test waits on what the app did, never on
  a guessed pause.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

READY_ENV = "HQL_TUI_READY_FILE"


class Marks:
    def __init__(self, ready_file: str | None = None) -> None:
        self.ready_file = ready_file if ready_file is not None else os.environ.get(READY_ENV)
        self.answers_shown = 0
        self.painted: tuple[int, float] = (0, 0.0)
        self.painted_generation = 0
        self.reached: Counter[str] = Counter()
        self._waiting: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    def ready(self, event: str, query: str | None = None) -> None:
        self.reached[event] += 1
        self._wake()
        if not self.ready_file:
            return
        torch = "torch" in sys.modules or "transformers" in sys.modules
        which = "" if query is None else f" q={query_digest(query)}"
        try:
            with open(self.ready_file, "a", encoding="utf-8") as fh:
                fh.write(f"{event} {time.time():.6f} torch={int(torch)}{which}\n")
        except OSError:
            pass

    def answer_shown(self) -> int:
        """Count a complete answer put on screen; stamp it with ``answer_painted``."""
        self.answers_shown += 1
        return self.answers_shown

    def answer_painted(self, count: int, query: str = "", generation: int = 0) -> None:
        self.painted = (count, time.perf_counter())
        self.painted_generation = max(self.painted_generation, generation)
        self.ready("answer-painted", query)

    async def until(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds: now, or after the event that makes it so."""
        if done():
            return
        import asyncio

        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((done, future))
        await future

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for done, future in waiting:
            if future.done():
                continue
            if done():
                future.set_result(None)
            else:
                self._waiting.append((done, future))


def query_digest(text: str) -> str:
    """How a marker names the query an answer is for."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
