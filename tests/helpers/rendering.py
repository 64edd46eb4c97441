"""What a test reads of the screen: a renderable or a widget as plain text."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console


def plain(renderable: Any, width: int = 200) -> str:
    """A Rich renderable as the plain text a terminal ``width`` columns wide shows."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def widget_text(widget: Any) -> str:
    """The plain text a Static shows."""
    return str(widget.render())
