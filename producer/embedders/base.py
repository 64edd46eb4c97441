"""What every embedder shares: the protocol, the spec, the error, and ``normalise``.

Apart from the package's dispatchers (``check_spec``, ``identity``,
``open_embedder``), so that ``http`` and ``local`` import this module and never
the package that imports them back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from producer.config import ConfigError, EmbedderConfig
from producer.index_checks import dimensions_ok
from producer.index_format import MAX_DIMENSIONS

OnBatch = Callable[[int], None]
"""Called after each batch with the number of texts embedded so far."""


class Parts(Protocol):
    """Where one embedding call's parts are kept for a build that resumes it
    (``producer.build_checkpoint``). A part is the unit whose numbers do not depend on
    what else the call computes: for the local embedder one encoder run, for any
    other the whole call (part 0). ``rows`` are the part's positions in ``texts``;
    ``raw`` its vectors as the embedder made them (before ``normalise``)."""

    def get(self, part: int, rows: Sequence[int]) -> np.ndarray | None: ...

    def put(self, part: int, rows: Sequence[int], raw: np.ndarray) -> None: ...


class EmbedError(Exception):
    """An embedder refused or failed; the message is meant for the user."""


@runtime_checkable
class Embedder(Protocol):
    provider: str
    model_id: str
    revision: str
    dimensions: int | None  # None until known (an http endpoint without a declared width)

    def embed(self, texts: list[str], on_batch: OnBatch | None = None) -> np.ndarray:
        """Raw vectors, shape (len(texts), d), in the order of ``texts``."""
        ...


def normalise(
    vectors: np.ndarray | Sequence[Sequence[float]] | Sequence[float],
    labels: Sequence[str] | None = None,
) -> np.ndarray:
    """Rows scaled to unit L2 length, computed in float64, returned as float32.

    Accepts one vector (1-D) or a batch (2-D). A row with every component zero
    has no direction and is refused; so is one with a non-finite component.
    A truncated prefix of a unit vector comes back renormalised.
    ``labels`` name the rows in error messages (default: ``vector {i}``).
    """
    arr = np.asarray(vectors, dtype=np.float64)
    single = arr.ndim == 1
    rows = arr.reshape(1, -1) if single else arr
    if rows.ndim != 2:
        raise EmbedError(f"expected a batch of vectors, got shape {arr.shape}")

    def label(i: int) -> str:
        return labels[i] if labels is not None else f"vector {i}"

    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise EmbedError(f"{label(i)}: a component is not a finite number")
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    zero = np.flatnonzero(norms == 0.0)
    if zero.size:
        raise EmbedError(f"{label(int(zero[0]))}: every component is zero, so it has no direction")
    out = (rows / norms[:, None]).astype(np.float32)
    return out[0] if single else out


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    on_batch: OnBatch | None = None,
    labels: Sequence[str] | None = None,
    parts: Parts | None = None,
) -> np.ndarray:
    """Unit float32 vectors for ``texts``: the embedder's output, checked and normalised.
    With ``parts``, parts already made are taken from it and new ones given to it."""
    texts = list(texts)
    if not texts:
        d = embedder.dimensions or 0
        return np.zeros((0, d), dtype=np.float32)
    raw = np.asarray(_raw(embedder, texts, on_batch, parts))
    if raw.ndim != 2 or raw.shape[0] != len(texts):
        raise EmbedError(
            f"{embedder.model_id}: {raw.shape[0] if raw.ndim else 0} vectors for {len(texts)} texts"
        )
    d = raw.shape[1]
    if not dimensions_ok(d):
        raise EmbedError(
            f"{embedder.model_id}: {d} dimensions, and the reader accepts 1..{MAX_DIMENSIONS}"
        )
    if embedder.dimensions is not None and d != embedder.dimensions:
        raise EmbedError(
            f"{embedder.model_id}: {d} dimensions where {embedder.dimensions} were expected"
        )
    return normalise(raw, labels)


def _raw(
    embedder: Embedder, texts: list[str], on_batch: OnBatch | None, parts: Parts | None
) -> np.ndarray:
    if parts is None:
        return embedder.embed(texts, on_batch)
    if getattr(embedder, "embeds_in_parts", False):
        return embedder.embed(texts, on_batch, parts=parts)  # type: ignore[call-arg]
    rows = range(len(texts))
    stored = parts.get(0, rows)
    if stored is not None:
        if on_batch is not None:
            on_batch(len(texts))
        return stored
    raw = np.asarray(embedder.embed(texts, on_batch), dtype=np.float32)
    if raw.ndim == 2 and raw.shape[0] == len(texts):
        parts.put(0, rows, raw)
    return raw


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """One unit float32 vector for a query, exactly as a build would store it."""
    return embed_texts(embedder, [text])[0]


@dataclass(frozen=True)
class EmbedderSpec(EmbedderConfig):
    """An ``[semantics.embedder]`` table after command-line flags, plus ``--offline``."""

    offline: bool = False

    @classmethod
    def merge(
        cls, config: EmbedderConfig | None, offline: bool = False, **flags: object
    ) -> EmbedderSpec:
        """The vault's table (or the defaults), then flags over it field by field.

        A flag whose value is None was not given and leaves the table's value.
        """
        resolved = (config or EmbedderConfig()).resolve(**flags)
        return cls(**asdict(resolved), offline=offline)


def check_common(spec: EmbedderSpec) -> None:
    """The refusals every provider shares: the table's own rules and the width."""
    try:
        spec.check()  # the table's own rules: provider, http's endpoint/model/revision
    except ConfigError as exc:
        raise EmbedError(str(exc)) from None
    if spec.dimensions is not None and not dimensions_ok(spec.dimensions):
        raise EmbedError(f"`dimensions` must be an integer in 1..{MAX_DIMENSIONS}")
