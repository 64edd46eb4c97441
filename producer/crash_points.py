"""A test seam for the crash tests: a build that stops where a test can kill it.

Nothing happens unless the variable below is set; the build and the writer call
``pause_point`` at the places a crash must leave the previous index intact.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# Environment hook used by the crash tests: ``<point>:<marker path>`` makes a
# build write the marker file and sleep at that point, so a test can kill it
# there. Points: ``embedding``, ``writing``, ``rename``.
PAUSE_ENV = "HQL_SEMANTICS_TEST_PAUSE"


def pause_point(point: str) -> None:
    """Crash-test hook: see ``PAUSE_ENV``. Does nothing unless the variable names ``point``."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    name, _, marker = spec.partition(":")
    if name != point:
        return
    if marker:
        Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    while True:  # killed here by the test
        time.sleep(1)
