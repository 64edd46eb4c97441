"""A cheap signature of everything a session was loaded from, to notice edits.

The app polls ``signature`` in a worker every few seconds and reloads the
session when it changes. It stats the vault's documents, ``hql.toml`` and the
index file; it never reads a file's content. No new dependency is needed.

A scan costs in proportion to the vault (about 1.4 s for 17,570 man pages), so
polls back off until the watcher spends at most ``WATCH_SHARE`` of one CPU
(``poll_due``): a small vault is still looked at every interval, a huge one
about every half minute. An edit made through the app is looked for at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from producer.vault import discover

Signature = tuple[tuple[str, int, int], ...]
# The share of one CPU the periodic scans may take between them.
WATCH_SHARE = 0.05


def rest_after(cost: float, interval: float) -> float:
    """Seconds to wait after a scan of ``cost`` seconds before the next periodic one:
    ``interval``, or ``(1 / WATCH_SHARE - 1)`` times the scan's cost when that is longer."""
    return max(interval, cost * (1 / WATCH_SHARE - 1))


def poll_due(now: float, last_end: float | None, last_cost: float, interval: float) -> bool:
    """Whether a periodic scan may start at ``now`` (monotonic seconds): ``rest_after``
    the last one ended."""
    return last_end is None or now - last_end >= rest_after(last_cost, interval)


def file_stat(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of ``path`` as a signature holds it; (-1, -1) when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def holds(baseline: Signature, path: str | os.PathLike[str]) -> bool:
    """Does ``baseline`` (made with ``path`` among its extra files) hold ``path`` as it
    is on disk now (same size and mtime)? One stat and string comparisons only: it runs
    on the UI thread, over every document's entry."""
    entry = (os.fspath(Path(path)), *file_stat(os.fspath(path)))
    return entry in baseline


def signature(
    root: str | os.PathLike[str], extra: Iterable[str | os.PathLike[str]] = ()
) -> Signature:
    """(path, size, mtime_ns) for every document under ``root`` and every ``extra`` file.

    The documents are found by the vault reader's own discovery, so the watcher
    sees exactly the files a load reads (and follows no symlink out of the vault).
    """
    root_path = Path(root)
    paths = [root_path / rel for rel in discover(root_path)[0]]
    paths += [root_path / "hql.toml", *map(Path, extra)]
    return tuple(sorted((os.fspath(p), *file_stat(os.fspath(p))) for p in paths))


def before_load(root: str | os.PathLike[str]) -> Signature:
    """The signature a session is told from, taken *before* its load reads a file: an
    edit made while the vault is read then differs from it at the next look (a reload
    too many at worst). One taken after the load could already hold that edit, and the
    session would show the old text with nothing left to notice. The index is the one
    ``hql.toml`` names now."""
    from producer.config import load_producer_config

    index = load_producer_config(Path(root)).index_path
    return signature(root, [index] if index else [])


# How long before a load started a file's change still counts as made during it: file
# times come from the kernel's coarse clock, behind ``time.time_ns`` by a tick at most.
LOAD_MARGIN_NS = 1_000_000_000
# The mtime a signature gives a file it cannot tell was read before or after its change.
UNSEEN = -2


def after_load(root: str | os.PathLike[str], started_ns: int) -> Signature:
    """``before_load``'s signature, taken after a load that started at ``started_ns``
    (``time.time_ns``), for a first look that must stay off the load's path (the MCP
    server's first search): every file changed since the load began is marked ``UNSEEN``,
    so the next look reads it again whichever text the load read (a reload too many at
    worst), where a plain signature taken now could already hold an edit the load missed."""
    cut = started_ns - LOAD_MARGIN_NS
    return tuple((path, size, UNSEEN if mtime >= cut else mtime)
                 for path, size, mtime in before_load(root))


def same_but(a: object, b: object, path: str | os.PathLike[str] | None) -> bool:
    """Do two signatures hold the same files as they were, ``path``'s entry aside (a
    build rewrote the index and nothing else)? Not when either is missing (no scan was
    taken yet, or it failed): then all of it is read again."""
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        return False
    skip = os.fspath(Path(path)) if path is not None else None
    return [e for e in a if e[0] != skip] == [e for e in b if e[0] != skip]
