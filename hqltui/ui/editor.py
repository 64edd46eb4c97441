"""Editing a card in ``$VISUAL`` / ``$EDITOR`` (else ``vi``), with the app suspended."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from textual.app import App


def edit(app: App[Any], path: Path) -> bool:
    """Run the editor on ``path``; False, with a notice, when it could not run."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        with app.suspend():
            subprocess.run([*shlex.split(editor), str(path)], check=False)
    except (OSError, ValueError) as exc:
        app.notify(f"cannot run {editor}: {exc}", severity="error", timeout=6)
        return False
    except Exception as exc:  # suspend is unsupported in some drivers (tests, web)
        app.notify(f"cannot suspend to run {editor}: {exc}", severity="error", timeout=6)
        return False
    return True
