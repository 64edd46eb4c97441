"""Synthetic card texts shaped like real corpora's worst cases, for the lexical property tests.

Man pages are long, repeat a few words thousands of times and carry troff
markup; what broke the vectorised hashbag on them was a *bucket* whose count
(the sum over every term hashed into it) exceeded the count of any single
term. The generators here produce exactly those shapes, deterministically from
what hypothesis draws:

* ``COLLIDING``: distinct words that all hash into one hashbag bucket, so a
  text can hold a bucket count far beyond any single term's count;
* segments repeated up to thousands of times (past the damping table's size);
* troff-like lines, punctuation, accented and Devanagari words, one-byte
  pieces the tokeniser drops, and mixed-case repeats that lowercase together.
"""

from __future__ import annotations

from hypothesis import strategies as st

from hqltui.core.lexical import bucket

PLAIN = [
    "option", "file", "output", "the", "print", "display", "manual", "page",
    "directory", "recursive", "verbose", "Option", "FILE", "naïve", "été",
    "किताब", "42", "x2", "a", "b",
]
TROFF = [".TH LS 1", ".SH NAME", ".B \\-v", "\\fBfile\\fR", ".IP [[", "]]", ".PP", "\\-\\-help"]
SEPARATORS = [" ", "\n", "\t", ", ", ". ", " — ", "\n.PP\n", "/"]


def colliding_words(target: int, count: int) -> list[str]:
    """``count`` distinct lowercase words whose hashbag bucket is ``target`` (first found)."""
    found: list[str] = []
    i = 0
    while len(found) < count:
        word = f"zq{i}"
        if bucket(word) == target:
            found.append(word)
        i += 1
    return found


COLLIDING = colliding_words(7, 12)
WORDS = PLAIN + COLLIDING


def build(segments: list[tuple[str, int]], separator: str = " ") -> str:
    """Join each ``(piece, times)`` repeated ``times`` times."""
    return separator.join(separator.join([piece] * times) for piece, times in segments if times)


# Twelve distinct words in one bucket, three times each: a bucket count of 36
# where no term occurs more than 3 times (the shape that crashed on man pages).
COLLIDED = build([(word, 3) for word in COLLIDING])


@st.composite
def texts(draw: st.DrawFn, max_segments: int = 12, max_repeat: int = 6000) -> str:
    """One card text: segments of words, colliding words and troff lines, heavily repeated."""
    piece = st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(COLLIDING),
        st.sampled_from(TROFF),
        st.text(alphabet="abcXYZé0 -[]", max_size=12),
    )
    repeat = st.one_of(st.integers(1, 8), st.integers(1, max_repeat))
    segments = draw(st.lists(st.tuples(piece, repeat), max_size=max_segments))
    return build(segments, draw(st.sampled_from(SEPARATORS)))


def queries() -> st.SearchStrategy[str]:
    """Queries over the same words (repeats, colliding words, words no card has)."""
    word = st.one_of(st.sampled_from(WORDS), st.sampled_from(["absent", "zzzz", "A"]))
    return st.lists(word, min_size=0, max_size=6).map(" ".join)
