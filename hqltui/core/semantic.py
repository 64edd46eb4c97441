"""The semantic arm: a query vector, then one pass over the index's card matrix.

Query vectors, in this order (the retrieval's ``query_vector_source`` says which):

1. ``index``: the index's ``query`` table holds the exact text (a blob of the
   wrong length is a refusal);
2. ``live:local``: a local model whose computed revision (``producer``'s
   ``local_revision``) and model id equal the index's — the packaged default
   model, or the vault's configured local model directory;
3. ``live:http``: the vault's configured ``http`` embedder when its model and
   revision equal the index's and its key variable is set, and only when the
   caller asks for it explicitly (``live=True``: text leaves the machine);
4. otherwise a refusal naming ``hql-semantics build --query "<text>"``.

The embedding function is the producer's (``producer.embedders``), so a live
vector equals the one a build would store. A local model runs on ONNX Runtime
when this machine's graph of it passed its check (no torch, no transformers:
docs/runtime.md), else on torch, imported only when a live vector is actually
computed; ``QueryVector.runtime`` says which. There is never a lexical fallback.

Scores are the dot product of the float32 query vector with every stored
vector (one matrix-vector product), refined in float64 wherever they decide the
requested cut, so the scores shown are float64 sums of the stored values.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from hqltui.core.index_reader import BUILD, SemanticIndex, build_command, shell_quote
from hqltui.core.ranking import Refusal, Warning, refine
from producer.config import ProducerConfig
from producer.index_format import unpack as unpack_vector
from producer.vault import Vault

# float32 dot products of unit vectors are off by far less than this.
TOLERANCE = 1e-4


@dataclass(frozen=True)
class QueryVector:
    vector: np.ndarray | None
    source: str | None
    refusal: Refusal | None = None
    warnings: tuple[Warning, ...] = ()
    runtime: str | None = None  # a live vector's: "onnxruntime" or "torch" (never in the revision)


@dataclass(frozen=True)
class LiveOption:
    """An embedder whose model and revision equal the index's."""

    provider: str  # "local" | "http"
    spec: object  # producer.embedders.EmbedderSpec
    endpoint: str | None = None


