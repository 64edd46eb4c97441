"""The staged start of a session: each expensive part built on first need, once.

A session is usable in stages (``hqltui.core.session``): its cards as soon as the
vault is read, then its semantic index, then each lexical arm's structures when a
query first needs that arm. So a hybrid query over bm25 never builds the hashbag
matrix, and the app can draw the card list before anything can rank.

* ``Once``: a value made by the first thread that asks; the others wait for it,
  and nobody makes it twice. Its maker never raises here: failures are made into
  refusals by the caller's guard (``ranking.arm_failure``).
* ``LexicalArms``: arm -> its structure, or its ``Refusal`` (a mapping; reading an
  arm builds it). The term counts of the arm's analyser come first (from the
  term cache when it holds these texts'; hashbag's and bm25's are made
  separately, each on first need); when they cannot be made, the arms counted
  by that analyser refuse by name and the semantic arm still answers.
  ``built()`` says what exists so far without building anything (the warnings
  strip reads it on every paint).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

from hqltui.core.arms import ARMS
from hqltui.core.lexical import Analyser
from hqltui.core.names import LEXICAL_ARMS
from hqltui.core.ranking import Refusal, arm_failure

T = TypeVar("T")

Progress = Callable[[str], None]  # told what is being made now ("counting terms", …)


def guarded(arm: str, doing: str, step: Callable[[], T]) -> T | Refusal:
    """``step()``, or the arm's refusal when it raises: one arm never takes the others down."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - any failure of one arm is that arm's refusal
        return arm_failure(arm, doing, exc)


class Once(Generic[T]):
    """A value made on first need by whichever thread asks first; made once."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make: Callable[[], T] | None = make
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None

    @property
    def done(self) -> bool:
        return self._done

    def get(self) -> T:
        if not self._done:
            with self._lock:
                if not self._done:
                    assert self._make is not None
                    self._value = self._make()
                    self._done = True
                    self._make = None
        return self._value  # type: ignore[return-value]  # _done: it holds a T (which may be None)

    def peek(self) -> T | None:
        """The value if it is made, else None (never makes it, never waits)."""
        return self._value if self._done else None

    def set(self, value: T) -> None:
        """Replace the value (tests put a defect into a made structure this way)."""
        with self._lock:
            self._value, self._done, self._make = value, True, None


class LexicalArms(Mapping[str, Any]):
    """Each lexical arm's structure (``arms.Arm.build`` from its analyser's term counts),
    or its refusal, made on first need; ``doc_freq(arm)`` (the adaptive fusion's
    signals, by the fused arm's analyser) the same way, None when the counts failed."""

    def __init__(self, texts: Callable[[], tuple[Sequence[str], Sequence[str]]],
                 terms: Callable[[Analyser], Path] | None) -> None:
        """``texts()``: the cards' texts and content hashes, in card order; ``terms``:
        an analyser's term-cache file (None: no cache)."""
        self._texts = texts
        self._terms = terms
        analysers = {ARMS[name].analyser.name: ARMS[name].analyser for name in LEXICAL_ARMS}
        self._counts: dict[str, Once[Any]] = {
            key: Once(partial(self._count, analyser)) for key, analyser in analysers.items()
        }
        self._arms: dict[str, Once[Any]] = {
            name: Once(partial(self._build, name)) for name in LEXICAL_ARMS
        }
        self._doc_freq: dict[str, Once[Any]] = {
            key: Once(partial(self._make_doc_freq, key)) for key in analysers
        }

    def _count(self, analyser: Analyser) -> Any:
        from hqltui.core.term_cache import term_counts

        try:
            texts, hashes = self._texts()
            file = None if self._terms is None else self._terms(analyser)
            return term_counts(texts, hashes, file, analyser)
        except Exception as exc:  # noqa: BLE001 - its lexical arms refuse; semantic answers
            return _Failed(exc)

    def _counts_of(self, arm: str) -> Once[Any]:
        return self._counts[ARMS[arm].analyser.name]

    def _build(self, name: str) -> Any:
        counts = self._counts_of(name).get()
        if isinstance(counts, _Failed):
            return arm_failure(name, "cannot be built", counts.error)
        build = ARMS[name].build
        assert build is not None
        return guarded(name, "cannot be built", lambda: build(counts))

    def _make_doc_freq(self, analyser: str) -> Any:
        from hqltui.core.lexical import DocFreq

        counts = self._counts[analyser].get()
        if isinstance(counts, _Failed):
            return None
        made = guarded("hybrid", "cannot count terms", lambda: DocFreq(counts))
        return None if isinstance(made, Refusal) else made

    # ------------------------------------------------------------------ mapping

    def __getitem__(self, arm: str) -> Any:
        return self._arms[arm].get()

    def __iter__(self) -> Iterator[str]:
        return iter(self._arms)

    def __len__(self) -> int:
        return len(self._arms)

    # ------------------------------------------------------------------ stages

    def built(self) -> dict[str, Any]:
        """The arms made so far (structure or refusal), in registry order; builds nothing."""
        return {name: once.peek() for name, once in self._arms.items() if once.done}

    def is_built(self, arm: str) -> bool:
        return self._arms[arm].done

    def doc_freq(self, arm: str) -> Any:
        """The document frequencies by ``arm``'s analyser (made on first need)."""
        return self._doc_freq[ARMS[arm].analyser.name].get()

    def next_step(self, arm: str) -> str | None:
        """What ``prepare(arm)`` would make first ("counting terms", "building bm25"), or
        None when the arm is built."""
        if not self._arms[arm].done:
            return "counting terms" if not self._counts_of(arm).done else f"building {arm}"
        return None

    def prepare(self, arm: str, progress: Progress | None = None) -> Any:
        """Make ``arm`` (and its counts and document frequencies) now, saying each step
        to ``progress``; its structure or refusal."""
        if progress is not None and (step := self.next_step(arm)) == "counting terms":
            progress(step)
        self._counts_of(arm).get()
        if progress is not None and (step := self.next_step(arm)) is not None:
            progress(step)
        made = self[arm]
        self.doc_freq(arm)
        return made

    def set(self, arm: str, value: Any) -> None:
        self._arms[arm].set(value)


class _Failed:
    """Term counts that could not be made: each arm words its own refusal from the error."""

    def __init__(self, error: Exception) -> None:
        self.error = error
