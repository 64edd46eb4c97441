"""The fast path both lexical tokenisers share for text that is mostly ASCII.

For ASCII both rules reduce to: lowercase, split on everything but ``[a-z0-9]``,
drop pieces of one byte. So the whole text is folded that way as bytes, and only
the words holding a non-ASCII character go through the tokeniser's own (slow)
rule. A word ends at an ASCII separator, which no multi-byte UTF-8 sequence
contains, and is handed to the slow rule whole, with its ASCII letters
already lowercased: both tokenisers lowercase (or case-fold) ASCII letters
first, which changes neither a piece's byte length nor what it folds to.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

# ASCII letters lowercased, digits kept, every other ASCII byte a space; the bytes of
# non-ASCII characters (all >= 0x80 in UTF-8) are left as they are.
_ASCII_FOLD = bytes(
    c + 32 if ord("A") <= c <= ord("Z")
    else c if (ord("a") <= c <= ord("z") or ord("0") <= c <= ord("9") or c >= 0x80)
    else ord(" ")
    for c in range(256)
)
_HIGH = regex.compile(rb"[\x80-\xff]+")


def word_bytes(text: str, slow: Callable[[str], list[str]]) -> list[bytes]:
    """The UTF-8 bytes of ``slow(text)``, with ``slow`` run only on non-ASCII words."""
    folded = text.encode("utf-8").translate(_ASCII_FOLD)
    if text.isascii():
        return [p for p in folded.split() if len(p) > 1]
    out: list[bytes] = []
    done = 0  # folded[:done] is tokenised
    for run in _HIGH.finditer(folded):
        start, end = run.span()
        if start < done:
            continue  # in the word just tokenised
        word_start = folded.rfind(b" ", done, start) + 1 or done
        word_end = folded.find(b" ", end)
        word_end = len(folded) if word_end < 0 else word_end
        out.extend(p for p in folded[done:word_start].split() if len(p) > 1)
        out.extend(t.encode("utf-8") for t in slow(folded[word_start:word_end].decode("utf-8")))
        done = word_end
    out.extend(p for p in folded[done:].split() if len(p) > 1)
    return out
