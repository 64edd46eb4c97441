"""Noticing edits at once: the operating system's file notifications, or why not.

A full scan (``hqltui.core.watch.signature``) stats every document: 1.4 s on
17,570 man pages, so it backs off to one scan about every 28 s. Notifications
(inotify on Linux, through ``watchfiles``, a well-kept Rust-backed library that
also handles macOS and Windows) say at once that *something* under the vault
changed; the scan then says what, so both paths compare the same signature and
the scan stays the periodic safety net. Where notifications do not work (the
library cannot be loaded, the OS runs out of watches), ``run`` reports the reason
and returns: the scan alone goes on. A network file system may deliver no events
at all without an error: the periodic scan still sees its edits.

Changes the scan can never see are dropped here (``unseen_by_scan``): anything
under a hidden folder or named with a leading dot (the vault reader skips them:
the index's folder ``.hql``, a build's temporary ``.NAME.tmp-PID``, its work file
``.NAME.resume`` and their SQLite journals, editors' swap files) and the index's
lock. Without that, every file a build writes would start a full scan (1.4 s on
man1). The index file itself is kept: another process may replace it.

``watchfiles`` is imported in ``run`` (a background thread), never at start-up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

# Milliseconds watchfiles gathers events into one batch (an editor's write + rename).
DEBOUNCE_MS = 50
# Folders whose changes never change a ranking (the index's own temporary files are
# in ``.hql`` but the index file itself is what the scan looks at).
IGNORED_DIRS = (".git", ".hg", ".svn", "node_modules", "__pycache__")

NOTIFIED = "notifications"
SCANNED = "scan"

Changed = Callable[[frozenset[str]], None]
"""Told the paths of a batch of changes the scan may see (absolute, as notified)."""


def unseen_by_scan(root: Path, path: str, index: str | os.PathLike[str] | None) -> bool:
    """Is a change at ``path`` one no scan can see? Yes for a path with a component
    below ``root`` that starts with a dot (``producer.vault.discover`` reads none) and
    for ``index``'s lock; never for ``index`` itself (a build elsewhere replaces it)."""
    from producer.index_format import lock_path_for

    here = os.path.abspath(path)
    if index is not None:
        target = os.path.abspath(index)
        if here == target:
            return False
        if here == os.fspath(lock_path_for(Path(target))):
            return True
    for base in {os.path.abspath(root), os.path.realpath(root)}:
        rel = os.path.relpath(here, base)
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            return any(part.startswith(".") for part in Path(rel).parts if part != os.curdir)
    return False


class Notifications:
    """Calls ``on_change(paths)`` (from its thread) after each batch of file events
    under ``root`` that a scan may see; ``on_failed(reason)`` once if notifications
    cannot be used. ``index()``: the index file, whose lock is dropped too."""

    def __init__(self, root: str | os.PathLike[str], on_change: Changed,
                 on_failed: Callable[[str], None],
                 index: Callable[[], str | os.PathLike[str] | None] = lambda: None) -> None:
        self.root = Path(root)
        self.on_change = on_change
        self.on_failed = on_failed
        self.index = index
        self.dropped = 0  # changes dropped as unseen by the scan (tests wait on it)
        self.stopping = threading.Event()
        self.ready = threading.Event()  # set once notifications flow, or have failed
        self.active = False
        self.reason: str | None = None  # why the scan alone is used
        self.thread: threading.Thread | None = None

    @property
    def mode(self) -> str:
        """``notifications`` while they are delivered, else ``scan``."""
        return NOTIFIED if self.active else SCANNED

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, name="vault-notifications", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        try:
            from watchfiles import DefaultFilter, watch

            notifications = self

            class VaultFilter(DefaultFilter):
                ignore_dirs = (*DefaultFilter.ignore_dirs, *IGNORED_DIRS)

                def __call__(self, change: object, path: str) -> bool:
                    if unseen_by_scan(notifications.root, path, notifications.index()):
                        notifications.dropped += 1
                        return False
                    return super().__call__(change, path)  # type: ignore[arg-type]

            events = watch(self.root, watch_filter=VaultFilter(), debounce=DEBOUNCE_MS,
                           step=DEBOUNCE_MS, stop_event=self.stopping, raise_interrupt=False,
                           force_polling=False, yield_on_timeout=True, rust_timeout=1000)
            for changes in events:  # the first batch comes within rust_timeout, maybe empty
                if not self.active:
                    self.active = True
                    self.ready.set()
                if self.stopping.is_set():
                    break
                if changes:
                    self.on_change(frozenset(path for _, path in changes))
        except Exception as exc:  # noqa: BLE001 - any failure means: the scan alone
            self.reason = one_line(exc)
            self.active = False
            self.ready.set()
            if not self.stopping.is_set():
                self.on_failed(self.reason)
            return
        self.active = False


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
