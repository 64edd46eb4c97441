"""Who holds an index open: SQLite's busy refusal, worded with the processes that hold it.

The ``/proc`` scan is Linux's; elsewhere the refusal says the holder cannot be seen.
"""

from __future__ import annotations

import os
import shlex
import sqlite3

from producer.index_format import LOCK_WAIT_SECONDS, IndexBusy


def is_busy(exc: sqlite3.Error) -> bool:
    """Did SQLite refuse because another connection holds a lock?"""
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc)


def lock_holders(path: str | os.PathLike[str]) -> list[str]:
    """``pid N (command)`` for every other process with ``path`` open, where the OS
    lets us see it (Linux ``/proc``, this user's processes); else an empty list."""
    try:
        target = os.path.realpath(path)
        pids = [d for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != target:
                    continue
            except OSError:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
            except OSError:
                argv = []
            command = shlex.join(argv)[:120] if argv else "command unknown"
            found.append(f"pid {pid} ({command})")
            break
    return found


def busy_error(path: str | os.PathLike[str]) -> IndexBusy:
    """The refusal for an index another process keeps locked, naming it when we can."""
    holders = lock_holders(path)
    who = (
        "held open by " + ", ".join(holders)
        if holders
        else "the process holding it cannot be seen from here"
    )
    return IndexBusy(
        f"{path}: is locked by another process (database is locked; waited "
        f"{LOCK_WAIT_SECONDS:g} s; {who})",
        "try again once that process has finished or closed the index",
    )
