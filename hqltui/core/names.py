"""The arms' and fusion methods' names, kinds and one-line summaries, without numpy.

Menus, keys, column titles and the config read only these; the app's first frame
imports this module and nothing of the scorers (``hqltui.core.arms`` builds the arm
registry from ``ARM_KINDS``, ``hqltui.core.fusion`` implements ``METHODS``), so each
list still exists once and numpy loads where the vault is read.
"""

from __future__ import annotations

from dataclasses import dataclass

LEXICAL = "lexical"
SEMANTIC = "semantic"
HYBRID = "hybrid"  # the fused ranking's name wherever arms are listed

# Every arm and its kind, in the order they are listed (``arms.ARMS`` follows it).
ARM_KINDS: dict[str, str] = {"hashbag": LEXICAL, "bm25": LEXICAL, "semantic": SEMANTIC}
LEXICAL_ARMS: tuple[str, ...] = tuple(n for n, kind in ARM_KINDS.items() if kind == LEXICAL)
# The lexical arm when `[search] lexical` names none; menus list it first.
DEFAULT_LEXICAL = "bm25"
LEXICAL_CHOICES: tuple[str, ...] = (
    DEFAULT_LEXICAL, *(a for a in LEXICAL_ARMS if a != DEFAULT_LEXICAL)
)
SEMANTIC_ARMS: tuple[str, ...] = tuple(n for n, kind in ARM_KINDS.items() if kind == SEMANTIC)
# What `--mode` accepts and `query --mode all` lists, in this order.
RANKINGS: tuple[str, ...] = (*ARM_KINDS, HYBRID)

RRF, CONVEX, ADAPTIVE = "rrf", "convex", "adaptive"
METHODS: tuple[str, ...] = (RRF, CONVEX, ADAPTIVE)


@dataclass(frozen=True)
class Fusion:
    name: str
    metric: str  # what a hybrid retrieval's provenance names as its metric
    summary: str  # one line: what the palette and the help say


FUSIONS: dict[str, Fusion] = {
    f.name: f
    for f in (
        Fusion(RRF, "reciprocal rank", "reciprocal rank fusion (k, weights)"),
        Fusion(CONVEX, "convex combination",
               "convex combination of normalised scores (alpha, norm)"),
        Fusion(ADAPTIVE, "convex combination, per-query alpha",
               "convex combination, alpha set per query from its shape and the lexical top gap"),
    )
}
