"""The pace of a build: its rate and an ETA from the tokens still to embed.

A text's cost follows its tokens (a short passage is cheaper than a full window),
and the plan knows each one's, so the ETA is the tokens remaining at the tokens
per second measured so far in this build — texts taken from an interrupted
build's work file cost nothing and count in neither.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence


class Pace:
    def __init__(self, weights: Sequence[int]) -> None:
        self.before = [0, *itertools.accumulate(weights)]  # tokens of the first i texts
        self.skipped = 0  # tokens taken from the work file
        self.skipped_texts = 0
        self.started: float | None = None
        self.base = 0  # tokens accounted for when the clock started
        self.base_texts = 0

    def skip(self, texts: Sequence[int]) -> None:
        """These texts (their numbers in the plan) came from the work file."""
        self.skipped += sum(self.before[i + 1] - self.before[i] for i in texts)
        self.skipped_texts += len(texts)

    def begin(self, done: int, now: float) -> None:
        """The first embedding call starts the clock (a model's loading is not pace)."""
        if self.started is None:
            self.started = now
            self.base = self.before[done] - self.skipped
            self.base_texts = done - self.skipped_texts

    def at(self, done: int, now: float) -> dict[str, float]:
        """``texts_per_s``, ``tokens_per_s`` and ``eta`` (seconds) once a pace is measured;
        nothing before."""
        if self.started is None or now <= self.started:
            return {}
        elapsed = now - self.started
        tokens = self.before[done] - self.skipped - self.base
        if tokens <= 0:
            return {}
        per_s = tokens / elapsed
        texts = done - self.skipped_texts - self.base_texts
        return {
            "texts_per_s": round(texts / elapsed, 2),
            "tokens_per_s": round(per_s, 1),
            "eta": round((self.before[-1] - self.before[done]) / per_s, 1),
        }
