"""Link suggestions: the strongest pairs of near cards that no link joins yet.

``suggest_links(relatedness, limit=50, progress=None, cancelled=None) -> Suggestions``
    Every card's nearest ``PER_CARD`` cards, pairs a link (or relation) already
    joins dropped, each unordered pair once (its larger score), best first,
    ties by the two names. ``progress(done, total)`` is told as cards are done;
    ``cancelled()`` returning True stops early (``complete`` is then False);
    ``blas_threads`` holds numpy's BLAS to that many threads meanwhile (the app: 1).

The score is ``related``'s own (``hqltui.related.v1``: card vectors + the
lexical part) on vaults of up to ``FULL_SCORE_CARDS`` cards. Above that the
all-pairs pass uses card vectors alone, in blocks of one matrix product,
because the lexical part costs a few posting lists per card and would not fit
the screen's budget on a vault of 17k cards; ``method`` says which ran, and
the screen shows it. Passages are never compared all-pairs (they would not
fit either).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from hqltui.core.ranking import Refusal, Warning
from hqltui.core.related import VECTOR_ONLY, Provenance, Relatedness

PER_CARD = 5
FULL_SCORE_CARDS = 5000
BLOCK = 256
LIMIT = 50


@dataclass(frozen=True)
class Suggestion:
    source: str
    target: str
    score: float
    vector: float
    lexical: float | None
    shared: tuple[str, ...] = ()  # the words weighing most in the lexical part

    def why(self) -> str:
        """``vec 0.787 + lex 0.394 · tytonidae, owl, relation``: the parts, the shared words."""
        text = f"vec {self.vector:.3f}"
        if self.lexical is not None:
            text += f" + lex {self.lexical:.3f}"
        if self.shared:
            text += " · " + ", ".join(self.shared)
        return text

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "score": self.score,
                "vector": self.vector, "lexical": self.lexical, "shared": list(self.shared),
                "link": f"[[{self.target}]]"}


@dataclass(frozen=True)
class Suggestions:
    pairs: tuple[Suggestion, ...] = ()
    provenance: Provenance | None = None
    warnings: tuple[Warning, ...] = ()
    refusal: Refusal | None = None
    complete: bool = True
    cards: int = 0  # cards whose neighbours were looked at

    def to_json(self) -> dict[str, Any]:
        return {
            "suggestions": [p.to_json() for p in self.pairs],
            "complete": self.complete,
            "cards": self.cards,
            "provenance": None if self.provenance is None else self.provenance.to_json(),
            "warnings": [w.to_json() for w in self.warnings],
            "refusal": None if self.refusal is None else self.refusal.to_json(),
        }


Best = dict[tuple[int, int], tuple[float, float, "float | None", int, int]]


def _offer(best: Best, at: int, other: int, s: float, v: float, lex: float | None,
           names: tuple[str, ...], links: frozenset[frozenset[str]]) -> None:
    """Keep the pair (at, other) when it is unlinked and beats what is kept for it."""
    if s <= 0.0 or frozenset((names[at], names[other])) in links:
        return
    pair = (min(at, other), max(at, other))
    if pair not in best or s > best[pair][0]:
        best[pair] = (s, v, lex, at, other)


def _keep(best: Best, at: int, score: np.ndarray, vector: np.ndarray,
          lexical: np.ndarray | None, names: tuple[str, ...],
          links: frozenset[frozenset[str]]) -> None:
    """One card's ``PER_CARD`` nearest, scored with ``related``'s own score."""
    count = min(PER_CARD, score.size - 1)
    if count <= 0:
        return
    for other in np.argpartition(-score, count)[:count].tolist():
        lex = None if lexical is None else float(lexical[other])
        _offer(best, at, other, float(score[other]), float(vector[other]), lex, names, links)


def _keep_block(best: Best, rows: np.ndarray, matrix: np.ndarray, usable: np.ndarray,
                hashes: np.ndarray, names: tuple[str, ...],
                links: frozenset[frozenset[str]]) -> None:
    """A block of cards' ``PER_CARD`` nearest by card vectors: one matrix product and
    one partition for the whole block."""
    block = matrix[rows] @ matrix.T
    block[:, ~usable] = 0.0
    block[hashes[rows][:, None] == hashes[None, :]] = 0.0  # itself and identical texts
    count = min(PER_CARD, block.shape[1] - 1)
    if count <= 0:
        return
    near = np.argpartition(block, -count, axis=1)[:, -count:]  # no negated copy: half the time
    values = np.take_along_axis(block, near, axis=1).astype(np.float64)
    for k, at in enumerate(rows.tolist()):
        for other, s in zip(near[k].tolist(), values[k].tolist(), strict=True):
            _offer(best, at, other, s, s, None, names, links)


def _blas_threads(limit: int | None) -> Any:
    """A context holding numpy's BLAS to ``limit`` threads (None: leave it as it is).

    The app computes suggestions in a worker beside its UI thread; on two cores the
    pass's matrix products would otherwise take both, and keystrokes wait for them."""
    if limit is None:
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=limit, user_api="blas")


def suggest_links(
    relatedness: Relatedness,
    limit: int = LIMIT,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    full_score_cards: int = FULL_SCORE_CARDS,
    blas_threads: int | None = None,
) -> Suggestions:
    session = relatedness.session
    ix = session.index
    if ix is None:
        refusal = session.index_refusal
        assert refusal is not None
        return Suggestions(refusal=refusal)
    names = session.names
    full = len(names) <= full_score_cards
    provenance = relatedness.provenance()
    assert provenance is not None
    if not full:
        provenance = Provenance(method=VECTOR_ONLY, index=ix.path, model=ix.model,
                                revision=ix.revision, metric=ix.metric)
    usable = ix.present & ~ix.excluded
    hashes = relatedness.hashes
    links = relatedness.links
    best: Best = {}
    todo = np.flatnonzero(usable)
    total = int(todo.size)
    done = 0
    complete = True
    matrix = ix.matrix
    with _blas_threads(blas_threads):
        for lo in range(0, total, BLOCK):
            if cancelled is not None and cancelled():
                complete = False
                break
            rows = todo[lo:lo + BLOCK]
            if full:
                for at in rows.tolist():
                    score, vector, lexical = relatedness.scores(at)
                    score[at] = 0.0
                    _keep(best, at, score, vector, lexical, names, links)
                    time.sleep(0)  # let a UI thread in between cards (this loop holds the GIL)
            else:
                _keep_block(best, rows, matrix, usable, hashes, names, links)
            done += len(rows)
            if progress is not None:
                progress(done, total)
    # The card whose neighbour list held the pair's larger score is its source.
    ordered = sorted(best.values(), key=lambda p: (-p[0], names[min(p[3], p[4])],
                                                    names[max(p[3], p[4])]))
    pairs = tuple(
        Suggestion(
            source=names[a], target=names[b], score=s, vector=v, lexical=lex,
            shared=tuple(relatedness.why(names[a], names[b])) if lex is not None else (),
        )
        for s, v, lex, a, b in ordered[:limit]
    )
    return Suggestions(pairs, provenance, relatedness.warnings(), complete=complete, cards=done)
