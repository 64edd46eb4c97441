"""The one hook the benchmarks read (``benchmarks/bench_app.py``); no effect on the app.

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
* ``painted``: ``(count, perf_counter)`` of the newest complete answer to reach the
  screen, stamped at the refresh that follows it (the keystroke benchmark).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

READY_ENV = "HQL_TUI_READY_FILE"


class Marks:
    def __init__(self, ready_file: str | None = None) -> None:
        self.ready_file = ready_file if ready_file is not None else os.environ.get(READY_ENV)
        self.answers_shown = 0
        self.painted: tuple[int, float] = (0, 0.0)

    def ready(self, event: str, query: str | None = None) -> None:
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

    def answer_painted(self, count: int, query: str = "") -> None:
        self.painted = (count, time.perf_counter())
        self.ready("answer-painted", query)


def query_digest(text: str) -> str:
    """How a marker names the query an answer is for."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
