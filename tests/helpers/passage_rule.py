"""The card score rule with passages, written out plainly: the float32 reference the
int8 passes must agree with bit for bit (``hqltui.core.passage_scores``)."""

from __future__ import annotations

from collections.abc import Iterable

from hqltui.core.passage_scores import WEIGHT


def blended(card: float, rows: Iterable[tuple[int, float]]) -> tuple[float, int]:
    """(score, answering ordinal) of a card: ``(1 - WEIGHT)·card + WEIGHT·best``, ``best``
    the better of its own vector's score ``card`` and its passages' ``(ordinal, score)``;
    the ordinal is -1 where the card vector is the best. A tie goes to the passage, then
    to the lower ordinal."""
    best, won = card, -1
    for ordinal, score in sorted(rows, key=lambda r: (-r[1], r[0])):
        if score >= best:
            best, won = score, ordinal
        break
    return (1.0 - WEIGHT) * card + WEIGHT * best, won
