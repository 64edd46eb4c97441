"""The model's files whose bytes decide its numbers, and their digests.

Apart from ``local`` so that the ONNX graph's cache key (``onnx_graph``) can
digest the weights without importing the embedder that reads the graph back.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from producer.embedders.base import EmbedError

REVISION_FILES = (
    "added_tokens.json",
    "config.json",
    "merges.txt",
    "model.safetensors",
    "pytorch_model.bin",
    "sentencepiece.bpe.model",
    "special_tokens_map.json",
    "spiece.model",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_digests(model_dir: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """(name, SHA-256) of each file of ``REVISION_FILES`` present, sorted by name."""
    d = Path(model_dir)
    present = [n for n in sorted(REVISION_FILES) if (d / n).is_file()]
    if "config.json" not in present or not any(w in present for w in WEIGHT_FILES):
        raise EmbedError(
            f"{d.name}: not a model directory (needs config.json and model.safetensors "
            "or pytorch_model.bin)"
        )
    return tuple((name, _file_sha256(d / name)) for name in present)


@functools.lru_cache(maxsize=8)
def _cached_digests(path: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple:
    return file_digests(path)


def cached_file_digests(model_dir: Path) -> tuple[tuple[str, str], ...]:
    """``file_digests``, computed once per process while the files' sizes and mtimes
    stay put."""
    stamp = []
    for name in sorted(REVISION_FILES):
        try:
            st = (model_dir / name).stat()
        except OSError:
            continue
        stamp.append((name, st.st_size, st.st_mtime_ns))
    return _cached_digests(str(model_dir.resolve()), tuple(stamp))
