"""Importing the core loads neither Textual nor the model (torch, transformers): the app
starts fast and the core serves the CLI without a terminal UI. The static walls between
packages are `lint-imports` contracts (pyproject.toml); this checks what actually loads."""

from __future__ import annotations

import pathlib
import subprocess
import sys

CORE = pathlib.Path(__file__).resolve().parents[1] / "hqltui" / "core"


def _core_modules() -> list[str]:
    names = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def test_the_core_modules_are_found() -> None:
    names = _core_modules()
    assert "hqltui.core.session" in names and "hqltui.core.ranking" in names


def test_importing_every_core_module_loads_neither_textual_nor_torch() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {_core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'torch', 'transformers'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=CORE.parent.parent,
    )
    assert out.stdout.strip() == ""
