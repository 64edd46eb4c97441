"""Property tests: the vectorised lexical arms equal plain scalar scorers.

Over synthetic texts shaped like man pages (``tests/synthetic_text.py``): long,
heavily repeated, many distinct terms colliding in one hashbag bucket (a
bucket count beyond any single term's count, and beyond the damping table).

* The hashbag matrix rows and ``exact_hashbag`` equal the scalar
  ``hashbag_vector`` / ``hashbag_score`` bit for bit (the code claims it);
  ``hashbag_scores`` (one matrix product, documented as approximate) agrees
  within 1e-12, and ``refine`` over it is bit-exact again.
* ``bm25_scores`` equals the plain BM25 written out below within 1e-12 (over
  bm25's analyser's terms: ``hqltui.core.bm25_analyser``).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hqltui.core.bm25_analyser import query_terms, terms
from hqltui.core.lexical import (
    damped,
    dot,
    hashbag_score,
    hashbag_vector,
    tokens,
)
from hqltui.core.lexical_index import LexicalIndex
from hqltui.core.ranking import refine
from tests.synthetic_text import COLLIDED, COLLIDING, build, queries, texts

K1, B = 1.2, 0.75

# Counts past the damping table (4096): one bucket summing 12 * 400 = 4800
# from terms of 400 each, and one term repeated 5000 times.
LONG_COLLIDED = build([(word, 400) for word in COLLIDING])
REPEATED = build([("option", 5000), ("file", 2)], "\n")

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def bm25_plain(query: str, corpus: list[str]) -> list[float]:
    """Okapi BM25 as the textbook writes it: k1 1.2, b 0.75, idf ln(1 + (N - n + 0.5)/(n + 0.5))."""
    docs = [Counter(terms(text)) for text in corpus]
    n_docs = len(docs)
    lengths = [sum(d.values()) for d in docs]
    avgdl = sum(lengths) / n_docs if n_docs and sum(lengths) else 1.0
    out = []
    for doc, dl in zip(docs, lengths, strict=True):
        score = 0.0
        for term in query_terms(query):  # a repeated query word counts again
            tf = doc.get(term, 0)
            if not tf:
                continue
            n = sum(1 for d in docs if term in d)
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))
        out.append(score)
    return out


def assert_hashbag_exact(corpus: list[str], query: str) -> None:
    ix = LexicalIndex(corpus)
    vectors = [hashbag_vector(text) for text in corpus]
    for i, vector in enumerate(vectors):
        assert ix.hashbag[i].tobytes() == vector.tobytes(), f"row {i}"
    q = hashbag_vector(query)
    scalar = np.array([dot(q, v) for v in vectors], dtype=np.float64)
    exact = ix.exact_hashbag(query, np.arange(len(corpus)))
    assert exact.tobytes() == scalar.tobytes()
    fast = ix.hashbag_scores(query)
    assert fast.shape == scalar.shape
    if corpus:
        assert float(np.max(np.abs(fast - scalar))) <= 1e-12
    refined = refine(fast, lambda p: ix.exact_hashbag(query, p), None, 1e-12)
    assert refined.tobytes() == scalar.tobytes()


@SETTINGS
@given(st.lists(texts(), max_size=6), queries())
@example([COLLIDED], " ".join(COLLIDING[:2]))
@example([COLLIDED, "option file"], "option " + COLLIDING[0])
@example([LONG_COLLIDED, REPEATED, ""], f"option option {COLLIDING[5]}")
def test_the_vectorised_hashbag_is_the_scalar_scorer_bit_for_bit(
    corpus: list[str], query: str
) -> None:
    assert_hashbag_exact(corpus, query)


@SETTINGS
@given(st.lists(texts(), max_size=6), queries())
@example([COLLIDED, "option file", ""], f"option {COLLIDING[0]} {COLLIDING[0]}")
@example([LONG_COLLIDED, REPEATED, "file"], "option file absent")
def test_bm25_is_the_plain_formula(corpus: list[str], query: str) -> None:
    got = LexicalIndex(corpus).bm25_scores(query)
    want = bm25_plain(query, corpus)
    assert len(got) == len(want)
    for g, w in zip(got.tolist(), want, strict=True):
        assert abs(g - w) <= 1e-12


def test_a_bucket_holding_more_than_any_term_damps_like_the_scalar_code() -> None:
    # The man-page crash, named: no term occurs more than 3 times, one bucket holds 36.
    assert max(Counter(tokens(COLLIDED)).values()) == 3
    row = LexicalIndex([COLLIDED, "option file"]).hashbag[0]
    assert row.tobytes() == hashbag_vector(COLLIDED).tobytes()
    assert np.count_nonzero(row) == 1 and row.max() == 1.0
    assert hashbag_score(COLLIDING[0], COLLIDED) == 1.0


@given(st.lists(st.integers(0, 20000), max_size=50))
@settings(max_examples=60, deadline=None, derandomize=True)
def test_damping_is_one_plus_the_natural_log_of_each_count(counts: list[int]) -> None:
    got = damped(np.array(counts, dtype=np.int64)).tolist()
    assert got == [1.0 + math.log(c) if c else 0.0 for c in counts]
