"""The cyclic garbage collector paused while the server starts, then told to skip what
the start made.

Starting makes objects that live as long as the process: the MCP SDK's protocol
models (pydantic classes, imported on the main thread) and the session (every card,
its parsed header, the index's tables, the lexical arm; loaded on another thread),
some 180,000 containers the collector tracks at 10,000 cards, made among many more
short-lived ones. With the collector on, every 700 net allocations trigger a
collection, and the full ones walk everything made so far: about a fifth of the
start's CPU time at 10,000 cards, spent finding almost no garbage. So
``pause()`` turns it off before either begins; when both have ended (``done()`` once
per part, from any thread) everything made so far is moved to the permanent
generation (``gc.freeze()``: later collections skip it, so a search never walks the
whole vault) and the collector is turned back on. Plain CPython API, nothing of the
SDK's: reference counting frees as always meanwhile, only cycles wait, and the start
makes almost none (a few hundred objects, even parsing every file: the header walks are
module functions, not recursive closures), so freezing keeps no garbage alive.

The first snapshot's objects are frozen for good unless released: ``release()``
(called when a reload replaces that snapshot) unfreezes them so the collector can
free whatever cycles the old snapshot leaves behind.
"""

from __future__ import annotations

import gc
import threading


class GcPause:
    """Collector off until ``parts`` calls of ``done()``; then freeze and back on."""

    def __init__(self, parts: int) -> None:
        self._left = parts
        self._lock = threading.Lock()
        self._was_enabled = False
        self._frozen = False

    def pause(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def done(self) -> None:
        """One part of the start has ended (idempotent past the last)."""
        with self._lock:
            self._left -= 1
            if self._left != 0:
                return
            if self._was_enabled:
                gc.freeze()
                self._frozen = True
                gc.enable()

    def release(self) -> None:
        """The start's objects are collectable again (a reload replaced the snapshot)."""
        with self._lock:
            if self._frozen:
                gc.unfreeze()
                self._frozen = False
