"""The work file: the vectors of an unfinished build, kept for the next one.

A build is atomic (the index is replaced only when every batch is in), so
without this a build killed at 95 % would throw away every vector it made.
While a build embeds, the parts of each planned batch it has made (one
encoder run of the local model, about 32 texts; a whole batch for another
embedder: ``embedders.Parts``) are committed to a small SQLite file beside the
index (``.NAME.resume``), every ``CHECKPOINT_SECONDS`` (or every N parts:
``crash_points.CHECKPOINT_ENV``) and at every clean stop (an error, SIGINT,
SIGTERM). The next build replays the same plan, and each embedding call takes
the parts it finds instead of computing them.

Why parts of a call keyed by the call's texts, and not one vector per text: a
float32 vector depends on the call that made it (its batch's padded width, the
encoder's thread layout), so a vector is reusable bit for bit only in the very
same call. A call is keyed by the SHA-256 of its embedded strings in order, a
part by its number in the call; the file's own key holds everything else the
numbers depend on (model, revision — which carries the recipe and precision —,
width, chunk recipe, runtime, vault). A file with another key, or one that
cannot be read, is ignored with one line and replaced; nothing in it is trusted.

The same holds for bfloat16 (its precision is in the revision, and its runs are
one batch each): a resume on the same machine writes the same bits.

A content-addressed store of one vector per text (as ck keeps) would reuse more
across edits, but could not promise these bits: a text's float32 vector
differs in the last bits from one batch to another.

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

import numpy as np

from producer.crash_points import checkpoint_every, pause_point

FORMAT = 1
# Seconds between checkpoints: a commit of a few parts costs milliseconds, and a build
# killed without a clean stop loses at most this much of its work.
CHECKPOINT_SECONDS = 5.0

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
        self.stored: dict[tuple[str, int], int] = {}  # (call key, part) -> vectors held
        self.pending: list[tuple[str, int, bytes, int]] = []  # call, part, vectors, count
        self.reused = 0  # vectors taken from the file by this build
        self.parts_since = 0
        self.last = time.monotonic()
        self.failed = False
        self.parts_made = 0  # by this build
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
                rows = db.execute("SELECT call, part, count FROM parts").fetchall()
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
        self.stored = {(str(c), int(p)): int(n) for c, p, n in rows}

    def call(self, texts: Sequence[str], on_reused: Callable[[Sequence[int]], None]) -> CallParts:
        """The parts of the embedding call of ``texts``; ``on_reused`` hears the rows of
        each part taken from the file."""
        return CallParts(self, batch_key(texts), on_reused)

    def take(self, call: str, part: int, count: int) -> np.ndarray | None:
        """A stored part's raw vectors, or None (not stored, or not as written: then it
        is embedded again, never trusted)."""
        if self.stored.get((call, part)) != count:
            return None
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                row = db.execute(
                    "SELECT vectors FROM parts WHERE call = ? AND part = ?", (call, part)
                ).fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            row = None
        blob = bytes(row[0]) if row and isinstance(row[0], bytes) else b""
        raw = None
        if len(blob) == count * self.dimensions * 4:
            raw = np.frombuffer(blob, dtype="<f4").reshape(count, self.dimensions)
        if raw is None or not np.isfinite(raw).all():
            self.warn(f"{self.path.name}: a stored part is damaged; embedding it again")
            return None
        self.reused += count
        return raw.astype(np.float32)

    def add(self, call: str, part: int, raw: np.ndarray) -> None:
        """A part embedded; committed when the interval has passed."""
        blob = np.ascontiguousarray(raw, dtype="<f4").tobytes()
        self.pending.append((call, part, blob, int(raw.shape[0])))
        self.parts_since += 1
        self.parts_made += 1
        every = checkpoint_every()
        due = (
            self.parts_since >= every
            if every
            else time.monotonic() - self.last >= CHECKPOINT_SECONDS
        )
        if due:
            self.save()
        pause_point(f"part-{self.parts_made}")

    def save(self) -> None:
        """Commit every pending batch (also called at a clean stop). A checkpoint that
        cannot be written (a full disk) is said once; the build goes on without it."""
        self.parts_since, self.last = 0, time.monotonic()
        if not self.pending or self.failed:
            return
        try:
            db = self._open()
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO parts (call, part, count, vectors) VALUES (?, ?, ?, ?)",
                    [(c, p, n, blob) for c, p, blob, n in self.pending],
                )
        except (sqlite3.Error, OSError) as exc:
            self.failed = True
            self.warn(f"{self.path.name}: cannot save a checkpoint ({exc}); continuing without")
            return
        for c, p, _, n in self.pending:
            self.stored[(c, p)] = n
        self.pending = []

    def _open(self) -> sqlite3.Connection:
        if self.db is None:
            if not self.stored:  # nothing of it is ours: start a fresh file
                remove_work_file(self.path)
            db = sqlite3.connect(self.path)
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS work_meta (name TEXT PRIMARY KEY, value)")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS parts (call TEXT NOT NULL, part INTEGER NOT NULL, "
                    "count INTEGER NOT NULL, vectors BLOB NOT NULL, PRIMARY KEY (call, part))"
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


class CallParts:
    """One embedding call's view of the work file (``embedders.Parts``)."""

    def __init__(self, work: WorkFile, call: str, on_reused: Callable[[Sequence[int]], None]):
        self.work = work
        self.key = call
        self.on_reused = on_reused

    def get(self, part: int, rows: Sequence[int]) -> np.ndarray | None:
        raw = self.work.take(self.key, part, len(rows))
        if raw is not None:
            self.on_reused(rows)
        return raw

    def put(self, part: int, rows: Sequence[int], raw: np.ndarray) -> None:
        self.work.add(self.key, part, raw)


def remove_work_file(path: Path) -> None:
    for p in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)
