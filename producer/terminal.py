"""Text bound for a terminal: every control character made visible, in one place.

A card's name, path or title, a loader warning or an error message may hold
bytes a terminal obeys (ESC sequences retitle the window or recolour it; a
tab or newline breaks a table). Every text output of the CLIs and the app
passes such strings through ``shown``: C0 controls, DEL and C1 controls become
``\\xNN``; line/paragraph separators and bidirectional overrides ``\\uNNNN``.
JSON output keeps the exact strings (``json.dumps`` escapes controls itself).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_BODY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """``text`` with every control character written as ``\\xNN`` (or ``\\uNNNN``)."""
    return _UNSAFE.sub(_escape, str(text))


def shown_lines(text: str) -> str:
    """Lines we joined with newlines, each made terminal-safe on its own."""
    return "\n".join(shown(line) for line in text.split("\n"))


def shown_body(text: str) -> str:
    """A multi-line text (a card body): newlines and tabs kept, CRs dropped, every
    other control character made visible."""
    return _UNSAFE_IN_BODY.sub(_escape, text.replace("\r", ""))
