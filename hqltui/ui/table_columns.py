"""A DataTable column's width, given when the column is added."""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len
from rich.text import Text


def column_width(label: str | Text, cells: Iterable[str | Text]) -> int:
    """A column as wide as its label and widest cell, given when the column is added.

    Left to itself, Textual's DataTable (8.2) widens an auto-width column only on its
    next idle, and keeps the cells it rendered before that in a cache whose key holds
    no width: a frame drawn between the rows arriving (from a worker) and that idle
    kept every column as narrow as its label, depending on which task ran first.
    """
    return max([_cells(label), *(_cells(cell) for cell in cells)])


def _cells(value: str | Text) -> int:
    return value.cell_len if isinstance(value, Text) else cell_len(value)
