"""A cheap signature of everything a session was loaded from, to notice edits.

The app polls ``signature`` in a worker every few seconds and reloads the
session when it changes. It stats the vault's documents, ``hql.toml`` and the
index file; it never reads a file's content. No new dependency is needed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from producer.vault import discover

Signature = tuple[tuple[str, int, int], ...]


def _stat(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


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
    return tuple(sorted((os.fspath(p), *_stat(os.fspath(p))) for p in paths))
