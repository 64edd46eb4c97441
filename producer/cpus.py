"""The CPU as the code sees it: how many CPUs this process may run on (the one rule
the encoder's threads and the reader's thread pool both size themselves by: the
affinity mask, not the machine's count, so a process pinned to fewer CPUs does not
oversubscribe them), its feature flags, and how encoder calls share the cores."""

from __future__ import annotations

import functools
import os
from pathlib import Path


def usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=2)
def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The first CPU's feature flags (x86 ``flags``, Arm ``Features``); empty if unknown."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def encoder_workers(runs: int, threads: int) -> int:
    """Encoder calls run side by side: one per thread torch may use, at most one per run.

    On a CPU, one call on all cores waits at every operator for its slowest core
    and leaves the others idle while Python dispatches the next operator; calls
    side by side, one core each, do neither. A lone run (a query) keeps every core.
    """
    return max(1, min(runs, threads))
