"""bm25's analyser (``hqltui.bm25.v2``): how card text and queries become bm25 terms.

hashbag must split text exactly as ``hql`` does (``lexical.tokens``, bit for bit);
bm25 is this project's own arm, so it gets an analyser that lets a user with notes
in several languages find them:

1. **Pieces.** Runs of letters, digits and combining marks (hashbag's class plus
   ``\\p{M}``, so a decomposed ``cafe\\u0301`` stays one piece) in the original
   text. A piece of at most one UTF-8 byte is dropped, measured *before* folding,
   as hashbag measures it.
2. **Folding**, one grapheme cluster at a time (so every term knows the original
   characters it came from): NFKC (fullwidth ``Ｆｕｌｌ`` -> ``full``, ligatures,
   halfwidth kana), ``casefold`` (``ß`` -> ``ss``, final sigma), then the marks of
   Latin and Greek letters removed (``é`` -> ``e``, ``ά`` -> ``α``) and the few Latin
   letters that do not decompose mapped as Lucene's ASCII folding maps them
   (``ø`` -> ``o``, ``æ`` -> ``ae``, ``ł`` -> ``l``). Marks of every other script stay:
   ``ガラス`` is not ``カラス``, ``й`` is not ``и``. Repeated until nothing changes.
3. **Terms.** Inside a folded piece, runs of Chinese, Japanese and Korean
   characters (Han, Hiragana, Katakana, Hangul and the prolonged sound mark ``ー``)
   are indexed as overlapping character bigrams *and* unigrams, as Lucene's CJK
   bigram filter does with ``outputUnigrams``; a query uses the bigrams only, or
   the unigram of a one-character run. Everything else in the piece is one term. A
   folded term of one byte (a lone ``é`` -> ``e``) is dropped as the ASCII ``e``
   would be, so that re-analysing any term gives back that very term.

Text for which ``str.isascii()`` holds takes the same fast path as hashbag's
tokeniser (for ASCII both rules are "lowercase, split on everything but letters
and digits, drop one-byte pieces"), so English vaults pay nothing for this.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import regex

from hqltui.core.lexical import Analyser, word_bytes

# bm25's model id in provenance names its analyser (v1 scored hashbag's tokens).
BM25_MODEL = "hqltui.bm25.v2"
BM25_REVISION = "0.1.0"

# A piece: letters, digits (hashbag's class) and combining marks.
_PIECE = regex.compile(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}\p{M}]+")
_ALNUM = regex.compile(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]")
_CLUSTER = regex.compile(r"\X")
_CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc"
# A folded piece cut into CJK runs and runs of everything else.
_RUNS = regex.compile(rf"([{_CJK_CLASS}]+)|([^{_CJK_CLASS}]+)")
# Marks on a Latin or Greek letter (after NFD), which matching ignores.
_LATIN_MARKS = regex.compile(r"([\p{Latin}\p{Greek}])\p{M}+")
# Latin letters that NFD leaves whole, folded as Lucene's ASCIIFoldingFilter does.
_LATIN_LETTERS = str.maketrans({
    "æ": "ae", "ð": "d", "ø": "o", "þ": "th", "đ": "d", "ħ": "h", "ı": "i",
    "ł": "l", "ŋ": "n", "œ": "oe", "ŧ": "t", "ƒ": "f", "ɨ": "i", "ʉ": "u",
})


def _fold_once(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _LATIN_MARKS.sub(r"\1", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", text.translate(_LATIN_LETTERS))


@lru_cache(maxsize=65536)
def fold(cluster: str) -> str:
    """One grapheme cluster as bm25 matches it (NFKC, casefold, Latin/Greek marks off).

    Repeated to a fixed point: casefolding can produce text that NFKC changes
    again (``ᾳ`` -> ``αι``), and a term must fold to itself.
    """
    for _ in range(4):
        again = _fold_once(cluster)
        if again == cluster:
            break
        cluster = again
    return cluster


def spans(text: str, *, query: bool = False) -> Iterator[tuple[str, int, int]]:
    """Every term of ``text`` with the ``(start, end)`` character span of the original
    characters it came from, in order (a CJK run: its unigrams and bigrams by
    position). ``query``: CJK runs give bigrams, or the unigram of a lone character."""
    for piece in _PIECE.finditer(text):
        word = piece.group()
        if len(word.encode("utf-8")) <= 1:
            continue
        if word.isascii():
            yield word.lower(), piece.start(), piece.end()
        else:
            yield from _piece_terms(word, piece.start(), query)


def _piece_terms(word: str, at: int, query: bool) -> Iterator[tuple[str, int, int]]:
    chars: list[str] = []
    origin: list[tuple[int, int]] = []  # each folded character's original cluster
    for cluster in _CLUSTER.finditer(word):
        for char in fold(cluster.group()):
            chars.append(char)
            origin.append((at + cluster.start(), at + cluster.end()))
    folded = "".join(chars)
    for sub in _PIECE.finditer(folded):  # NFKC can make separators: ½ -> 1⁄2
        for run in _RUNS.finditer(sub.group()):
            lo, hi = sub.start() + run.start(), sub.start() + run.end()
            if run.group(1) is None:
                term = folded[lo:hi]
                if len(term.encode("utf-8")) > 1 and _ALNUM.search(term):
                    yield term, origin[lo][0], origin[hi - 1][1]
                continue
            for i in range(lo, hi):
                if i + 1 < hi:
                    if not query:
                        yield folded[i], origin[i][0], origin[i][1]
                    yield folded[i:i + 2], origin[i][0], origin[i + 1][1]
                elif not query or hi - lo == 1:
                    yield folded[i], origin[i][0], origin[i][1]


def terms(text: str) -> list[str]:
    """The terms a card's text is indexed under, in order, repeats kept."""
    return [term for term, _, _ in spans(text)]


def query_terms(text: str) -> list[str]:
    """The terms a query is matched with (CJK: bigrams, or a lone character)."""
    return [term for term, _, _ in spans(text, query=True)]


def term_bytes(text: str) -> list[bytes]:
    """The UTF-8 bytes of ``terms(text)``, fast for text that is mostly ASCII."""
    return word_bytes(text, terms)


# The counting function is looked up when called, so a test can put a real defect
# into it (``tests/broken_arms.py``).
BM25_TERMS = Analyser(BM25_MODEL, lambda text: term_bytes(text), query_terms, spans)
