"""The tokeniser and the hashbag scorer, pinned independently.

The FNV-1a vectors are the published 64-bit FNV-1a test values (the ones the
FNV reference test suite lists for "", "a", "foo", "foobar", ...), not values
produced by the code under test.  The scores are worked by hand in comments.
"""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pytest

from hqltui.core import lexical
from hqltui.core.lexical import (
    HASHBAG_DIMENSIONS,
    HASHBAG_MODEL,
    HASHBAG_REVISION,
    bucket,
    fnv1a64,
    hashbag_score,
    hashbag_vector,
    token_spans,
    tokens,
)

# --- FNV-1a, 64 bit ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0xCBF29CE484222325),  # the offset basis itself
        (b"a", 0xAF63DC4C8601EC8C),
        (b"b", 0xAF63DF4C8601F1A5),
        (b"c", 0xAF63DE4C8601EFF2),
        (b"foo", 0xDCB27518FED9D577),
        (b"foob", 0xDD120E790C2512AF),
        (b"fooba", 0xCAC165AFA2FEF40A),
        (b"foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a64_matches_published_vectors(data: bytes, expected: int) -> None:
    assert fnv1a64(data) == expected


def test_fnv1a64_by_hand_for_one_byte() -> None:
    # "a" = 0x61: (0xcbf29ce484222325 ^ 0x61) * 0x100000001b3 mod 2**64.
    h = (0xCBF29CE484222325 ^ 0x61) * 0x100000001B3 % 2**64
    assert fnv1a64(b"a") == h == 0xAF63DC4C8601EC8C


def test_fnv1a64_wraps_to_64_bits() -> None:
    for data in (b"", b"x", b"\xff" * 64, "é".encode()):
        assert 0 <= fnv1a64(data) < 2**64


def test_bucket_is_the_low_byte_of_the_hash_of_the_utf8_bytes() -> None:
    assert bucket("foobar") == 0xE8 == 232
    assert bucket("foo") == 0x77 == 119
    assert bucket("é") == fnv1a64("é".encode()) % 256
    assert all(0 <= bucket(w) < HASHBAG_DIMENSIONS for w in ("owl", "heron", "хищник"))


def test_constants() -> None:
    assert HASHBAG_MODEL == "hql.hashbag.v1"
    assert HASHBAG_REVISION == "0.1.0"
    assert HASHBAG_DIMENSIONS == 256


# --- the tokeniser ------------------------------------------------------------


def test_splits_on_punctuation_and_whitespace_and_lowercases() -> None:
    assert tokens("Barn Owl, (Tyto alba): 'ghost'!") == ["barn", "owl", "tyto", "alba", "ghost"]


def test_underscore_and_hyphen_are_separators() -> None:
    # '_' is punctuation (Pc), not alphanumeric, so it splits like '-' does.
    assert tokens("snake_case barn-owl") == ["snake", "case", "barn", "owl"]


def test_one_byte_pieces_are_dropped() -> None:
    assert tokens("a b C x-ray 2.0 I") == ["ray"]


def test_two_byte_letter_is_kept() -> None:
    # 'é' is one character but two UTF-8 bytes, so it survives the filter.
    assert tokens("é") == ["é"]
    assert tokens("É à") == ["é", "à"]


def test_filter_runs_before_lowercasing() -> None:
    # KELVIN SIGN (U+212A, three bytes) lowercases to ASCII 'k' (one byte).
    # It is kept because its length is measured before lowercasing.
    assert tokens("\u212a") == ["k"]


def test_full_unicode_lowercase() -> None:
    # Turkish dotted capital I lowercases to 'i' + COMBINING DOT ABOVE, as in Rust.
    assert tokens("İstanbul") == ["i\u0307stanbul"]
    # German sharp s stays; final sigma becomes 'ς'.
    assert tokens("STRAßE ΟΔΟΣ") == ["straße", "οδος"]
    assert tokens("ΟΔΟΣ")[0][-1] == "\u03c2"


def test_digits_and_other_numerics_are_alphanumeric() -> None:
    # Nd, Nl (Roman numeral twelve, which lowercases to U+217B) and No
    # (superscript two, one half).
    assert tokens("6750 pairs, x\u00b2, \u216b, \u00bd") == [
        "6750", "pairs", "x\u00b2", "\u217b", "\u00bd",
    ]
    assert tokens("wingspan 1.95m") == ["wingspan", "95m"]


def test_accented_latin_words_stay_whole() -> None:
    assert tokens("Naïve café, Größe") == ["naïve", "café", "größe"]


def test_devanagari_vowel_signs_are_alphabetic() -> None:
    # हिंदी: the vowel signs U+093F, U+0940 and the anusvara U+0902 are marks
    # (Mc/Mn) that Python's str.isalnum rejects but that have the Unicode
    # Alphabetic property, so Rust's is_alphanumeric keeps the word whole.
    word = "\u0939\u093f\u0902\u0926\u0940"
    assert not word.isalnum()
    assert tokens(f"{word} {word}.") == [word, word]


def test_devanagari_virama_is_not_alphabetic() -> None:
    # The virama (U+094D) is a mark without the Alphabetic property, so a
    # conjunct such as the one in पक्षी splits there, in Rust as here.
    assert tokens("\u092a\u0915\u094d\u0937\u0940") == ["\u092a\u0915", "\u0937\u0940"]


def test_non_alphabetic_combining_mark_splits() -> None:
    # COMBINING ACUTE ACCENT (U+0301) is Mn without the Alphabetic property:
    # a decomposed "café" splits where the precomposed one does not.
    assert tokens("cafe\u0301 latte") == ["cafe", "latte"]


def test_no_stemming_and_no_stopwords() -> None:
    assert tokens("the nests nest") == ["the", "nests", "nest"]


# --- vectors and scores ---------------------------------------------------------

# Buckets used below (fnv1a64(word) % 256):
#   owl -> 133, heron -> 149, wren -> 159, gull -> 233, finch -> 233.
LN2 = 0.6931471805599453  # ln 2
LN3 = 1.0986122886681098  # ln 3


def test_example_buckets() -> None:
    assert [bucket(w) for w in ("owl", "heron", "wren", "gull", "finch")] == [
        133, 149, 159, 233, 233,
    ]


def test_vector_is_unit_length_with_damped_counts() -> None:
    # "owl owl wren": bucket 133 counted twice -> 1 + ln 2 = 1.693147...,
    # bucket 159 once -> 1. Norm = sqrt(1.693147^2 + 1) = sqrt(3.866747) = 1.966405.
    v = hashbag_vector("owl owl wren")
    assert v.dtype == np.float64 and v.shape == (256,)
    norm = math.sqrt((1 + LN2) ** 2 + 1)
    assert v[133] == pytest.approx((1 + LN2) / norm, rel=1e-15)
    assert v[159] == pytest.approx(1 / norm, rel=1e-15)
    assert np.count_nonzero(v) == 2
    assert float(np.dot(v, v)) == pytest.approx(1.0, abs=1e-15)


def test_hand_computed_partial_overlap() -> None:
    # query "owl heron": buckets 133 and 149 once each -> (1, 1) / sqrt 2.
    # text "owl owl wren": 133 -> 1.693147/1.966405 = 0.861036; 159 -> 0.508543.
    # Only bucket 133 is shared: 0.707107 * 0.861036 = 0.608845.
    expected = (1 / math.sqrt(2)) * (1 + LN2) / math.sqrt((1 + LN2) ** 2 + 1)
    assert expected == pytest.approx(0.608845, abs=1e-6)
    assert hashbag_score("owl heron", "owl owl wren") == pytest.approx(expected, rel=1e-12)


def test_hand_computed_repetition_is_damped() -> None:
    # text "owl owl owl heron": 133 -> 1 + ln 3 = 2.098612, 149 -> 1;
    # norm = sqrt(2.098612^2 + 1) = 2.324688.
    # score with "owl heron" = (2.098612 + 1) / (sqrt 2 * 2.324688) = 0.942514.
    expected = (2 + LN3) / (math.sqrt(2) * math.sqrt((1 + LN3) ** 2 + 1))
    assert expected == pytest.approx(0.942514, abs=1e-6)
    assert hashbag_score("owl heron", "owl owl owl heron") == pytest.approx(expected, rel=1e-12)


def test_hand_computed_half_overlap() -> None:
    # "owl heron" against "heron": only 149 shared, 1/sqrt 2 * 1 = 0.707107.
    assert hashbag_score("owl heron", "heron") == pytest.approx(1 / math.sqrt(2), rel=1e-12)


def test_case_and_dropped_letters_do_not_change_the_score() -> None:
    assert hashbag_score("A OWL", "owl") == pytest.approx(1.0, rel=1e-15)


def test_collisions_decide_some_scores() -> None:
    # 'gull' and 'finch' share bucket 233: the hashbag cannot tell them apart.
    assert hashbag_score("gull", "finch") == pytest.approx(1.0, rel=1e-15)


def test_disjoint_buckets_score_zero() -> None:
    assert hashbag_score("owl", "heron wren") == 0.0


@pytest.mark.parametrize("query", ["", "a", "a b c", "  ,.;  ", "_"])
def test_empty_or_one_letter_query_is_the_zero_vector_and_scores_zero(query: str) -> None:
    v = hashbag_vector(query)
    assert not v.any()
    assert hashbag_score(query, "owl heron a b c") == 0.0


def test_score_is_symmetric_and_bounded() -> None:
    a, b = "owls hunt voles after dark", "the owl hunts; voles hide"
    s = hashbag_score(a, b)
    assert s == hashbag_score(b, a)
    assert 0.0 <= s <= 1.0 + 1e-12


def test_sequential_dot_agrees_with_numpy_dot() -> None:
    q, t = hashbag_vector("night hunting birds"), hashbag_vector("owls hunt at night; birds roost")
    assert lexical.dot(q, t) == pytest.approx(float(np.dot(q, t)), abs=1e-15)


def test_module_imports_only_numpy_and_regex() -> None:
    tree = ast.parse(pathlib.Path(lexical.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "array", "collections", "math", "numpy", "regex"}


@pytest.mark.parametrize(
    "text",
    ["Barn Owl, (Tyto alba): 'ghost'!", "a b C x-ray 2.0 I", "É à", "\u212a", "İstanbul",
     "snake_case barn-owl", "", "  --  ", "x"],
)
def test_token_spans_locate_exactly_the_tokens(text: str) -> None:
    spans = token_spans(text)
    assert [text[a:b].lower() for a, b in spans] == tokens(text)
    assert all(a < b for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:], strict=False))
