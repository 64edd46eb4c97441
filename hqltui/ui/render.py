"""Pure helpers that turn core values into Rich text for the widgets.

Nothing here reads files, touches a session or imports Textual: every function
takes plain values and returns strings or ``rich.text.Text``, so the same
wording shows in every widget and is easy to test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from hqltui.core.names import DEFAULT_LEXICAL
from producer.terminal import shown_body


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


def query_terms(query: str, arm: str = DEFAULT_LEXICAL) -> set[str]:
    """The query's terms as lexical ``arm`` splits them (its analyser)."""
    return set(analyser_of(arm).query(query))


def analyser_of(arm: str) -> Any:
    # Each arm's analyser has one home, in the core (imported with numpy, by the
    # session worker, before any answer is shown).
    from hqltui.core.arms import ARMS

    return ARMS[arm].analyser


def highlight(text: str, terms: Iterable[str], style: str, arm: str = DEFAULT_LEXICAL) -> Text:
    """``text`` with every term that the query also has styled with ``style``.

    Terms are found by lexical ``arm``'s analyser, at the original characters each
    came from, so what lights up is what that arm matched (``café`` lights up for
    ``cafe`` under bm25; ``北海道`` inside a longer run).
    """
    wanted = set(terms)
    out = Text(text)
    if not wanted:
        return out
    from hqltui.core.snippets import marked_spans

    for start, end in marked_spans(text, wanted, analyser_of(arm)):
        out.stylize(style, start, end)
    return out


@dataclass(frozen=True)
class Anchored:
    """A card detail with a place to scroll to (the passage that answered): the pane
    shows ``before`` then ``after`` and scrolls to ``after``; elsewhere it renders whole."""

    before: RenderableType
    after: RenderableType

    def __rich__(self) -> Group:
        return Group(self.before, self.after)


def body_text(
    body: str,
    terms: Iterable[str],
    *,
    mark: str,
    heading: str,
    span: tuple[int, int] | None = None,
    span_style: str = "",
    arm: str = DEFAULT_LEXICAL,
) -> tuple[Text, int | None]:
    """A card body for the terminal: headings emphasised, query terms marked, control
    characters made visible, CRs dropped; and ``span`` (character offsets into ``body``,
    the passage that answered) styled ``span_style``; terms found by lexical ``arm``'s
    analyser. Also returns where the rendered passage starts (None: no span shown),
    so a pane can scroll there."""
    wanted = set(terms)
    out = Text()
    lines: list[tuple[int, str]] = []  # (offset in body, raw line)
    at = 0
    for line in body.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    # Trim leading and trailing blank lines; keep the inner layout as written.
    while lines and not lines[0][1].strip():
        lines.pop(0)
    while lines and not lines[-1][1].strip():
        lines.pop()
    anchor: int | None = None
    for i, (offset, raw) in enumerate(lines):
        if i:
            out.append("\n")
        line = shown_body(raw)
        piece, shift = highlight(line, wanted, mark, arm), 0
        stripped = line.lstrip()
        if stripped.startswith("#"):
            level = len(stripped) - len(stripped.lstrip("#"))
            if stripped[level : level + 1] == " ":
                title = stripped[level + 1 :].strip()
                shift = line.index(title) if title else len(line)
                piece = highlight(title, wanted, mark, arm)
                piece.stylize(heading)
        if span is not None and span_style:
            a, b = max(span[0], offset), min(span[1], offset + len(raw))
            if a < b:
                size = len(piece.plain)
                if line in (raw, raw.removesuffix("\r")):  # exact; else (escaped controls) all
                    lo, hi = min(size, max(0, a - offset - shift)), min(size, b - offset - shift)
                else:
                    lo, hi = 0, size
                if hi > lo:
                    piece.stylize(span_style, lo, hi)
                if anchor is None:
                    anchor = len(out.plain)
        out.append(piece)
    return out, anchor


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"
