"""The fixture vaults, copied into each test's working directory under a short name,
so paths on screen are the same on every machine and edits never touch the fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def copy_vault(name: str, dest: str | None = None) -> Path:
    """Copy ``fixtures/NAME`` into the working directory; return the relative path."""
    target = Path(dest or name)
    shutil.copytree(FIXTURES / name, target)
    return target
