"""Both lexical arms' structures for one list of texts, at once (tests and benchmarks).

A ``Session`` builds the two separately (``hqltui.core.stages``), so that one that
cannot be built refuses alone; this bundles them for callers that want both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hqltui.core.bm25_analyser import BM25_TERMS
from hqltui.core.lexical import BM25, HASHBAG_TOKENS, Hashbag, TermCounts


class LexicalIndex:
    """Both lexical arms' structures for a list of texts (aligned with the card order).

    A convenience for callers that want both at once (a ``Session`` builds the
    two separately, so that one that cannot be built refuses alone).
    """

    def __init__(self, texts: Sequence[str]) -> None:
        counts = TermCounts(texts, HASHBAG_TOKENS)
        self.size = counts.size
        self.vocab = counts.vocab
        self.doc_len = counts.doc_len
        self.hashbag_arm = Hashbag(counts)
        self.bm25_arm = BM25(TermCounts(texts, BM25_TERMS))

    @property
    def hashbag(self) -> np.ndarray:
        """The (cards, 256) hashbag matrix (a view; each row is ``hashbag_vector``)."""
        return self.hashbag_arm.columns.T

    def hashbag_scores(self, query: str) -> np.ndarray:
        """Every card's hashbag score, by one matrix-vector product (within ~1e-15)."""
        return self.hashbag_arm.scores(query)

    def exact_hashbag(self, query: str, positions: np.ndarray) -> np.ndarray:
        """Scores of the cards at ``positions``, summed in bucket order: bit-exact."""
        return self.hashbag_arm.exact(query, positions)

    def bm25_scores(self, query: str) -> np.ndarray:
        """Every card's BM25 score for ``query`` (0 where no query token occurs)."""
        return self.bm25_arm.scores(query)
