"""hashbag's tokeniser and scorer (``hql.hashbag.v1``), and both lexical arms' structures.

This module is the single home of hashbag's tokenising rule (``tokens``: what
``hql`` does, bit for bit; the engine is sent these tokens too). bm25 has an
analyser of its own (``hqltui.core.bm25_analyser``); each arm names its
``Analyser`` (``hqltui.core.arms``), and every part that splits text for an arm
(its term counts, the fusion signals, snippets, highlighting) asks that one.

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

One snapshot's structures are built once: ``TermCounts`` (the vocabulary and
per-card term counts, by one analyser), then from hashbag's counts ``Hashbag``
(the matrix, one column per card, each bit-for-bit the scalar ``hashbag_vector``)
and from bm25's counts ``BM25`` (the inverted index, postings with their
precomputed term weights), so a session can let one of them refuse without the
other (``hqltui.core.lexical_index`` bundles them).

* ``hashbag_scores(query)`` is one matrix-vector product; the positions that
  can reach the requested cut are then rescored with sequential sums
  (``exact_hashbag``) so every score shown equals ``hashbag_score`` bit for bit.
* ``bm25_scores(query)`` is Okapi BM25 (``k1 = 1.2``, ``b = 0.75``,
  ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``) over the terms of bm25's analyser,
  summed over the query's terms with their repeats; its model id is
  ``hqltui.bm25.v2`` (v1 scored hashbag's tokens).

Only ``numpy`` and ``regex`` are needed: no Textual, no torch.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import regex

__all__ = [
    "Analyser",
    "HASHBAG_TOKENS",
    "BM25_B",
    "BM25_K1",
    "BM25",
    "Hashbag",
    "TermCounts",
    "FNV_OFFSET_BASIS",
    "FNV_PRIME",
    "HASHBAG_DIMENSIONS",
    "HASHBAG_MODEL",
    "HASHBAG_REVISION",
    "bucket",
    "damped",
    "dot",
    "fnv1a64",
    "hashbag_score",
    "hashbag_vector",
    "token_bytes",
    "tokens",
    "word_bytes",
]

HASHBAG_MODEL = "hql.hashbag.v1"
HASHBAG_REVISION = "0.1.0"
HASHBAG_DIMENSIONS = 256

BM25_K1 = 1.2
BM25_B = 0.75

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


def token_spans(text: str) -> list[tuple[int, int]]:
    """Where each of ``tokens(text)`` sits in ``text``: ``(start, end)`` character offsets.

    ``[text[a:b].lower() for a, b in token_spans(text)] == tokens(text)``, so a
    display can mark exactly the pieces the lexical arms compare.
    """
    return list(iter_token_spans(text))


def iter_token_spans(text: str) -> Iterator[tuple[int, int]]:
    """``token_spans`` one at a time, so a caller looking for one token stops early."""
    start = 0
    for sep in _SEPARATORS.finditer(text):
        if len(text[start : sep.start()].encode("utf-8")) > 1:
            yield (start, sep.start())
        start = sep.end()
    if len(text[start:].encode("utf-8")) > 1:
        yield (start, len(text))


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
    """The UTF-8 bytes of ``slow(text)``, with ``slow`` run only on non-ASCII words: the
    fast path both lexical tokenisers share for text that is mostly ASCII.

    For ASCII both rules reduce to: lowercase, split on everything but
    ``[a-z0-9]``, drop pieces of one byte. So the whole text is folded that way
    as bytes, and only the words holding a non-ASCII character go through
    ``slow`` (a word ends at an ASCII separator, which no multi-byte UTF-8
    sequence contains; ASCII letters lowercased first change neither byte
    lengths, nor the final-sigma context, nor what bm25's analyser folds them to).
    """
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


def token_bytes(text: str) -> list[bytes]:
    """The UTF-8 bytes of ``tokens(text)``, fast for text that is mostly ASCII
    (``tokens`` measures a piece before lowercasing, so the Kelvin sign stays as ``k``)."""
    return word_bytes(text, tokens)


class Analyser:
    """How one lexical arm splits text: ``counts`` a card's terms as UTF-8 bytes (what
    ``TermCounts`` counts), ``query`` a query's terms, ``spans`` each term of a text
    with the span of the original characters it came from (what a display marks).
    ``name`` keys the term-count cache. hashbag's is ``HASHBAG_TOKENS``; bm25's is
    ``bm25_analyser.BM25_TERMS``."""

    __slots__ = ("name", "counts", "query", "spans")

    def __init__(self, name: str, counts: Callable[[str], list[bytes]],
                 query: Callable[[str], list[str]],
                 spans: Callable[[str], Iterable[tuple[str, int, int]]]) -> None:
        self.name, self.counts, self.query, self.spans = name, counts, query, spans

    def __repr__(self) -> str:
        return f"Analyser({self.name!r})"


def _token_terms(text: str) -> Iterator[tuple[str, int, int]]:
    for start, end in iter_token_spans(text):
        yield text[start:end].lower(), start, end


# The counting function is looked up when called, so a test can put a real defect
# into it (``tests/broken_arms.py``).
HASHBAG_TOKENS = Analyser(HASHBAG_MODEL, lambda text: token_bytes(text), tokens, _token_terms)


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


# ------------------------------------------------------------- one snapshot's index

# ``1 + ln(c)`` for the small counts almost every bucket holds, computed once with
# ``math.log`` (the scalar code's function, so the floats are the same).
_TABLE_SIZE = 4096
_LOG_TABLE = np.array(
    [0.0] + [1.0 + math.log(c) for c in range(1, _TABLE_SIZE)], dtype=np.float64
)


def damped(counts: np.ndarray) -> np.ndarray:
    """``1 + ln(c)`` of every bucket count (0 for 0), bit-equal to the scalar ``_weights``.

    A bucket's count is the sum of the counts of every term hashed into it, so
    it can exceed any single term's count and is bounded only by the card's
    length. Small counts come from a table; the few beyond it (long, repetitive
    cards) are computed one by one with ``math.log``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    out = _LOG_TABLE[np.minimum(counts, _TABLE_SIZE - 1)]
    big = np.flatnonzero(counts >= _TABLE_SIZE)
    if big.size:
        out[big] = [1.0 + math.log(c) for c in counts[big].tolist()]
    return out


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for keys in ``[0, bound)``, by radix passes.

    numpy sorts 16-bit keys stably by radix (linear time); wider keys take one
    such pass per 16 bits, least significant first.
    """
    if bound <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = keys >> 16
    while bound > 1 << 16:
        order = order[np.argsort((high[order] & 0xFFFF).astype(np.uint16), kind="stable")]
        high = high >> 16
        bound >>= 16
    return order


class TermCounts:
    """Per-card term counts of a list of texts, by one analyser (default hashbag's):
    what a lexical arm is built from.

    ``terms``/``tf``/``docs`` are parallel arrays (one entry per distinct term
    of a card, cards in order); ``ptr[i]:ptr[i + 1]`` is card ``i``'s slice.
    """

    def __init__(self, texts: Sequence[str], analyser: Analyser = HASHBAG_TOKENS) -> None:
        # Terms are keyed by their UTF-8 bytes (what FNV-1a hashes).
        # A missing term gets the next id: ``vocab[t]`` inserts ``len(vocab)``.
        vocab: defaultdict[bytes, int] = defaultdict()
        vocab.default_factory = vocab.__len__
        term_ids = array("q")
        tfs = array("q")
        doc_ptr = array("q", [0])
        count = analyser.counts
        for text in texts:
            counts = Counter(count(text))
            term_ids.extend(map(vocab.__getitem__, counts))
            tfs.extend(counts.values())
            doc_ptr.append(len(term_ids))
        vocab.default_factory = None
        self._set(
            analyser,
            dict(vocab),
            np.frombuffer(term_ids, dtype=np.int64) if term_ids else np.zeros(0, np.int64),
            np.frombuffer(tfs, dtype=np.int64) if tfs else np.zeros(0, np.int64),
            np.frombuffer(doc_ptr, dtype=np.int64),
        )

    @classmethod
    def from_arrays(
        cls, vocab: dict[bytes, int], terms: np.ndarray, tf: np.ndarray, ptr: np.ndarray,
        analyser: Analyser = HASHBAG_TOKENS,
    ) -> TermCounts:
        """Counts made earlier (a cache): the same arrays ``__init__`` would make.

        ``ValueError`` when the arrays do not fit together, so a damaged cache is
        never scored from.
        """
        terms, tf, ptr = (np.asarray(a, dtype=np.int64) for a in (terms, tf, ptr))
        n = ptr.size - 1
        if (
            n < 0 or ptr[0] != 0 or terms.shape != tf.shape or int(ptr[-1]) != terms.size
            or (n and bool((np.diff(ptr) < 0).any()))
            or (terms.size and (int(terms.min()) < 0 or int(terms.max()) >= len(vocab)
                                or int(tf.min()) < 1))
        ):
            raise ValueError("term counts that do not fit together")
        made = cls.__new__(cls)
        made._set(analyser, vocab, terms, tf, ptr)
        return made

    def _set(
        self, analyser: Analyser, vocab: dict[bytes, int], terms: np.ndarray, tf: np.ndarray,
        ptr: np.ndarray,
    ) -> None:
        n = ptr.size - 1
        self.analyser = analyser
        self.size = n
        self.vocab = vocab
        self.terms = terms
        self.tf = tf
        self.ptr = ptr
        self.docs = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        self.doc_len = np.bincount(self.docs, weights=self.tf, minlength=n).astype(np.float64)


class DocFreq:
    """How many cards hold each term: the vault's document frequencies, which the
    adaptive fusion's IDF signal reads (the counts of the fused lexical arm's
    analyser; for bm25 the ones its idf uses). ``terms`` splits a query as they
    were counted."""

    def __init__(self, counts: TermCounts) -> None:
        self.size = counts.size
        self.terms = counts.analyser.query
        self.vocab = counts.vocab
        self.df = np.bincount(counts.terms, minlength=len(counts.vocab))
        self._terms, self._ptr = counts.terms, counts.ptr  # shared, not copied

    def holds(self, position: int, term: str) -> bool:
        """Whether the card at ``position`` holds ``term`` (one scan of that card's
        distinct terms: what the adaptive fusion's ``ident`` signal asks of two cards)."""
        tid = self.vocab.get(term.encode("utf-8"))
        if tid is None or not 0 <= position < self.size:
            return False
        own = self._terms[self._ptr[position]:self._ptr[position + 1]]
        return bool(np.any(own == tid))

    def of(self, text: str) -> dict[str, int]:
        """Each distinct term of ``text`` -> the number of cards holding it (0: none)."""
        out: dict[str, int] = {}
        for term in dict.fromkeys(self.terms(text)):
            tid = self.vocab.get(term.encode("utf-8"))
            out[term] = 0 if tid is None else int(self.df[tid])
        return out


class Hashbag:
    """The hashbag arm's matrix: one column per card, each bit-for-bit ``hashbag_vector``."""

    _CHUNK = 4096  # cards per block when filling the matrix

    def __init__(self, counts: TermCounts) -> None:
        n = counts.size
        self.size = n
        buckets = np.fromiter(
            (fnv1a64(t) % HASHBAG_DIMENSIONS for t in counts.vocab),
            dtype=np.int64,
            count=len(counts.vocab),
        )
        docs, terms, tf, ptr = counts.docs, counts.terms, counts.tf, counts.ptr
        # Bucket-major: a query touches only the rows of its own buckets.
        self.columns = np.zeros((HASHBAG_DIMENSIONS, n), dtype=np.float64)
        for start in range(0, n, self._CHUNK):
            stop = min(n, start + self._CHUNK)
            lo, hi = int(ptr[start]), int(ptr[stop])
            flat = (docs[lo:hi] - start) * HASHBAG_DIMENSIONS + buckets[terms[lo:hi]]
            summed = np.bincount(flat, weights=tf[lo:hi], minlength=(stop - start) * 256)
            weights = damped(summed.astype(np.int64)).reshape(stop - start, HASHBAG_DIMENSIONS)
            # np.cumsum adds left to right, one term at a time: the scalar code's order.
            norms = np.sqrt(np.cumsum(weights * weights, axis=1)[:, -1])
            nonzero = norms > 0.0
            weights[nonzero] /= norms[nonzero, None]
            self.columns[:, start:stop] = weights.T

    def scores(self, query: str) -> np.ndarray:
        """Every card's score by one matrix-vector product (within ~1e-15 of the scalar).

        Buckets where the query is zero add nothing, so the product runs over
        the query's non-zero buckets only (the rows of the bucket-major matrix).
        """
        q = hashbag_vector(query)
        nz = np.flatnonzero(q)
        if nz.size == 0:
            return np.zeros(self.size, dtype=np.float64)
        return q[nz] @ self.columns[nz]

    def exact(self, query: str, positions: np.ndarray) -> np.ndarray:
        """Scores of the cards at ``positions``, summed in bucket order: bit-exact.

        The scalar scorer adds ``a * b`` for all 256 buckets in order; the terms
        where the query is zero are ``+0.0`` and leave a non-negative running sum
        unchanged, so summing the non-zero buckets in order gives the same float.
        """
        q = hashbag_vector(query)
        nz = np.flatnonzero(q)
        if positions.size == 0 or nz.size == 0:
            return np.zeros(positions.size, dtype=np.float64)
        products = self.columns[np.ix_(nz, positions)] * q[nz, None]
        return np.cumsum(products, axis=0)[-1]


class BM25:
    """The bm25 arm's inverted index: postings grouped by term, with their term weights."""

    def __init__(self, counts: TermCounts) -> None:
        n = counts.size
        self.size = n
        self.vocab = counts.vocab
        self.terms = counts.analyser.query
        terms, tf = counts.terms, counts.tf
        order = _stable_order(terms, len(counts.vocab))
        self.post_docs = counts.docs[order].astype(np.int32)
        post_tf = tf[order].astype(np.float64)
        df = np.bincount(terms, minlength=len(counts.vocab))
        self.term_ptr = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
        self.df = df
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        doc_len = counts.doc_len
        avgdl = float(doc_len.mean()) if n and doc_len.sum() > 0 else 1.0
        self.avgdl = avgdl
        dl = doc_len[self.post_docs]
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl)
        self.post_weight = np.repeat(idf, df) * (post_tf * (BM25_K1 + 1.0)) / (post_tf + norm)

    def scores(self, query: str) -> np.ndarray:
        """Every card's BM25 score for ``query`` (0 where no query term occurs)."""
        scores = np.zeros(self.size, dtype=np.float64)
        for term, times in Counter(self.terms(query)).items():
            tid = self.vocab.get(term.encode("utf-8"))
            if tid is None:
                continue
            lo, hi = self.term_ptr[tid], self.term_ptr[tid + 1]
            scores[self.post_docs[lo:hi]] += times * self.post_weight[lo:hi]
        return scores
