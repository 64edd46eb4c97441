"""The vectorised hashbag and bm25 over one snapshot's LexicalIndex."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from hqltui.core.lexical import (
    hashbag_score,
    hashbag_vector,
    token_bytes,
    tokens,
)
from hqltui.core.lexical_index import LexicalIndex
from hqltui.core.ranking import rank, refine

DEVANAGARI = "किताब"  # क ि त ा ब: two combining vowel signs (Mc), Alphabetic
TEXTS = [
    "The barn owl hunts after dark; owls are nocturnal.",
    f"{DEVANAGARI} पढ़ो {DEVANAGARI} नई",
    "Café crème, brûlée — naïve façade",
    "Cafe\u0301 decomposed with a combining acute",
    "",
    "a b c",  # nothing of two bytes: the zero vector
    "owl owl owl owl 6750 2.0",
]
QUERIES = ["owl dark", DEVANAGARI, "café", "crème brûlée", "zzz", "a", "6750 owls"]


def test_the_tokeniser_keeps_combining_vowel_signs() -> None:
    assert tokens(DEVANAGARI) == [DEVANAGARI]
    assert tokens("Café") == ["café"]


@pytest.mark.parametrize("query", QUERIES)
def test_matrix_rows_are_the_scalar_vectors_bit_for_bit(query: str) -> None:
    ix = LexicalIndex(TEXTS)
    for i, text in enumerate(TEXTS):
        assert ix.hashbag[i].tobytes() == hashbag_vector(text).tobytes()
    fast = ix.hashbag_scores(query)
    scalar = np.array([hashbag_score(query, t) for t in TEXTS])
    assert np.max(np.abs(fast - scalar)) <= 1e-12
    exact = ix.exact_hashbag(query, np.arange(len(TEXTS)))
    assert exact.tolist() == scalar.tolist()  # bit-exact


def test_the_devanagari_and_accented_words_match_their_cards() -> None:
    ix = LexicalIndex(TEXTS)
    scores = ix.hashbag_scores(DEVANAGARI)
    assert scores[1] > 0 and scores[1] == pytest.approx(hashbag_score(DEVANAGARI, TEXTS[1]))
    assert ix.bm25_scores("café")[2] > 0
    assert ix.bm25_scores("café")[3] > 0.0  # decomposed: the same term for bm25's analyser
    assert ix.hashbag_scores("café")[3] == 0.0  # ... and another token for hashbag


def test_random_texts_agree_with_the_scalar_scorer() -> None:
    rnd = random.Random(7)
    words = ["owl", "heron", "fish", "dive", "नई", "किताब", "été", "naïve", "x", "42"]
    texts = [" ".join(rnd.choices(words, k=rnd.randint(0, 40))) for _ in range(60)]
    ix = LexicalIndex(texts)
    for q in ["owl fish", "किताब été", "42 heron heron"]:
        scalar = [hashbag_score(q, t) for t in texts]
        assert np.max(np.abs(ix.hashbag_scores(q) - scalar)) <= 1e-12
        refined = refine(ix.hashbag_scores(q), lambda p, q=q: ix.exact_hashbag(q, p), 5, 1e-12)
        names = [f"t{i:02d}" for i in range(len(texts))]
        hits, _ = rank(refined, names, 5)
        want = sorted(((-s, n) for s, n in zip(scalar, names, strict=True) if s > 0))[:5]
        assert [(h.card, h.score) for h in hits] == [(n, -s) for s, n in want]


def test_bm25_by_hand() -> None:
    # d0: owl owl dark (3 tokens); d1: dark night (2); d2: robin (1). N = 3, avgdl = 2.
    ix = LexicalIndex(["owl owl dark", "dark night", "robin"])
    k1, b = 1.2, 0.75
    idf_owl = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    d0 = idf_owl * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 3 / 2))
    s = ix.bm25_scores("owl")
    assert s[0] == pytest.approx(d0, rel=1e-15) and s[1] == 0.0 and s[2] == 0.0
    idf_dark = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    dark0 = idf_dark * 1 * (k1 + 1) / (1 + k1 * (1 - b + b * 3 / 2))
    dark1 = idf_dark * 1 * (k1 + 1) / (1 + k1 * (1 - b + b * 2 / 2))
    s = ix.bm25_scores("Dark OWL")
    assert s[0] == pytest.approx(d0 + dark0, rel=1e-14)
    assert s[1] == pytest.approx(dark1, rel=1e-14)
    # a repeated query word counts twice
    assert ix.bm25_scores("owl owl")[0] == pytest.approx(2 * d0, rel=1e-15)
    assert not ix.bm25_scores("heron").any()


def test_an_empty_vault() -> None:
    ix = LexicalIndex([])
    assert ix.hashbag_scores("owl").shape == (0,)
    assert ix.bm25_scores("owl").shape == (0,)


@pytest.mark.parametrize(
    "text",
    [
        "The Barn-Owl (Tyto alba) hunts at 02:00; a b c 6750 x2 A",
        "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds",
        *TEXTS,
        "İstanbul ΣΊΣΥΦΟΣ straße",
    ],
)
def test_the_fast_tokeniser_agrees_with_the_rule(text: str) -> None:
    got = token_bytes(text)
    assert got == [t.encode("utf-8") for t in tokens(text)]


def test_every_ascii_byte_splits_as_the_rule_says() -> None:
    text = "".join(f"ab{chr(c)}cd " for c in range(128))
    got = token_bytes(text)
    assert got == [t.encode("utf-8") for t in tokens(text)]


@pytest.mark.parametrize("bound", [1, 300, 1 << 16, (1 << 16) + 1, 1 << 40])
def test_the_radix_order_is_the_stable_argsort(bound: int) -> None:
    from hqltui.core.lexical import _stable_order

    keys = np.random.default_rng(bound).integers(0, bound, 5000)
    assert (_stable_order(keys, bound) == np.argsort(keys, kind="stable")).all()


def test_the_kelvin_sign_is_a_token_in_the_matrix_as_in_the_scalar_scorer():
    # U+212A is 3 bytes before lowercasing, so it stays, as `k` (1 byte after).
    texts = ["\u212a-band radio tern", "k tern"]
    index = LexicalIndex(texts)
    scores = index.hashbag_scores("k tern")
    assert scores[0] == hashbag_score("k tern", texts[0])
    assert scores[1] == hashbag_score("k tern", texts[1])
