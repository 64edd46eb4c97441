"""Related cards: the cards nearest to a card, from the index alone (no model runs).

Public API:

``Relatedness(session)``
    One snapshot's related-card scorer. The link pairs, content-hash groups
    and lexical weights are made once, on first need (``prepare()`` makes them
    now, e.g. in a worker).

``relatedness.related(name, limit=10) -> Related``
    The neighbours of card ``name`` best first, each with its ``score``, its
    parts (``vector``, ``lexical``), whether a link already joins the two
    (``linked``: a ``[[link]]`` either way, or a relation card naming both),
    and its index status; exact duplicates (same ``content_hash``) listed
    apart in ``duplicates``, never as neighbours; the provenance (method, model,
    revision, index). ``KeyError`` for a name that is not a card.

The score (method ``METHOD``) is ``cos(card vectors) + LEXICAL_WEIGHT ×
card_terms.row`` (the cosine of the two cards' bm25 term weights, the source
card's heaviest ``TERMS`` terms). Each part is shown per neighbour, so every
rank can be explained. Both parts and the weight were chosen on the man2+man3
SEE ALSO benchmark and checked on man1 (``benchmarks/bench_related.py``).

Card vectors only: an index with passages is still read by its card vectors
here, because every passage of one card against every passage of all others
does not fit the per-card budget on a large vault; the provenance says
``vectors: card``.

The index rules are the semantic arm's: stale cards are ranked and warned;
cards absent from the index are not neighbours (one counted warning);
orphans are reported; a card without a usable vector is a refusal that says
so; no index is the index's refusal. When the lexical weights cannot be made
(the bm25 arm refused), the vector part answers alone and both the method
(``vector``) and a warning say so: never a silent change of method.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hqltui.core.card_terms import TERMS, CardTerms
from hqltui.core.ranking import Refusal, Warning, rank_indices
from hqltui.core.stages import guarded

METHOD = "hqltui.related.v1"  # card vectors + lexical
VECTOR_ONLY = "vector"
LEXICAL_WEIGHT = 2.0
LIMIT = 10
ANSWERS_KEPT = 1024


@dataclass(frozen=True)
class Neighbour:
    card: str
    score: float
    rank: int
    linked: bool
    vector: float  # cosine of the two card vectors
    lexical: float | None  # cosine of the bm25 term weights (None: vector only)
    status: str  # the neighbour's index status: fresh | stale

    def to_json(self) -> dict[str, Any]:
        return {"card": self.card, "score": self.score, "rank": self.rank, "linked": self.linked,
                "vector": self.vector, "lexical": self.lexical, "status": self.status}


@dataclass(frozen=True)
class Provenance:
    method: str
    index: str
    model: str
    revision: str
    metric: str
    vectors: str = "card"
    lexical_model: str | None = None
    lexical_weight: float | None = None
    terms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def label(self) -> str:
        """One line: what produced the scores."""
        short = self.revision[:19] if self.revision.startswith("sha256:") else self.revision
        text = f"{self.model} {short} · {self.metric} of card vectors"
        if self.lexical_weight is not None:
            text += f" + {self.lexical_weight:g}× {self.lexical_model} term cosine"
        return text


@dataclass(frozen=True)
class Related:
    card: str
    neighbours: tuple[Neighbour, ...] = ()
    duplicates: tuple[str, ...] = ()
    provenance: Provenance | None = None
    warnings: tuple[Warning, ...] = ()
    refusal: Refusal | None = None
    total: int = 0  # cards with a score above zero before the limit

    @property
    def ok(self) -> bool:
        return self.refusal is None

    def to_json(self) -> dict[str, Any]:
        return {
            "card": self.card,
            "neighbours": [n.to_json() for n in self.neighbours],
            "duplicates": list(self.duplicates),
            "total": self.total,
            "provenance": None if self.provenance is None else self.provenance.to_json(),
            "warnings": [w.to_json() for w in self.warnings],
            "refusal": None if self.refusal is None else self.refusal.to_json(),
        }


def link_pairs(vault: Any) -> frozenset[frozenset[str]]:
    """Every pair of cards a link joins: ``[[target]]`` either way, and for a relation
    card its source with its target and the relation card with each of them."""
    pairs: set[frozenset[str]] = set()
    for card in vault.cards:
        for link in card.links:
            if link.target in vault.by_name and link.target != card.name:
                pairs.add(frozenset((card.name, link.target)))
    for relation in vault.relations:
        ends = (relation.card, relation.source, relation.target)
        for i, a in enumerate(ends):
            for b in ends[i + 1:]:
                if a != b:
                    pairs.add(frozenset((a, b)))
    return frozenset(pairs)


@dataclass(repr=False)  # its repr would print the whole session
class Relatedness:
    session: Any  # hqltui.core.session.Session
    lexical_weight: float = LEXICAL_WEIGHT
    terms: int = TERMS
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _made: dict[str, Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ made once

    def _once(self, key: str, make: Any) -> Any:
        with self._lock:
            if key not in self._made:
                self._made[key] = make()
            return self._made[key]

    @property
    def links(self) -> frozenset[frozenset[str]]:
        return self._once("links", lambda: link_pairs(self.session.vault))

    @property
    def positions(self) -> dict[str, int]:
        return self._once("positions", lambda: {n: i for i, n in enumerate(self.session.names)})

    @property
    def hashes(self) -> np.ndarray:
        """Each card's content hash as a small integer (equal texts, equal ids)."""
        def make() -> np.ndarray:
            ids: dict[str, int] = {}
            return np.array([ids.setdefault(c.content_hash, len(ids))
                             for c in self.session.vault.cards], dtype=np.int64)
        return self._once("hashes", make)

    @property
    def card_terms(self) -> CardTerms | Refusal:
        def make() -> CardTerms | Refusal:
            built = self.session.lexical["bm25"]
            if isinstance(built, Refusal):
                return built
            return guarded("related", "cannot weigh terms", lambda: CardTerms(built))
        return self._once("terms", make)

    def prepare(self) -> None:
        """Make everything ``related`` reads (the index, links, hashes, term weights)."""
        self.session.open_index()
        _ = self.links, self.positions, self.hashes, self.card_terms

    # ------------------------------------------------------------------ answers

    def provenance(self) -> Provenance | None:
        ix = self.session.index
        if ix is None:
            return None
        lexical = not isinstance(self.card_terms, Refusal) and self.lexical_weight > 0
        from hqltui.core.bm25_analyser import BM25_MODEL

        return Provenance(
            method=METHOD if lexical else VECTOR_ONLY,
            index=ix.path, model=ix.model, revision=ix.revision, metric=ix.metric,
            lexical_model=BM25_MODEL if lexical else None,
            lexical_weight=self.lexical_weight if lexical else None,
            terms=self.terms if lexical else None,
        )

    def warnings(self) -> tuple[Warning, ...]:
        ix = self.session.index
        out = list(ix.warnings()) if ix is not None else []
        terms = self.card_terms
        if isinstance(terms, Refusal) and self.lexical_weight > 0:
            out.append(Warning("arm", f"related cards use card vectors alone: {terms.message}"))
        return tuple(out)

    def duplicates(self, name: str) -> tuple[str, ...]:
        at = self.positions[name]
        same = np.flatnonzero(self.hashes == self.hashes[at])
        return tuple(self.session.names[i] for i in same.tolist() if i != at)

    def linked(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.links

    def scores(self, position: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(score, vector part, lexical part) of every card against the card at
        ``position``; the card itself, its duplicates and cards without a usable
        vector score 0 (no evidence)."""
        ix = self.session.index
        assert ix is not None
        vector = (ix.matrix @ ix.matrix[position]).astype(np.float64)
        terms = self.card_terms
        lexical = None
        total = vector.copy()
        if not isinstance(terms, Refusal) and self.lexical_weight > 0:
            lexical = terms.row(position, self.terms)
            total += self.lexical_weight * lexical
        usable = ix.present & ~ix.excluded & (self.hashes != self.hashes[position])
        total[~usable] = 0.0
        return total, vector, lexical

    def related(self, name: str, limit: int = LIMIT) -> Related:
        """The answer for ``name`` (kept: a snapshot's answers never change, and the card
        pane asks again on every paint)."""
        key = (name, limit)
        answers: dict[tuple[str, int], Related] = self._once("answers", dict)
        if key not in answers:
            if len(answers) >= ANSWERS_KEPT:
                answers.clear()
            answers[key] = self._related(name, limit)
        return answers[key]

    def _related(self, name: str, limit: int) -> Related:
        session = self.session
        at = self.positions[name]  # KeyError: not a card
        duplicates = self.duplicates(name)
        ix = session.index
        if ix is None:
            refusal = session.index_refusal
            assert refusal is not None
            return Related(name, duplicates=duplicates, refusal=refusal)
        warnings = self.warnings()
        provenance = self.provenance()
        if not ix.present[at] or ix.excluded[at]:
            why = "has no vector in the index" if not ix.present[at] else (
                "has no usable vector in the index")
            return Related(name, duplicates=duplicates, provenance=provenance, warnings=warnings,
                           refusal=Refusal(f"`{name}` {why}, so nothing can be said to be "
                                           "near it", ix.fix))
        total, vector, lexical = self.scores(at)
        chosen, count = rank_indices(total, limit)
        statuses = ix.status
        neighbours = tuple(
            Neighbour(
                card=session.names[i], score=float(total[i]), rank=r,
                linked=self.linked(name, session.names[i]), vector=float(vector[i]),
                lexical=None if lexical is None else float(lexical[i]), status=statuses(i),
            )
            for r, i in enumerate(chosen.tolist(), start=1)
        )
        if ix.stale[at]:
            warnings = (Warning("stale", f"`{name}` changed since the index was built: its "
                                "neighbours are those of its indexed text", (name,)), *warnings)
        return Related(name, neighbours, duplicates, provenance, warnings, total=count)

    def why(self, name: str, other: str, count: int = 3) -> list[str]:
        """The words the two cards share that weigh most in the lexical part."""
        terms = self.card_terms
        if isinstance(terms, Refusal):
            return []
        position = self.positions
        return terms.shared(position[name], position[other], count, self.terms)
