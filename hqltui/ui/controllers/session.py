"""Loading the vault, and watching it for changes.

* ``session`` group: load or reload the vault and its index (the core, numpy and
  the index are imported there, never at start-up). The first load is staged: the
  cards are posted as soon as the vault is read (``SessionLoaded``), then the
  ``prepare`` group opens the index and builds the lexical arm, posting each step
  (``SessionStage``) and ``RankingReady``. A reload makes the new session ready
  in the background and swaps it in whole, so the answer on screen never blanks;
* ``prepare`` group: make the session on screen ready for a lexical arm (the first
  load's, or one F2 switched to that was not built yet);
* ``watch`` group: a cheap stat of the vault's files every few seconds, which
  posts ``VaultChanged`` when something changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual.worker import Worker, get_current_worker

from hqltui.ui.messages import (
    RankingReady,
    SessionFailed,
    SessionLoaded,
    SessionStage,
    VaultChanged,
)

if TYPE_CHECKING:
    from textual.app import App

    from hqltui.core.history import History
    from hqltui.core.session import Session

SessionFactory = Callable[[Path], "Session"]
T = TypeVar("T")
# How often a session-load worker checks whether the app is quitting.
LOAD_POLL_SECONDS = 0.05


class SessionController:
    def __init__(self, app: App[Any], vault: Path, clock: Callable[[], datetime],
                 factory: SessionFactory | None, history_file: Path | None) -> None:
        self.app = app
        self.vault = vault
        self.clock = clock
        self.factory = factory
        self.history_file = history_file
        self.history: History | None = None
        self.signature: object = None
        self.read_as: object = None
        self._checking: Worker[None] | None = None
        self._scanned: tuple[float | None, float] = (None, 0.0)  # last scan's end, its cost

    def _run(self, work: Callable[[], None], group: str, name: str) -> Worker[None]:
        # A description, or Textual repr()s the work on the UI thread (a session in a
        # partial would be printed whole: seconds on man1).
        return self.app.run_worker(work, name=name, description=name, group=group,
                                   exclusive=True, thread=True, exit_on_error=False)

    # ------------------------------------------------------------------ loading

    def load(self, reason: str, arm: str | None = None, staged: bool = False,
             on_hand: Session | None = None) -> None:
        """Read the vault. ``staged``: post the cards at once (the app then asks for
        ``prepare``); else make it ready for lexical ``arm`` (None: its ``[search]
        lexical``) before posting it. ``on_hand``: the session on screen, whose cards are
        kept when nothing but its index changed since it was read (a build landed)."""
        self._run(partial(self._load, reason, arm, staged, on_hand), "session",
                  f"load ({reason})")

    def _load(self, reason: str, arm: str | None, staged: bool,
              on_hand: Session | None = None) -> None:
        try:
            made = self._in_daemon(lambda: self._made(arm, staged, on_hand))
            if made is None:
                return  # quitting, or a newer load replaced this one
            session, seen = made
            if self.history is None:
                from hqltui.core.history import History

                history = History(self.history_file)
                history.load()
                self.history = history
        except (OSError, ValueError) as exc:
            self.app.post_message(SessionFailed(str(exc)))
            return
        self.app.post_message(SessionLoaded(session, reason, seen))

    def _made(self, arm: str | None, staged: bool,
              on_hand: Session | None = None) -> tuple[Session, object]:
        """The session, and the watch signature taken before it read a file."""
        seen = self._scan_before_load()
        if on_hand is not None and self._only_index_changed(seen, on_hand):
            session = on_hand.with_index_reread()
            session.warnings  # noqa: B018 - made here, off the UI thread
            return session, seen
        if self.factory is not None:
            session = self.factory(self.vault)
        else:
            from hqltui.core.session import Session

            session = Session.load(self.vault, clock=self.clock, open_index=not staged)
        if not staged:
            session.prepare(arm)
        session.warnings  # noqa: B018 - made here, off the UI thread (the link check is long)
        return session, seen

    def prepare(self, session: Session, arm: str) -> None:
        """Open the index and build ``arm`` for ``session``, posting each step, then
        ``RankingReady`` (an arm that cannot be built is ready too: it refuses)."""
        def work() -> None:
            def said(step: str) -> None:
                self.app.post_message(SessionStage(session, arm, step))

            def ready() -> bool:
                session.prepare(arm, said)
                session.warnings  # noqa: B018 - the index's, made off the UI thread
                return True

            if self._in_daemon(ready) is not None:
                self.app.post_message(RankingReady(session, arm))

        self._run(work, "prepare", f"prepare {arm}")

    def remember(self, text: str) -> bool:
        """Add a submitted query to the history (False while none is loaded)."""
        if self.history is None:
            return False
        self.history.add(text)
        return True

    def _in_daemon(self, make: Callable[[], T]) -> T | None:
        """``make()`` in a daemon thread, given up on once this worker is cancelled
        (None): a quit must not wait for a long load (the pool thread of a worker is
        joined at exit; a daemon thread is not)."""
        worker = get_current_worker()
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = make()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the worker below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="session-load", daemon=True).start()
        while not done.wait(LOAD_POLL_SECONDS):
            if worker.is_cancelled:
                return None
        if "error" in box:
            raise box["error"]
        value: T = box["value"]
        return value

    # -------------------------------------------------------------------- watch

    def loaded(self, seen: object) -> None:
        """A session is on screen: changes are told from ``seen``, the scan its load
        took before reading a file (``watch.before_load``)."""
        self.signature = seen
        self.read_as = seen  # what the cards on screen were read from (a check moves
        # ``signature`` on to what it saw; this stays until the next session is shown)

    def _only_index_changed(self, seen: object, on_hand: Session) -> bool:
        """Are the vault's files and ``hql.toml`` as they were when ``on_hand``'s baseline
        was taken (before it read them)? Then only the index can have changed. (Not
        ``signature``: a check that noticed an edit moves it on before the reload that
        edit asked for has read it.)"""
        from hqltui.core.watch import same_but

        return same_but(seen, self.read_as, on_hand.config.index_path)

    def _scan_before_load(self) -> object:
        from hqltui.core.watch import before_load

        return self._timed(lambda: before_load(self.vault))

    def _scan(self, index: str | None) -> object:
        from hqltui.core.watch import signature

        return self._timed(lambda: signature(self.vault, [index] if index else []))

    def _timed(self, scan: Callable[[], object]) -> object:
        start = time.monotonic()
        now = scan()
        end = time.monotonic()
        self._scanned = (end, end - start)
        return now

    def check(self, index: str | None) -> None:
        """Look for a change now (after the editor returns, or a poll)."""
        self._checking = self._run(partial(self._check, index), "watch", "watch check")

    def poll(self, index: str | None, interval: float) -> None:
        """The periodic look; none while the last one still walks the vault (a slow disk
        or a busy machine), so polls never pile up or cancel each other, and none until
        the last scan's rest is over (``watch.poll_due``)."""
        from hqltui.core.watch import poll_due

        if (self.signature is not None
                and (self._checking is None or self._checking.is_finished)
                and poll_due(time.monotonic(), *self._scanned, interval)):
            self.check(index)

    def _check(self, index: str | None) -> None:
        before = self.signature
        now = self._scan(index)
        if before is not None and now != before and not get_current_worker().is_cancelled:
            self.signature = now
            self.app.post_message(VaultChanged())
