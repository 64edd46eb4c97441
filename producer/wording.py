"""Wording both CLIs and the app share, so a rule reads the same wherever it is shown.

``listed`` is the one "and N more" cut: at most ``SHOWN`` names, then a count.
``refusal_spans`` / ``with_fix`` are the one wording of a refusal and its fix
(``message; fix: fix``): the CLIs print it, the app styles its spans, the MCP
server returns it as an error result.
"""

from __future__ import annotations

from collections.abc import Sequence

SHOWN = 5  # names listed before "and N more", everywhere
FIX_LEAD = "; fix: "  # between what is refused and how to fix it, everywhere


def listed(names: Sequence[str], shown: int = SHOWN) -> str:
    """```a`, `b`, `c` and 4 more``: the first ``shown`` names in backquotes, then a count."""
    head = ", ".join(f"`{n}`" for n in names[:shown])
    rest = len(names) - shown
    return head + (f" and {rest} more" if rest > 0 else "")


def refusal_spans(message: str, fix: str | None) -> list[tuple[str, str]]:
    """A refusal as ``(role, text)`` spans: ``message``, then ``lead`` and ``fix`` when
    there is a fix, so a styled display (the app) words it exactly as the plain one."""
    spans = [("message", message)]
    if fix:
        spans += [("lead", FIX_LEAD), ("fix", fix)]
    return spans


def with_fix(message: str, fix: str | None) -> str:
    """One line: what is refused, then how to fix it (``message; fix: fix``)."""
    return "".join(text for _, text in refusal_spans(message, fix))
