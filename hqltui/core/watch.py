"""A cheap signature of everything a session was loaded from, to notice edits.

The app polls ``signature`` in a worker every few seconds and reloads the
session when it changes. It stats the vault's documents (same skip rules as
discovery: every entry starting with ``.`` is skipped), ``hql.toml`` and the
index file; it never reads a file's content. No new dependency is needed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

EXTENSIONS = (".hmd", ".md", ".markdown")

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
    """(path, size, mtime_ns) for every document under ``root`` and every ``extra`` file."""
    found: list[tuple[str, int, int]] = []
    stack = [os.fspath(root)]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir():
                    stack.append(entry.path)
                elif entry.name.endswith(EXTENSIONS):
                    st = entry.stat()
                    found.append((entry.path, st.st_size, st.st_mtime_ns))
            except OSError:
                continue
    root_path = Path(root)
    for path in [root_path / "hql.toml", *map(Path, extra)]:
        found.append((os.fspath(path), *_stat(os.fspath(path))))
    found.sort()
    return tuple(found)
