"""The one rule for fitting free text into one line of a warning or refusal.

Real corpora put anything between ``[[`` and ``]]`` (troff text writes ``[[``
in synopses, so a "link target" can run over many lines), and an exception's
message can hold newlines. Wherever such text is *shown* — ``--list``, the
warnings strip and screen, ``hql-tui query``, the card pane — it goes through
``one_line``: whitespace runs (newlines included) become one space, and text
longer than the bound is cut with an ellipsis. Parsing never changes: the link
keeps its full target, exactly as ``hql`` reads it.
"""

from __future__ import annotations

__all__ = ["LINK_TARGET_CHARS", "REASON_CHARS", "link_target", "one_line"]

LINK_TARGET_CHARS = 60  # a link target in a warning: 60 characters, the last one "…"
REASON_CHARS = 200  # an exception's message in an arm's refusal
ELLIPSIS = "…"


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with whitespace collapsed; cut to at most ``limit`` characters, ending in "…"."""
    collapsed = " ".join(text.split())
    if limit is not None and len(collapsed) > limit:
        return collapsed[: max(0, limit - 1)].rstrip() + ELLIPSIS
    return collapsed


def link_target(target: str) -> str:
    """A link target as warnings show it (at most ``LINK_TARGET_CHARS`` characters)."""
    return one_line(target, LINK_TARGET_CHARS)
