"""Pure helpers that turn core values into Rich text for the widgets.

Nothing here reads files, touches a session or imports Textual: every function
takes plain values and returns strings or ``rich.text.Text``, so the same
wording shows in every widget and is easy to test.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from rich.text import Text

# The tokeniser's separator rule has one home, in the core.
from hqltui.core.lexical import token_spans, tokens


def short_revision(revision: str | None, width: int = 12) -> str:
    """``sha256:0123456789abcdef…`` → ``sha256:012345``; other strings are cut to ``width``."""
    if not revision:
        return "?"
    if ":" in revision:
        scheme, _, digest = revision.partition(":")
        return f"{scheme}:{digest[:6]}"
    return revision if len(revision) <= width else revision[: width - 1] + "…"


def short_model(model: str | None) -> str:
    """The last path component of a model id (``org/name`` → ``name``)."""
    if not model:
        return "?"
    return model.rstrip("/").rsplit("/", 1)[-1]


def age(built_at: datetime | None, now: datetime) -> str:
    """A coarse, stable age such as ``3 min``, ``5 h``, ``12 d`` (``?`` when unknown)."""
    if built_at is None:
        return "?"
    if built_at.tzinfo is None and now.tzinfo is not None:
        built_at = built_at.replace(tzinfo=now.tzinfo)
    elif built_at.tzinfo is not None and now.tzinfo is None:
        now = now.replace(tzinfo=built_at.tzinfo)
    delta = now - built_at
    if delta < timedelta(0):
        return "in the future"
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def score(value: float) -> str:
    """Scores of every arm in one fixed width; RRF sums are small, so keep four digits."""
    return f"{value:.4f}"


def query_terms(query: str) -> set[str]:
    return set(tokens(query))


def highlight(text: str, terms: Iterable[str], style: str) -> Text:
    """``text`` with every token that the query also has styled with ``style``.

    Tokens are found with the core's separator rule and compared lowercased,
    as the lexical arms compare them, so what lights up is what matched.
    """
    wanted = set(terms)
    out = Text(text)
    if not wanted:
        return out
    for start, end in token_spans(text):
        if text[start:end].lower() in wanted:
            out.stylize(style, start, end)
    return out


def body_text(body: str, terms: Iterable[str], *, mark: str, heading: str) -> Text:
    """A card body for the terminal: headings emphasised, query terms marked, CRs dropped."""
    wanted = set(terms)
    out = Text()
    lines = body.replace("\r", "").split("\n")
    # Trim leading and trailing blank lines; keep the inner layout as written.
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        stripped = line.lstrip()
        if stripped.startswith("#"):
            level = len(stripped) - len(stripped.lstrip("#"))
            if stripped[level : level + 1] == " ":
                piece = highlight(stripped[level + 1 :].strip(), wanted, mark)
                piece.stylize(heading)
                out.append(piece)
                continue
        out.append(highlight(line, wanted, mark))
    return out


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"
