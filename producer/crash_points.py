"""A test seam for the crash tests: a build that stops where a test can kill it.

Nothing happens unless a variable below is set; the build and the writer call
``pause_point`` at the places a crash must leave the previous index intact.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# Environment hook used by the crash tests: ``<point>:<marker path>`` makes a
# build write the marker file and sleep at that point, so a test can kill it
# there, or let it go on by removing the marker. Points: ``embedding``, ``writing``,
# ``rename``, ``batch-N`` (after the N-th batch this build embedded) and ``part-N``
# (after the N-th part, an encoder run, this build made, and its checkpoint if one
# was due).
PAUSE_ENV = "HQL_SEMANTICS_TEST_PAUSE"


def pause_point(point: str) -> None:
    """Crash-test hook: see ``PAUSE_ENV``. Does nothing unless the variable names ``point``."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    name, _, marker = spec.partition(":")
    if name != point:
        return
    if not marker:
        while True:  # killed here by the test
            time.sleep(1)
    path = Path(marker)
    path.write_text(str(os.getpid()), encoding="utf-8")
    while path.exists():  # killed here by the test, or let go by removing the marker
        time.sleep(0.05)


# Test seams for the resume tests, so a kill lands after some checkpoints within
# seconds on a small vault: commit the work file every N parts made (instead
# of every ``build_checkpoint.CHECKPOINT_SECONDS``), and plan N changed cards a
# batch (instead of ``build.CHUNK``).
CHECKPOINT_ENV = "HQL_SEMANTICS_TEST_CHECKPOINT_EVERY"
BATCH_CARDS_ENV = "HQL_SEMANTICS_TEST_BATCH_CARDS"


def _positive(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def checkpoint_every() -> int | None:
    """Parts made between checkpoints when a test sets ``CHECKPOINT_ENV``; None: by time."""
    return _positive(CHECKPOINT_ENV)


def batch_cards(default: int) -> int:
    """Changed cards a planned batch holds: ``default`` unless a test sets ``BATCH_CARDS_ENV``."""
    return _positive(BATCH_CARDS_ENV) or default
