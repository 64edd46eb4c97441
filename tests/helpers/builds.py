"""A build with a deterministic stand-in embedder (it counts what it embeds), and a
small vault of numbered cards to build."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from producer import build as build_mod
from producer.build import BuildOptions, build
from tests.helpers.vaults import write_cards

STAMP = "2026-01-01T00:00:00+00:00"
HTTP = dict(
    provider="http", model="fake-embed", revision="r1", endpoint="http://127.0.0.1:9/v1/embeddings"
)


class Counting:
    """A deterministic stand-in at the embedder boundary that counts what it embeds."""

    provider = "http"

    def __init__(self, model_id: str = "fake-embed", revision: str = "r1", d: int = 8) -> None:
        self.model_id, self.revision, self.dimensions = model_id, revision, d
        self.texts: list[str] = []

    def embed(self, texts: Any, on_batch: Any = None) -> np.ndarray:
        self.texts.extend(texts)
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            out.append(np.random.default_rng(seed).standard_normal(self.dimensions) * 5)
        if on_batch:
            on_batch(len(texts))
        return np.asarray(out)


def make_vault(root: Path, n: int = 5) -> Path:
    """``n`` cards with a title and a body, in a vault marked by ``.hmd``."""
    return write_cards(root, {f"card{i}": f"---\ntitle: Card {i}\n---\n# Card {i}\n\nBody {i}.\n"
                              for i in range(n)})


def run(vault: Path, out: Path, embedder: Counting | None = None, **kw: Any
        ) -> build_mod.BuildResult:
    """``build`` with ``embedder``, its events kept on the result (``.events``)."""
    embedder = embedder or Counting()
    events: list[dict] = []
    opts = BuildOptions(vault=str(vault), out=str(out), **{**HTTP, **kw})
    result = build(opts, events.append, embedder_factory=lambda spec: embedder, environ={})
    result.events = events  # type: ignore[attr-defined]
    return result
