"""Wording both CLIs and the app share, so a rule reads the same wherever it is shown.

``listed`` is the one "and N more" cut: at most ``SHOWN`` names, then a count.
"""

from __future__ import annotations

from collections.abc import Sequence

SHOWN = 5  # names listed before "and N more", everywhere


def listed(names: Sequence[str], shown: int = SHOWN) -> str:
    """```a`, `b`, `c` and 4 more``: the first ``shown`` names in backquotes, then a count."""
    head = ", ".join(f"`{n}`" for n in names[:shown])
    rest = len(names) - shown
    return head + (f" and {rest} more" if rest > 0 else "")