class LiveEmbedders:
    """Finds and (lazily) loads the embedders that may make a live query vector.

    One per process is enough; a ``Session`` shares its instance with the
    sessions it reloads into, so a model is loaded at most once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened: dict[object, object] = {}
        self._identity: dict[object, tuple[str, str, int | None] | str] = {}

    def _identify(self, spec: object) -> tuple[str, str, int | None] | str:
        """(model, revision, dims) the spec would record, or why it cannot say."""
        from producer.embedders import EmbedError, identity

        with self._lock:
            if spec not in self._identity:
                try:
                    self._identity[spec] = identity(spec)  # type: ignore[arg-type]
                except EmbedError as exc:
                    self._identity[spec] = str(exc)
                except Exception as exc:  # a broken model directory must not crash a query
                    self._identity[spec] = f"{type(exc).__name__}: {exc}"
            return self._identity[spec]

    def options(self, index: SemanticIndex,
                config: ProducerConfig) -> tuple[list[LiveOption], list[str]]:
        """Embedders matching the index, and why others do not (for the refusal)."""
        from producer.embedders import EmbedderSpec

        specs: list[object] = [EmbedderSpec()]  # the packaged default model
        if "semantics.embedder" not in config.errors:
            configured = EmbedderSpec.merge(config.embedder)
            if configured not in specs:
                specs.append(configured)
        found: list[LiveOption] = []
        reasons: list[str] = []
        for spec in specs:
            who = f"the {spec.provider} embedder"  # type: ignore[attr-defined]
            ident = self._identify(spec)
            if spec.provider == "local" and not isinstance(ident, str):  # type: ignore[attr-defined]
                # The index stores only a digest: find the precision that yields it.
                spec, ident = self._precision_of(spec, ident, index.revision)
                precision = spec.precision  # type: ignore[attr-defined]
                if precision != "float32" and ident[1] == index.revision:
                    why = self._cannot_compute(precision)
                    if why:
                        reasons.append(f"{who}: the index was embedded in {precision}; {why}")
                        continue
            if isinstance(ident, str):
                reasons.append(f"{who}: {ident}")
                continue
            model, revision, dims = ident
            if model != index.model:
                reasons.append(f"{who} runs `{model}`, not `{index.model}`")
            elif revision != index.revision:
                reasons.append(
                    f"{who}'s revision is `{_short(revision)}`, the index's "
                    f"`{_short(index.revision)}`"
                )
            elif dims is not None and dims != index.dimensions:
                reasons.append(f"{who} makes {dims} dimensions, the index holds {index.dimensions}")
            elif spec.provider == "http":  # type: ignore[attr-defined]
                var = spec.api_key_env  # type: ignore[attr-defined]
                if var and not os.environ.get(var):
                    reasons.append(f"{who} needs ${var}, which is unset")
                else:
                    found.append(LiveOption("http", spec, spec.endpoint))  # type: ignore[attr-defined]
            else:
                found.append(LiveOption("local", spec))
        return found, reasons

    def _precision_of(
        self, spec: object, ident: tuple[str, str, int | None], revision: str
    ) -> tuple[object, tuple[str, str, int | None]]:
        """The variant of a local ``spec`` whose revision is ``revision``, trying
        each supported precision (the spec itself when none matches)."""
        from dataclasses import replace

        from producer.config import PRECISIONS

        if ident[1] == revision:
            return spec, ident
        for precision in PRECISIONS:
            variant = replace(spec, precision=precision)  # type: ignore[type-var]
            if variant == spec:
                continue
            other = self._identify(variant)
            if not isinstance(other, str) and other[1] == revision:
                return variant, other
        return spec, ident

    @staticmethod
    def _cannot_compute(precision: str) -> str | None:
        """Why this machine cannot embed at ``precision`` (None: it can)."""
        from producer.embedders import EmbedError
        from producer.embedders.local import check_precision

        try:
            check_precision(precision)
        except EmbedError as exc:
            return str(exc)
        return None

    def embed(self, option: LiveOption, text: str) -> tuple[np.ndarray, str | None]:
        """The query's vector, and the runtime that computed it (a local model's)."""
        from producer.embedders import embed_query, open_embedder

        with self._lock:
            embedder = self._opened.get(option.spec)
            if embedder is None:
                # live: a missing ONNX graph is not made here (that would need torch)
                embedder = open_embedder(option.spec, live=True)  # type: ignore[arg-type]
                self._opened[option.spec] = embedder
        vector = embed_query(embedder, text)  # type: ignore[arg-type]
        return vector, getattr(embedder, "runtime_used", None)


def warm_live_model() -> None:
    """Load the packaged model's ONNX graph ahead of the first live query, when this
    machine has one that passed its check (the MCP server runs this beside the vault
    load, so a first search needing a live vector does not wait for it). Without a
    graph it does nothing: loading torch on spec would cost every start ~450 MB."""
    try:
        from producer.embedders.local import warm_graph

        warm_graph()
    except Exception:  # noqa: BLE001 - only a head start: the query itself will say why
        pass


def _short(revision: str) -> str:
    return revision if len(revision) <= 19 else revision[:19] + "…"


def query_vector(
    index: SemanticIndex,
    vault: Vault,
    config: ProducerConfig,
    text: str,
    *,
    live: bool = False,
    embedders: LiveEmbedders | None = None,
    stored: bool = True,
) -> QueryVector:
    """The vector to score ``text`` with, and where it came from (or a refusal).

    ``stored=False`` skips the index's query table (tests compare a live vector
    with the stored one this way).
    """
    width = index.dimensions * 4
    fix = build_command(vault, config.index, (text,))
    if stored and text in index.queries:
        blob = index.queries[text]
        if len(blob) != width:
            return QueryVector(
                None,
                None,
                Refusal(f"the stored vector for `{text}` is {len(blob)} bytes, not {width}", fix),
            )
        return QueryVector(unpack_vector(blob, index.dimensions), "index")
    from producer.embedders import EmbedError

    embedders = embedders or LiveEmbedders()
    options, reasons = embedders.options(index, config)
    notes: list[Warning] = []
    for option in options:
        if option.provider == "http" and not live:
            return QueryVector(
                None,
                None,
                Refusal(
                    f"the index holds no vector for `{text}`; the configured http embedder "
                    f"({option.endpoint}) matches the index and can make one, which sends the "
                    "query text there: ask for it explicitly (Enter in the app, --live on the "
                    f"command line), or store it with `{BUILD} --query {shell_quote(text)}`",
                    "live",
                ),
            )
        try:
            vector, runtime = embedders.embed(option, text)
        except EmbedError as exc:
            reasons.append(f"the {option.provider} embedder failed: {exc}")
            notes.append(Warning("embedder", f"live query embedding failed: {exc}"))
            continue
        except Exception as exc:  # never let a model problem become a traceback
            reasons.append(f"the {option.provider} embedder failed: {type(exc).__name__}: {exc}")
            continue
        if vector.shape != (index.dimensions,):
            reasons.append(f"the {option.provider} embedder made {vector.shape[0]} dimensions")
            continue
        return QueryVector(
            np.asarray(vector, dtype=np.float32), f"live:{option.provider}", runtime=runtime
        )
    why = "; ".join(reasons) if reasons else "no embedder matches the index"
    return QueryVector(
        None,
        None,
        Refusal(
            f"the index holds no vector for `{text}`, and no model here matches the index's "
            f"model and revision to make one ({why}): rerun "
            f"`{BUILD} --query {shell_quote(text)}`",
            fix,
        ),
        tuple(notes),
    )


def semantic_scores(index: SemanticIndex, vector: np.ndarray, cut: int | None) -> np.ndarray:
    """Every vault card's score (0 for cards absent from the index), exact at ``cut``."""
    q32 = np.ascontiguousarray(vector, dtype=np.float32)
    approx = (index.matrix @ q32).astype(np.float64)
    q64 = q32.astype(np.float64)

    def exact(positions: np.ndarray) -> np.ndarray:
        return index.matrix[positions].astype(np.float64) @ q64

    scores = refine(approx, exact, cut, TOLERANCE)
    if not index.present.all():
        scores[~index.present] = 0.0
    return scores


def embed_local(local: Any, text: str, live: bool) -> QueryVector:
    """``query_vector`` for an engine ``LocalCards`` (given to it by the caller, so the
    engine client never imports the model itself)."""
    return query_vector(local.index, local.vault, local.config, text, live=live,
                        embedders=local.embedders)
