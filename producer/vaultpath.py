"""Whether a path can be opened as a vault at all: a check with no parser behind it.

Kept apart from ``producer.vault`` (which loads the YAML reader) so that a command can
refuse a missing vault, and the app check its argument, before anything heavy loads.
"""

from __future__ import annotations

import os
from pathlib import Path


def vault_problem(root: str | os.PathLike[str]) -> str | None:
    """Why ``root`` cannot be opened as a vault (one line naming it), or None."""
    if not os.fspath(root):  # Path("") is the current directory: never searched unasked
        return "the vault argument is empty (an unset variable?)"
    path = Path(root)
    if path.is_dir():
        return None
    if path.is_symlink() and not path.exists():
        return f"{root}: a dangling symlink (its target does not exist)"
    if not path.exists():
        return f"{root}: does not exist"
    return f"{root}: not a directory"
