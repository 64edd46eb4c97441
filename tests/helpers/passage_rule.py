"""The card score rule with passages, written out plainly: the float32 reference the
int8 passes must agree with bit for bit (``hqltui.core.passage_scores``)."""

from __future__ import annotations

from collections.abc import Iterable


def top_two(card: float, rows: Iterable[tuple[int, float]]) -> tuple[float, int, int]:
    """(score, best, second) of a card: the mean of the best two of its own vector's
    score ``card`` and its passages' ``(ordinal, score)``; ``best``/``second`` are
    ordinals, -1 for the card's own vector, -2 for none. A tie goes to a passage before
    the card vector, then to the lower ordinal."""
    ranked = sorted([(-score, 0, ordinal) for ordinal, score in rows] + [(-card, 1, -1)])
    (v1, _, best) = ranked[0]
    if len(ranked) == 1:
        return -v1, best, -2
    (v2, _, second) = ranked[1]
    return (-v1 + -v2) * 0.5, best, second
