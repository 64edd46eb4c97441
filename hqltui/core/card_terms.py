"""Card-to-card lexical similarity: the cosine of two cards' bm25 term weights.

``related`` adds this to the card vectors' cosine because on man pages it
recovers more of the authors' SEE ALSO lists than vectors alone (the figures
are in ``benchmarks/README.md``, "Related cards"): related pages share rare
identifiers (``O_CLOEXEC``, ``pthread_attr_t``) that a 384-dimension vector
of the first 256 tokens blurs.

Each card is a vector over the vault's terms whose entries are the bm25 arm's
own posting weights (idf × saturated term frequency, length-normalised), L2
normalised. The source card keeps only its ``TERMS`` heaviest terms (the
"more like this" cut: rare, repeated words), so one card's row costs a few
short posting lists, not the whole vocabulary. Built once per snapshot from
the session's ``BM25`` structure; no second tokenising pass.
"""

from __future__ import annotations

import numpy as np

from hqltui.core.lexical import BM25

TERMS = 64  # the source card's heaviest terms that score its neighbours


class CardTerms:
    """Every card's normalised bm25 term weights, by card and by term."""

    def __init__(self, bm25: BM25) -> None:
        n = bm25.size
        self.size = n
        docs = bm25.post_docs.astype(np.int64)
        norms = np.sqrt(np.bincount(docs, weights=bm25.post_weight**2, minlength=n))
        norms[norms == 0.0] = 1.0
        self.weight = bm25.post_weight / norms[docs]  # term-major, as the bm25 postings
        self.docs = bm25.post_docs
        self.term_ptr = bm25.term_ptr
        self.post_term = np.repeat(np.arange(bm25.df.size, dtype=np.int64), bm25.df)
        self.by_card = np.argsort(docs, kind="stable")  # postings of card i: a slice
        self.card_ptr = np.concatenate(([0], np.cumsum(np.bincount(docs, minlength=n))))
        self._vocab = bm25.vocab
        self._words: list[str] | None = None

    def _postings(self, position: int) -> np.ndarray:
        return self.by_card[self.card_ptr[position]:self.card_ptr[position + 1]]

    def heaviest(self, position: int, terms: int = TERMS) -> tuple[np.ndarray, np.ndarray]:
        """The card's ``terms`` heaviest term ids and their weights, heaviest first."""
        own = self._postings(position)
        weights = self.weight[own]
        top = np.lexsort((self.post_term[own], -weights))[:terms]
        return self.post_term[own][top], weights[top]

    def row(self, position: int, terms: int = TERMS) -> np.ndarray:
        """Every card's similarity to the card at ``position`` (its heaviest terms only)."""
        out = np.zeros(self.size, dtype=np.float64)
        for term, weight in zip(*self.heaviest(position, terms), strict=True):
            lo, hi = self.term_ptr[term], self.term_ptr[term + 1]
            out[self.docs[lo:hi]] += weight * self.weight[lo:hi]
        return out

    def shared(self, position: int, other: int, count: int = 3, terms: int = TERMS) -> list[str]:
        """The words that add most to ``row(position)[other]``: the "why" of a neighbour."""
        ids, weights = self.heaviest(position, terms)
        theirs = self._postings(other)
        their_weight = dict(zip(self.post_term[theirs].tolist(), self.weight[theirs].tolist(),
                                strict=True))
        parts = [(w * their_weight[t], t) for t, w in zip(ids.tolist(), weights.tolist(),
                                                           strict=True) if t in their_weight]
        parts.sort(key=lambda p: (-p[0], p[1]))
        return [self.word(t) for _, t in parts[:count]]

    def word(self, term: int) -> str:
        if self._words is None:
            words = [""] * len(self._vocab)
            for raw, tid in self._vocab.items():
                words[tid] = raw.decode("utf-8", "replace")
            self._words = words
        return self._words[term]
