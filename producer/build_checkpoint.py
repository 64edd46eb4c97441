"""The work file: the vectors of an unfinished build, kept for the next one.

A build is atomic (the index is replaced only when every batch is in), so
without this a build killed at 95 % would throw away every vector it made.
While a build embeds, each finished planned batch's vectors are committed to a
small SQLite file beside the index (``.NAME.resume``), every
``CHECKPOINT_SECONDS`` (or every N batches: ``crash_points.CHECKPOINT_ENV``)
and at every clean stop (an error, SIGINT, SIGTERM). The next build replays
the same plan and takes a batch from the file instead of embedding it.

Why whole batches keyed by their texts, and not one vector per text: a
float32 vector depends on the batch it was embedded in (its padded width, the
encoder's thread layout), so a vector is reusable bit for bit only inside the
very same embedding call. A batch is keyed by the SHA-256 of its embedded
strings in order; the file's own key holds everything else the numbers depend
on (model, revision — which carries the recipe and precision —, width, chunk
recipe, runtime, vault). A file with another key, or one that cannot be read,
is ignored with one line and replaced; nothing in it is trusted.

The name does not start with the temporary prefix, so ``remove_leftovers``
(which deletes what a killed build's writer left) keeps it. A finished build
removes it; ``--full`` ignores it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from producer.crash_points import checkpoint_every
from producer.index_checks import is_unit

FORMAT = 1
CHECKPOINT_SECONDS = 30.0

Warn = Callable[[str], None]


def work_path_for(target: Path) -> Path:
    return target.with_name(f".{target.name}.resume")


def batch_key(texts: Sequence[str]) -> str:
    """The SHA-256 of a batch's embedded strings, in order (length-prefixed)."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class WorkFile:
    """Checkpointed batches: read from the last interrupted build, written by this one."""

    def __init__(self, path: Path, key: dict[str, object], warn: Warn, *, resume: bool) -> None:
        self.path = path
        self.key = json.dumps(key, sort_keys=True, separators=(",", ":"))
        self.dimensions = int(key["dimensions"])  # type: ignore[call-overload]
        self.warn = warn
        self.stored: dict[str, int] = {}  # batch key -> vectors held
        self.pending: list[tuple[str, list[bytes]]] = []
        self.reused = 0  # vectors taken from the file by this build
        self.batches_since = 0
        self.last = time.monotonic()
        self.failed = False
        self.db: sqlite3.Connection | None = None
        if resume:
            self._load()

    @property
    def available(self) -> int:
        return sum(self.stored.values())

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                (key,) = db.execute("SELECT value FROM work_meta WHERE name = 'key'").fetchone()
                rows = db.execute("SELECT batch, count FROM batches").fetchall()
            finally:
                db.close()
        except (sqlite3.Error, TypeError, ValueError):
            self.warn(f"{self.path.name}: an interrupted build's work file is damaged; ignored")
            return
        if key != self.key:
            self.warn(
                f"{self.path.name}: an interrupted build's work file is from another model, "
                "revision, recipe, runtime or vault; ignored"
            )
            return
        self.stored = {str(b): int(n) for b, n in rows}

    def take(self, key: str, count: int) -> list[bytes] | None:
        """A stored batch's vectors, or None (not stored, or not as written: then the
        batch is embedded again, never trusted)."""
        if self.stored.get(key) != count:
            return None
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                row = db.execute("SELECT vectors FROM batches WHERE batch = ?", (key,)).fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            row = None
        size = self.dimensions * 4
        blob = bytes(row[0]) if row and isinstance(row[0], bytes) else b""
        vectors = [blob[i : i + size] for i in range(0, len(blob), size)]
        if len(blob) != count * size or not all(is_unit(v) for v in vectors):
            self.warn(f"{self.path.name}: a stored batch is damaged; embedding it again")
            return None
        self.reused += count
        return vectors

    def add(self, key: str, vectors: list[bytes]) -> None:
        """A batch embedded; committed when the interval has passed."""
        if not vectors:
            return
        self.pending.append((key, vectors))
        self.batches_since += 1
        every = checkpoint_every()
        due = (
            self.batches_since >= every
            if every
            else time.monotonic() - self.last >= CHECKPOINT_SECONDS
        )
        if due:
            self.save()

    def save(self) -> None:
        """Commit every pending batch (also called at a clean stop). A checkpoint that
        cannot be written (a full disk) is said once; the build goes on without it."""
        self.batches_since, self.last = 0, time.monotonic()
        if not self.pending or self.failed:
            return
        try:
            db = self._open()
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO batches (batch, count, vectors) VALUES (?, ?, ?)",
                    [(k, len(v), b"".join(v)) for k, v in self.pending],
                )
        except (sqlite3.Error, OSError) as exc:
            self.failed = True
            self.warn(f"{self.path.name}: cannot save a checkpoint ({exc}); continuing without")
            return
        for k, v in self.pending:
            self.stored[k] = len(v)
        self.pending = []

    def _open(self) -> sqlite3.Connection:
        if self.db is None:
            if not self.stored:  # nothing of it is ours: start a fresh file
                remove_work_file(self.path)
            db = sqlite3.connect(self.path)
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS work_meta (name TEXT PRIMARY KEY, value)")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS batches "
                    "(batch TEXT PRIMARY KEY, count INTEGER NOT NULL, vectors BLOB NOT NULL)"
                )
                db.execute(
                    "INSERT OR REPLACE INTO work_meta VALUES ('format', ?), ('key', ?)",
                    (FORMAT, self.key),
                )
            self.db = db
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def finish(self) -> None:
        """The index is in: the work file has served."""
        self.close()
        remove_work_file(self.path)


def remove_work_file(path: Path) -> None:
    for p in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)
