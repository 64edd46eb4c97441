"""The tokeniser and the ``hashbag`` lexical scorer (``hql.hashbag.v1``).

This module is the single home of the tokenising rule; every other part of the
project (bm25, the eval command, fixture tests) imports it from here.

The scorer is bit-exact with ``hql``'s ``lexical`` matcher:

1. Split the text on every character that is not alphanumeric as Rust's
   ``char::is_alphanumeric`` defines it: the Unicode ``Alphabetic`` property, or
   a numeric general category (``Nd``, ``Nl``, ``No``).  Python's
   ``str.isalnum`` is not the same rule (it rejects combining vowel signs such
   as Devanagari ``ि``, which are ``Alphabetic``), so the class is spelled out
   with the ``regex`` package.
2. Drop every piece whose UTF-8 encoding is at most one byte long.  The filter
   runs *before* lowercasing, so ``"A"`` goes and a lone ``"é"`` (two bytes)
   stays.
3. Lowercase with full Unicode case mapping (``str.lower`` agrees with Rust's
   ``to_lowercase``, including ``İ`` → ``i̇`` and the final sigma).
4. Hash each token's UTF-8 bytes with 64-bit FNV-1a and keep ``hash % 256``.
5. Per bucket weight ``1 + ln(count)``; L2-normalise (a zero vector stays zero).
6. The score of a query against a text is the dot product of their vectors.

Only ``numpy`` and ``regex`` are needed: no Textual, no torch.
"""

from __future__ import annotations

import math

import numpy as np
import regex

__all__ = [
    "FNV_OFFSET_BASIS",
    "FNV_PRIME",
    "HASHBAG_DIMENSIONS",
    "HASHBAG_MODEL",
    "HASHBAG_REVISION",
    "bucket",
    "dot",
    "fnv1a64",
    "hashbag_score",
    "hashbag_vector",
    "tokens",
]

HASHBAG_MODEL = "hql.hashbag.v1"
HASHBAG_REVISION = "0.1.0"
HASHBAG_DIMENSIONS = 256

FNV_OFFSET_BASIS = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF

# One run of characters that Rust's `char::is_alphanumeric` rejects.
_SEPARATORS = regex.compile(r"[^\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]+")


def tokens(text: str) -> list[str]:
    """Split ``text`` into lowercase tokens, in order, repeats kept."""
    return [
        piece.lower()
        for piece in _SEPARATORS.split(text)
        if len(piece.encode("utf-8")) > 1
    ]


def fnv1a64(data: bytes) -> int:
    """64-bit FNV-1a of ``data`` (xor, then multiply, wrapping at 2**64)."""
    h = FNV_OFFSET_BASIS
    for byte in data:
        h ^= byte
        h = (h * FNV_PRIME) & _MASK64
    return h


def bucket(token: str) -> int:
    """The hashbag bucket of one (already lowercased) token."""
    return fnv1a64(token.encode("utf-8")) % HASHBAG_DIMENSIONS


def _weights(text: str) -> list[float]:
    counts = [0] * HASHBAG_DIMENSIONS
    for token in tokens(text):
        counts[bucket(token)] += 1
    weights = [1.0 + math.log(count) if count else 0.0 for count in counts]
    # Sum the squares in bucket order, one addition at a time, as the reference
    # does: numpy's pairwise summation (and Python 3.12's compensated `sum`)
    # could round the last bit differently.
    total = 0.0
    for weight in weights:
        total += weight * weight
    norm = math.sqrt(total)
    if norm > 0.0:
        weights = [weight / norm for weight in weights]
    return weights


def hashbag_vector(text: str) -> np.ndarray:
    """The unit-length (or all-zero) ``float64`` hashbag vector of ``text``."""
    return np.array(_weights(text), dtype=np.float64)


def dot(left: np.ndarray, right: np.ndarray) -> float:
    """Dot product summed in index order, one addition at a time (bit-exact)."""
    total = 0.0
    for a, b in zip(left.tolist(), right.tolist(), strict=True):
        total += a * b
    return total


def hashbag_score(query: str, text: str) -> float:
    """Cosine of the two hashbag vectors (their dot product; in ``[0, 1]``).

    Summed sequentially in bucket order, so the float is the one ``hql``'s
    ``lexical`` prints, bit for bit.  A vectorised ranking may use a matrix
    product instead and agree to within a few ulps.
    """
    return dot(hashbag_vector(query), hashbag_vector(text))
