"""The one hook the benchmarks read (``benchmarks/bench_app.py``); no effect on the app.

* ``ready(event)``: with ``$HQL_TUI_READY_FILE`` set, appends ``EVENT TIME torch=0|1``
  (``first-paint``, ``vault-loaded``, ``vault-failed``, ``answer-painted`` after
  each complete answer's columns are drawn, ``card-painted`` after the card pane that
  follows them): when the app reached that point, and whether torch
  or transformers had been imported by then (a benchmark on a real terminal reads it);
  ``answer-painted`` lines end with ``q=`` and the CRC-32 of the answered query's text
  (``text_id``), so a benchmark waits for the answer to what it typed, not for a late
  answer to an older text;
* ``painted``: ``(count, perf_counter)`` of the newest complete answer to reach the
  screen, stamped at the refresh that follows it (the keystroke benchmark).
"""

from __future__ import annotations

import os
import sys
import time
import zlib

READY_ENV = "HQL_TUI_READY_FILE"


class Marks:
    def __init__(self, ready_file: str | None = None) -> None:
        self.ready_file = ready_file if ready_file is not None else os.environ.get(READY_ENV)
        self.answers_shown = 0
        self.painted: tuple[int, float] = (0, 0.0)

    def ready(self, event: str, note: str = "") -> None:
        if not self.ready_file:
            return
        torch = "torch" in sys.modules or "transformers" in sys.modules
        tail = f" {note}" if note else ""
        try:
            with open(self.ready_file, "a", encoding="utf-8") as fh:
                fh.write(f"{event} {time.time():.6f} torch={int(torch)}{tail}\n")
        except OSError:
            pass

    def answer_shown(self) -> int:
        """Count a complete answer put on screen; stamp it with ``answer_painted``."""
        self.answers_shown += 1
        return self.answers_shown

    def answer_painted(self, count: int, text: str = "") -> None:
        self.painted = (count, time.perf_counter())
        self.ready("answer-painted", f"q={text_id(text)}")


def text_id(text: str) -> str:
    """A query text's short identity on a marker line (its CRC-32, hex)."""
    return f"{zlib.crc32(text.encode('utf-8')):08x}"
