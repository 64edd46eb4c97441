"""A parse cache for warm loads, keyed by vault-relative path, size and mtime.

Parsing headers dominates a cold load; a warm load re-reads only files whose
size or mtime changed. The cache holds parse results, never names or hashes,
which are recomputed from the whole vault on every load.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from producer.vault import Parsed

FORMAT = 2  # 2: Parsed keeps the header's joined strings


def default_cache_dir(kind: str = "parse") -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hql-tui" / kind


def cache_file(root: Path, kind: str, directory: Path | None = None) -> Path:
    """One vault's cache file of ``kind``: named by a digest of the vault's real path and
    by the kind, so caches of several kinds may share a ``directory``."""
    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:24]
    return (directory or default_cache_dir(kind)) / f"{key}.{kind}.pickle"


class ParseCache:
    """Load once, serve hits by (path, size, mtime_ns), save atomically when changed."""

    def __init__(self, root: Path, directory: Path | None = None) -> None:
        self.file = cache_file(root, "parse", directory)
        self.entries: dict[str, tuple[int, int, Parsed]] = {}
        self.seen: set[str] = set()
        self._stamps: dict[str, tuple[int, int]] = {}
        self.dirty = False
        self.entries = load_entries(self.file, FORMAT)

    def get(self, file: str | os.PathLike[str], key: str) -> Parsed | None:
        """The cached parse of ``file`` (vault-relative ``key``, POSIX separators), if its
        size and mtime still match; else None."""
        self.seen.add(key)
        try:
            st = os.stat(file)
        except OSError:
            return None  # gone or unreadable: the reader reports it
        stamp = (st.st_size, st.st_mtime_ns)
        self._stamps[key] = stamp  # taken before reading, so an edit mid-read re-reads next time
        entry = self.entries.get(key)
        if entry is None or entry[:2] != stamp:
            return None
        return entry[2]

    def put(self, key: str, parsed: Parsed) -> None:
        stamp = self._stamps.get(key)
        if stamp is None:
            return
        self.entries[key] = (*stamp, parsed)
        self.dirty = True

    def save(self) -> None:
        """Write the cache (dropping files no longer seen); failures only cost speed."""
        save_seen(self.file, FORMAT, self.entries, self.seen, self.dirty)
        self.dirty = False


def save_seen(file: Path, version: int, entries: dict, seen: set[str], dirty: bool) -> None:
    """Drop the entries of files not seen this time, and write the cache if anything
    changed: the one save rule of every per-file cache."""
    gone = entries.keys() - seen
    if not dirty and not gone:
        return
    for key in gone:
        del entries[key]
    save_entries(file, version, entries)


def load_entries(file: Path, version: int) -> dict:
    """A cache's entries, or none when the file is absent, unreadable or of another version."""
    try:
        with file.open("rb") as fh:
            found, entries = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
        return {}
    return entries if found == version and isinstance(entries, dict) else {}


def save_entries(file: Path, version: int, entries: dict) -> None:
    """Write a cache atomically; a failure only costs speed next time."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.stem}-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((version, entries), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, file)
    except OSError:
        pass
