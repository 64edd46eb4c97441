"""How many CPUs this process may run on: the one rule the encoder's threads and the
reader's thread pool both size themselves by (the affinity mask, not the machine's
count, so a process pinned to fewer CPUs does not oversubscribe them)."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
