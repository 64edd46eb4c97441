"""The reader's one thread pool: the passages' SIMD kernels release the GIL, so a pass
over many rows is split over the CPUs (``producer.cpus``' count, at most ``MOST``), in
one pool made on first use and kept for the process (a pool per query would pay its
threads' start every time)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from producer.cpus import usable_cpus

# Past this many threads the passes are bound by memory, not arithmetic.
MOST = 8

_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def worker_count() -> int:
    return min(MOST, usable_cpus())


def pool() -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(worker_count(), thread_name_prefix="hql-passages"))
        return _POOL[0]


def split(run: Callable[[int, int], None], n: int, least: int) -> None:
    """``run(a, b)`` over ``0:n`` in one part per CPU (in the pool), or at once when the
    parts would be smaller than ``least``."""
    parts = max(1, min(worker_count(), n // least))
    if parts == 1:
        if n:
            run(0, n)
        return
    cuts = [n * i // parts for i in range(parts + 1)]
    for f in [pool().submit(run, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]:
        f.result()
