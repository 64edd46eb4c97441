"""The retrieval arms and the fusion methods: one registry each, the only list of them.

An arm declares its name, its kind (``lexical`` or ``semantic``), how it scores
and the record its retrieval carries (model, revision, metric). The session, the
``query`` and ``eval`` commands, the JSON, ``[search] lexical`` and the app read
these registries; adding an arm is its name and kind in ``hqltui.core.names`` (what
menus and the config read without loading numpy) and its scorer here (and its test).

* A **lexical** arm builds a structure once per vault snapshot from the term
  counts of its ``analyser`` (``build``; hashbag's tokens, or bm25's own
  analyser: ``hqltui.core.bm25_analyser``) and scores a query with it (``score``: every card's
  score, aligned with the vault's names; ``cut`` is the deepest rank anyone will
  read, so an arm may refine only what can decide it).
* The **semantic** arm scores with the vault's embedding index; the session does
  that (the index, the query vector and its provenance belong to the session).
  Where the index holds passages it scores each card by its vector and its best passage
  (``hqltui.core.passage_scores``): a mode of this one arm, not a second arm, so
  hybrid fuses one semantic ranking and every ranking goes through the one
  rank order; ``Session.card_level()`` turns the mode off (``eval`` reports
  both, ``semantic`` and ``semantic[cards]``).
* **hybrid** fuses one lexical arm with the semantic arm by a fusion method
  named in ``FUSIONS`` (``rrf``, ``convex``, ``adaptive``: ``hqltui.core.fusion``;
  their names and summaries live in ``hqltui.core.names``, their only home);
  ``DEFAULT_FUSION`` is the one chosen by measurement (docs/ranking.md, "Choosing the
  default fusion").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hqltui.core import fusion, hybrid
from hqltui.core.bm25_analyser import BM25_MODEL, BM25_REVISION, BM25_TERMS
from hqltui.core.lexical import (
    BM25,
    HASHBAG_MODEL,
    HASHBAG_REVISION,
    HASHBAG_TOKENS,
    Analyser,
    Hashbag,
    TermCounts,
)
from hqltui.core.names import ARM_KINDS, LEXICAL, LEXICAL_ARMS
from hqltui.core.ranking import refine

# The hashbag's float32 matrix product is exact enough to rank all but near-ties;
# those (scores within this of the cut) are summed again exactly.
HASHBAG_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str  # LEXICAL | SEMANTIC
    metric: str
    model: str = ""  # empty for the semantic arm: the index names its model
    revision: str = ""
    build: Callable[[TermCounts], Any] | None = None  # lexical: structure from the counts
    score: Callable[[Any, str, int | None], np.ndarray] | None = None  # (built, text, cut)
    analyser: Analyser = HASHBAG_TOKENS  # lexical: how its counts, snippets and marks split text


def _hashbag_scores(built: Hashbag, text: str, cut: int | None) -> np.ndarray:
    # One matrix product, then exact sums wherever a score can decide the cut.
    return refine(built.scores(text), lambda at: built.exact(text, at), cut, HASHBAG_TOLERANCE)


def _bm25_scores(built: BM25, text: str, cut: int | None) -> np.ndarray:
    return built.scores(text)


# How each arm of ``names.ARM_KINDS`` scores (its kind and order come from there).
_SCORERS: dict[str, dict[str, Any]] = {
    "hashbag": {"metric": "cosine", "model": HASHBAG_MODEL, "revision": HASHBAG_REVISION,
                "build": Hashbag, "score": _hashbag_scores, "analyser": HASHBAG_TOKENS},
    "bm25": {"metric": "bm25", "model": BM25_MODEL, "revision": BM25_REVISION, "build": BM25,
             "score": _bm25_scores, "analyser": BM25_TERMS},
    "semantic": {"metric": "cosine"},
}
ARMS: dict[str, Arm] = {name: Arm(name, kind, **_SCORERS[name])
                        for name, kind in ARM_KINDS.items()}

# What hybrid uses when `[search]` names no fusion (and sets neither rrf_k nor weights):
# chosen by measurement on the frozen real-corpus sets and the birds fixture.
DEFAULT_FUSION = fusion.FusionConfig(method=fusion.ADAPTIVE, norm="max")
fuse = hybrid.fuse


def lexical_arm(name: str) -> Arm:
    """The lexical arm ``name``; ``ValueError`` naming the accepted ones otherwise."""
    arm = ARMS.get(name)
    if arm is None or arm.kind != LEXICAL:
        raise ValueError(f"unknown lexical arm `{name}`; accepted: {', '.join(LEXICAL_ARMS)}")
    return arm


def is_lexical(name: str) -> bool:
    return name in LEXICAL_ARMS
