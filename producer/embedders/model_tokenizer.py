"""The model's tokenizer, behind one small interface whichever library reads it.

A model directory with a ``tokenizer.json`` is read by the ``tokenizers``
package straight from that file: a few milliseconds to load and no torch or
transformers, so a live query needs neither. It is the same Rust tokenizer
transformers' fast tokenizers wrap, configured here as the recipe says
(no padding, truncation at ``max_tokens`` with the special tokens), so the ids
and the character offsets are the ones transformers gives
(``tests/test_model_tokenizer.py`` pins them on tricky texts: the token prefix
and the passages' windows are cut on them).

A directory without ``tokenizer.json`` and a model loaded by Hub id keep
transformers' ``AutoTokenizer`` (``TransformersTokenizer``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

TOKENIZER_FILE = "tokenizer.json"

Encoded = Mapping[str, list[list[int]]]
"""Model inputs per text, unpadded: ``input_ids``, ``attention_mask``, ``token_type_ids``."""


class ModelTokenizer(Protocol):
    pad_id: int

    def count(self, text: str, limit: int) -> int:
        """Tokens of ``text`` with special tokens, counted up to ``limit``."""
        ...

    def encode(self, texts: Sequence[str], max_tokens: int) -> Encoded:
        """Each text's model inputs, truncated at ``max_tokens``, not padded."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character spans of every token of ``text``, without special tokens."""
        ...


class FastTokenizer:
    """``tokenizers.Tokenizer`` read from the model's ``tokenizer.json``.

    The file may carry its own padding and truncation (all-MiniLM-L6-v2's pads
    and truncates at 128); one copy is kept per truncation length, with padding
    off, so no call changes another's settings (the app tokenises from worker
    threads)."""

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer

        self._json = Path(path).read_text(encoding="utf-8")
        self._make = Tokenizer.from_str
        self._by_limit: dict[int | None, Any] = {}
        padding = self._make(self._json).padding  # the file's own, before it is switched off
        self.pad_id = int(padding["pad_id"]) if padding else 0

    def _plain(self) -> Any:
        return self._with(None)

    def _with(self, limit: int | None) -> Any:
        tok = self._by_limit.get(limit)
        if tok is None:
            tok = self._make(self._json)
            tok.no_padding()
            if limit is None:
                tok.no_truncation()
            else:
                tok.enable_truncation(limit)
            self._by_limit[limit] = tok
        return tok

    def count(self, text: str, limit: int) -> int:
        return len(self._with(limit).encode(text).ids)

    def encode(self, texts: Sequence[str], max_tokens: int) -> Encoded:
        encodings = self._with(max_tokens).encode_batch(list(texts))
        return {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }

    def offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self._plain().encode(text, add_special_tokens=False)
        return [(int(a), int(b)) for a, b in enc.offsets]


class TransformersTokenizer:
    """transformers' ``AutoTokenizer``: models without a ``tokenizer.json``."""

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self.pad_id = int(tokenizer.pad_token_id or 0)

    def count(self, text: str, limit: int) -> int:
        return len(self._tok(text, truncation=True, max_length=limit)["input_ids"])

    def encode(self, texts: Sequence[str], max_tokens: int) -> Encoded:
        return dict(self._tok(list(texts), truncation=True, max_length=max_tokens))

    def offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self._tok(
            text, add_special_tokens=False, return_offsets_mapping=True, truncation=False
        )
        return [(int(a), int(b)) for a, b in enc["offset_mapping"]]


def pad_rows(encoded: Encoded, rows: Sequence[int], pad_id: int) -> dict[str, np.ndarray]:
    """The inputs of ``rows`` padded on the right to their longest: ``pad_id`` in
    ``input_ids``, 0 elsewhere (what transformers' ``pad`` does), as int64 arrays."""
    width = max(len(encoded["input_ids"][i]) for i in rows)
    out: dict[str, np.ndarray] = {}
    for key, values in encoded.items():
        fill = pad_id if key == "input_ids" else 0
        arr = np.full((len(rows), width), fill, dtype=np.int64)
        for r, i in enumerate(rows):
            arr[r, : len(values[i])] = values[i]
        out[key] = arr
    return out


@functools.lru_cache(maxsize=4)
def fast_tokenizer(path: Path) -> FastTokenizer:
    """One ``FastTokenizer`` per file per process (read ahead of need, like the graph)."""
    return FastTokenizer(path)


def tokenizer_file(model_dir: str | Path) -> Path | None:
    """The directory's ``tokenizer.json``, or None."""
    path = Path(model_dir) / TOKENIZER_FILE
    return path if path.is_file() else None
