"""A hit's snippet: a short piece of its card around the longest word it shares with the
query, from the passage that answered when one did.

The MCP ``search`` tool gives each hit a snippet and the app's semantic and hybrid rows
show one on a line of their own; both cut it here, so they quote the same text. The
query's words are found as the lexical arm being shown (the one hybrid fuses) splits
text: its ``Analyser`` (default hashbag's tokens; bm25's folds accents and width and
finds Chinese/Japanese words inside longer runs), at the original characters each term
came from. A stale
card's passage offsets point into the text it had when the index was built, so its
passage is not quoted (``answered_text`` says None, and the caller says why).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import regex

from hqltui.core.lexical import HASHBAG_TOKENS, Analyser, tokens

if TYPE_CHECKING:
    from hqltui.core.ranking import Passage
    from producer.vault import Card

ELLIPSIS = "…"
_ALNUM = r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]"  # what a token is made of (core.lexical)
_IS_ALNUM = regex.compile(_ALNUM).match


def snippet(text: str, query: str, width: int, lead: int | None = None,
            analyser: Analyser = HASHBAG_TOKENS) -> str:
    """At most ``width`` characters of ``text``, whitespace collapsed, starting ``lead``
    characters (default a third of ``width``) before the first occurrence of the longest
    term the query shares with it (terms as ``analyser`` splits them: "calendar"
    rather than "on"), else at its start. A start inside the text is moved to the next
    word and marked with an ellipsis."""
    start = 0
    if analyser is HASHBAG_TOKENS or (text.isascii() and query.isascii()):
        at = _longest_word_at(text, query)  # for ASCII both analysers split alike
    else:
        at = _longest_term_at(text, query, analyser)
    if at is not None:
        start = max(0, at - (width // 3 if lead is None else lead))
    if start:
        space = next((i for i in range(start, min(len(text), start + 40)) if text[i].isspace()),
                     None)
        start = space + 1 if space is not None and not text[start - 1].isspace() else start
    collapsed = " ".join(text[start:start + width].split())
    return f"{ELLIPSIS}{collapsed}"[:width] if start else collapsed


def _longest_word_at(text: str, query: str) -> int | None:
    """Where the longest query token first stands in ``text`` as a whole token (ties: the
    earliest). Found with ``str.find`` in the lowercased text and a look at the characters
    either side (a regex with look-arounds costs ~100 µs a passage; a column draws dozens
    per keystroke)."""
    low = text.lower()
    if len(low) != len(text):  # a character whose lowercase is longer: offsets would shift
        return _slow_longest_word_at(text, query)
    words = _query_words(query)
    for length in sorted({len(w) for w in words}, reverse=True):
        found = [at for w in words if len(w) == length
                 if (at := _first_whole(low, w)) is not None]
        if found:
            return min(found)
    return None


def _first_whole(low: str, word: str) -> int | None:
    at = low.find(word)
    while at != -1:
        end = at + len(word)
        if (at == 0 or not _IS_ALNUM(low[at - 1])) and (end == len(low)
                                                         or not _IS_ALNUM(low[end])):
            return at
        at = low.find(word, at + 1)
    return None


def _slow_longest_word_at(text: str, query: str) -> int | None:
    best: tuple[int, int] | None = None  # (-length, position)
    for word in _query_words(query):
        match = regex.search(rf"(?<!{_ALNUM}){regex.escape(word)}(?!{_ALNUM})", text,
                             regex.IGNORECASE)
        if match is not None and (best is None or (-len(word), match.start()) < best):
            best = (-len(word), match.start())
    return None if best is None else best[1]


def marked_spans(text: str, wanted: set[str], analyser: Analyser = HASHBAG_TOKENS
                 ) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``text``'s original characters whose term (as
    ``analyser`` splits it) is one of ``wanted`` (a query's terms): what a display marks.
    Chinese/Japanese bigrams overlap, so their spans may too."""
    if not wanted:
        return []
    return [(start, end) for term, start, end in analyser.spans(text) if term in wanted]


def _longest_term_at(text: str, query: str, analyser: Analyser) -> int | None:
    """Where the longest query term first stands in ``text`` (ties: the earliest)."""
    wanted = set(analyser.query(query))
    best: tuple[int, int] | None = None  # (-length, position)
    for term, start, _ in analyser.spans(text):
        if term in wanted and (best is None or (-len(term), start) < best):
            best = (-len(term), start)
    return None if best is None else best[1]


@lru_cache(maxsize=64)
def _query_words(query: str) -> tuple[str, ...]:
    return tuple(sorted(set(tokens(query))))


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
