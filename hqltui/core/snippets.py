"""A hit's snippet: a short piece of its card around the longest word it shares with the
query, from the passage that answered when one did.

The MCP ``search`` tool gives each hit a snippet and the app's semantic and hybrid rows
show one on a line of their own; both cut it here, so they quote the same text. A stale
card's passage offsets point into the text it had when the index was built, so its
passage is not quoted (``answered_text`` says None, and the caller says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hqltui.core.lexical import iter_token_spans, tokens

if TYPE_CHECKING:
    from hqltui.core.ranking import Passage
    from producer.vault import Card

ELLIPSIS = "…"


def snippet(text: str, query: str, width: int, lead: int | None = None) -> str:
    """At most ``width`` characters of ``text``, whitespace collapsed, starting ``lead``
    characters (default a third of ``width``) before the first occurrence of the longest
    token the query shares with it (tokens as the lexical arms split them: "calendar"
    rather than "on"), else at its start. A start inside the text is moved to the next
    word and marked with an ellipsis."""
    wanted = set(tokens(query))
    first: dict[str, int] = {}
    for a, b in iter_token_spans(text):
        word = text[a:b].lower()
        if word in wanted and word not in first:
            first[word] = a
    start = 0
    if first:
        at = first[max(first, key=lambda w: (len(w), -first[w]))]
        start = max(0, at - (width // 3 if lead is None else lead))
    if start:
        space = next((i for i in range(start, min(len(text), start + 40)) if text[i].isspace()),
                     None)
        start = space + 1 if space is not None and not text[start - 1].isspace() else start
    collapsed = " ".join(text[start:start + width].split())
    return f"{ELLIPSIS}{collapsed}"[:width] if start else collapsed


def answered_text(card: Card, passage: Passage | None, stale: bool) -> str | None:
    """The text of the passage that answered (its character span of the card's text, from
    where the body starts: the first passage holds the title too), or None: no passage
    answered, its card vector did, or the card is stale."""
    if passage is None or passage.ordinal is None or stale:
        return None
    if not 0 <= passage.start < passage.end <= len(card.text):
        return None  # the reader refuses such offsets; never quote a wrong span
    body_at = len(card.text) - len(card.body)  # the body ends the text (the text contract)
    start = passage.start if passage.end <= body_at else max(passage.start, body_at)
    return card.text[start:passage.end]
