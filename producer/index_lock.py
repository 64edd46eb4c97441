"""The build lock: one build of an index at a time, and who holds it when refused."""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
from pathlib import Path

from producer.index_format import StoreError, lock_path_for
from producer.index_writer import remove_leftovers


class LockHeld(StoreError):
    """Another build holds the lock of this index."""

    def __init__(self, index: Path, holder: str) -> None:
        self.index = index
        self.holder = holder
        who = holder or "a process that has not yet said who it is"
        super().__init__(f"another build of {index} is running ({who}); wait for it to finish")


class BuildLock:
    """An exclusive, non-blocking ``flock`` on ``<index>.lock``.

    The OS drops the lock when the holding process dies, however it dies. The
    file holds the holder's pid and command line so a refused build can say who
    is building. ``acquire`` raises ``LockHeld`` at once rather than waiting.
    On acquiring, what a killed build left behind is removed.
    """

    def __init__(self, target: str | os.PathLike[str], command: str | None = None) -> None:
        self.target = Path(target)
        self.path = lock_path_for(self.target)
        self.command = (
            command if command is not None else shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
        )
        self._fd: int | None = None

    def acquire(self) -> BuildLock:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: cannot create the build lock: {exc.strerror or exc}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_holder(fd)
                os.close(fd)
                raise LockHeld(self.target, holder) from None
            # The previous holder may have unlinked the file between our open and
            # our flock; then we hold a lock on a file nobody else will see.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()}: {self.command}\n".encode())
        except OSError as exc:  # e.g. the disk is full: say which file could not be written
            os.close(fd)
            raise StoreError(
                f"{self.path}: cannot write the build lock ({exc.strerror or exc})",
                "free some space on that disk, then build again",
            ) from None
        self._fd = fd
        remove_leftovers(self.target)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> BuildLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 4096)
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()
