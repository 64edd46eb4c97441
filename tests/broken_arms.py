"""Real failures injected into one retrieval arm, at seams the tests can set.

None of these replaces an arm: each puts a real defect into one step the arm
runs, and the arm's own code then fails as it would in the field.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np
import pytest

from hqltui.core import bm25_analyser, lexical


def bring_back_the_bucket_overflow(monkeypatch: pytest.MonkeyPatch, texts: Iterable[str]) -> None:
    """Damp hashbag buckets as the first release did: with a ``1 + ln(c)`` table sized
    by the largest count of one term in ``texts``. A bucket holding several terms
    then indexes past the table: the IndexError the man-page vault raised."""
    largest = max((c for t in texts for c in Counter(lexical.token_bytes(t)).values()), default=0)
    table = np.array([0.0] + [1.0 + math.log(c) for c in range(1, largest + 1)])
    monkeypatch.setattr(lexical, "damped", lambda counts: table[np.asarray(counts, np.int64)])


def break_the_tokeniser_on(monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    """Both tokenisers (hashbag's and bm25's analyser) run out of memory on any text
    holding ``marker`` (a huge card)."""
    for module, name in ((lexical, "token_bytes"), (bm25_analyser, "term_bytes")):
        real = getattr(module, name)

        def tokenise(text: str, real=real) -> list[bytes]:  # type: ignore[no-untyped-def]
            if marker in text:
                raise MemoryError("cannot allocate the token list")
            return real(text)  # type: ignore[no-any-return]

        monkeypatch.setattr(module, name, tokenise)


def drop_the_postings_order_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """bm25's postings sort loses its last entry: the postings no longer match the counts."""
    real = lexical._stable_order
    monkeypatch.setattr(lexical, "_stable_order", lambda keys, bound: real(keys, bound)[:-1])


def lose_a_float_reading_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpacking the index's vectors yields one float too few: the matrix cannot be filled."""
    from hqltui.core import index_reader

    real = index_reader.unpack_vectors
    monkeypatch.setattr(index_reader, "unpack_vectors", lambda blob: real(blob)[:-1])
