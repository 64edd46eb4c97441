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
from pathlib import Path, PurePosixPath

from producer.vault import Parsed

FORMAT = 1


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hql-tui" / "parse"


class ParseCache:
    """Load once, serve hits by (path, size, mtime_ns), save atomically when changed."""

    def __init__(self, root: Path, directory: Path | None = None) -> None:
        key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:24]
        self.file = (directory or default_cache_dir()) / f"{key}.pickle"
        self.entries: dict[str, tuple[int, int, Parsed]] = {}
        self.seen: set[str] = set()
        self.dirty = False
        try:
            with self.file.open("rb") as fh:
                version, entries = pickle.load(fh)
            if version == FORMAT:
                self.entries = entries
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
            self.entries = {}

    def get(self, file: Path, rel: PurePosixPath) -> Parsed | None:
        key = rel.as_posix()
        self.seen.add(key)
        entry = self.entries.get(key)
        if entry is None:
            return None
        st = file.stat()
        if (st.st_size, st.st_mtime_ns) != entry[:2]:
            return None
        return entry[2]

    def put(self, file: Path, rel: PurePosixPath, parsed: Parsed) -> None:
        st = file.stat()
        self.entries[rel.as_posix()] = (st.st_size, st.st_mtime_ns, parsed)
        self.dirty = True

    def save(self) -> None:
        """Write the cache (dropping files no longer seen); failures only cost speed."""
        gone = self.entries.keys() - self.seen
        if not self.dirty and not gone:
            return
        for key in gone:
            del self.entries[key]
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".parse-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((FORMAT, self.entries), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)
        except OSError:
            pass
        self.dirty = False
