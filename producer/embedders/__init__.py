"""Embedders: what turns card and query texts into unit vectors.

Two providers, chosen by ``EmbedderSpec.provider``:

* ``local`` (``producer.embedders.local``): a checkpoint run in this process
  with ONNX Runtime or transformers + torch; by default the packaged
  all-MiniLM-L6-v2.
* ``http`` (``producer.embedders.http``): an OpenAI-shaped ``/v1/embeddings``
  endpoint, standard library only.

Every vector that leaves this package goes through ``normalise`` (float64
renormalisation, zero vectors refused), via ``embed_texts``. The producer's
build and the app's live query embedding both call ``embed_texts`` /
``embed_query``, so a live query vector equals the stored one.

Nothing here imports torch or transformers at import time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from producer.config import PROVIDERS
from producer.embedders.base import (
    Embedder,
    EmbedderSpec,
    EmbedError,
    OnBatch,
    Parts,
    check_common,
    embed_query,
    embed_texts,
    normalise,
)


def check_spec(spec: EmbedderSpec, environ: Mapping[str, str] | None = None) -> None:
    """Every refusal that needs no model and no card: call before reading the vault."""
    check_common(spec)
    if spec.provider == "http":
        from producer.embedders.http import check_http_spec

        check_http_spec(spec, os.environ if environ is None else environ)
    else:
        from producer.embedders.local import check_local_spec, check_precision

        check_local_spec(spec)
        check_precision(spec.precision)


def identity(spec: EmbedderSpec) -> tuple[str, str, int | None]:
    """(model id, revision, dimensions if known) that ``spec`` would record — without
    loading a model or touching the network. The incremental build compares these
    with the index before deciding whether anything must be embedded."""
    if spec.provider == "http":
        from producer.embedders.http import http_identity

        return http_identity(spec)
    from producer.embedders.local import local_identity

    return local_identity(spec)


def open_embedder(
    spec: EmbedderSpec, environ: dict[str, str] | None = None, *, live: bool = False
) -> Embedder:
    """The embedder ``spec`` describes. A local model is loaded on first use; ``live``
    (a query's vector in the app or the MCP server) reads this machine's ONNX graph
    but never makes one (docs/runtime.md)."""
    check_spec(spec, environ)
    if spec.provider == "http":
        from producer.embedders.http import HttpEmbedder

        return HttpEmbedder.from_spec(spec, os.environ if environ is None else environ)
    from producer.embedders.local import LocalEmbedder

    return LocalEmbedder.from_spec(spec, prepare=not live)


def runtime_of(embedder: object) -> dict[str, str]:
    """What a build says about the runtime that embedded (empty when nothing was
    embedded, or the provider has no runtime): ``runtime``, and ``runtime_note``
    when a graph made just now was not used."""
    runtime = getattr(embedder, "runtime_used", None)
    if runtime is None:
        return {}
    note = getattr(embedder, "runtime_note", None)
    return {"runtime": runtime, **({"runtime_note": note} if note else {})}


__all__ = [
    "PROVIDERS",
    "EmbedError",
    "Embedder",
    "EmbedderSpec",
    "OnBatch",
    "Parts",
    "Parts",
    "check_spec",
    "embed_query",
    "embed_texts",
    "identity",
    "normalise",
    "open_embedder",
    "runtime_of",
]
