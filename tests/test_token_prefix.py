"""The token prefix: a card is cut before tokenising without changing what the model reads.

Every text here is synthetic and built in the test. For each, the prefix's first
256 token ids must equal the whole text's, and the vector the embedder makes
(from the prefix) must equal the vector of the whole text tokenised as before.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from producer.embedders import embed_texts, normalise
from producer.embedders.local import FIRST_PREFIX, MAX_TOKENS, packaged_embedder, token_prefix

WORDS = ["owl", "heron", "night", "marsh", "wing", "feather", "hunt", "quiet", "reed", "egg"]


@pytest.fixture(scope="module")
def minilm():
    embedder = packaged_embedder(runtime="torch")
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def hf_tokenizer():
    """transformers' tokenizer: how the model's inputs were made before prefixes."""
    from transformers import AutoTokenizer

    from producer.embedders.local import default_model_dir

    return AutoTokenizer.from_pretrained(str(default_model_dir()), local_files_only=True)


def ids(hf_tokenizer, text: str) -> list[int]:
    """The ids the model reads: the whole text, truncated by the tokenizer."""
    return hf_tokenizer(text, truncation=True, max_length=MAX_TOKENS)["input_ids"]


def whole_text_vector(minilm, hf_tokenizer, text: str) -> np.ndarray:
    """The vector as the embedder made it before prefixes: the whole text tokenised."""
    import torch

    enc = hf_tokenizer([text], truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    with torch.inference_mode():
        hidden = minilm._model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
    return normalise(pooled.numpy())[0]


def words(n: int, seed: int = 0, sep: str = " ") -> str:
    rng = random.Random(seed)
    return sep.join(rng.choice(WORDS) for _ in range(n))


def accented(n: int) -> str:
    # Each letter carries 20 combining marks: the normaliser strips them, so a
    # word of 83 characters is still one short token.
    mark = "\u0301\u0308" * 10
    return " ".join(("o" + mark + "wl" + mark)[:] for _ in range(n))


def long_words(n: int) -> str:
    # Words of 101..140 characters: each becomes a single [UNK].
    return " ".join("k" * (101 + i % 40) for i in range(n))


TEXTS = {
    "long prose": words(50_000),
    "combining marks": accented(2_000),
    "words over 100 characters": long_words(1_000),
    "no whitespace at all": "owl-heron." * 5_000,
    "crlf lines": "\r\n".join(words(12, seed=i) for i in range(2_000)),
    "tabs and a leading run of spaces": " " * 5_000 + "\t".join(WORDS * 2_000),
    "short": "night hunting birds",
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_prefix_reads_the_same_first_256_tokens(minilm, hf_tokenizer, name):
    text = TEXTS[name]
    prefix = minilm.prefixes([text])[0]
    assert text.startswith(prefix)
    assert ids(hf_tokenizer, prefix) == ids(hf_tokenizer, text)
    assert len(ids(hf_tokenizer, text)) == (MAX_TOKENS if name != "short" else len(ids(hf_tokenizer, text)))


def test_the_prefix_is_short_when_it_can_be_and_grows_when_it_must(minilm):
    p = minilm.prefixes([TEXTS["long prose"], TEXTS["combining marks"]])
    assert len(p[0]) <= FIRST_PREFIX < len(TEXTS["long prose"])
    # 256 marked words need far more than FIRST_PREFIX characters: the prefix doubled.
    assert len(p[1]) > 4 * FIRST_PREFIX
    assert minilm.prefixes([TEXTS["no whitespace at all"]])[0] == TEXTS["no whitespace at all"]
    assert minilm.prefixes([TEXTS["short"]])[0] == TEXTS["short"]


@pytest.mark.parametrize("n", [252, 253, 254, 255, 256, 257])
def test_texts_around_the_boundary(minilm, hf_tokenizer, n):
    # "owl" is one token: n words are n + 2 ids with [CLS] and [SEP]. A small
    # first prefix makes the cut land right around the 256th token.
    text = " ".join(["owl"] * n) + " " + words(400, seed=n)
    full = ids(hf_tokenizer, text)
    for first in (8, 4 * n - 3, 4 * n, 4 * n + 1, 4 * n + 4):
        prefix = token_prefix(text, minilm._count_tokens, first=first)
        assert ids(hf_tokenizer, prefix) == full, first
    # The cut never yields a prefix that reads fewer tokens than the whole text.
    exact = " ".join(["owl"] * n)
    prefix = token_prefix(exact, minilm._count_tokens, first=8)
    assert ids(hf_tokenizer, prefix) == ids(hf_tokenizer, exact)


def test_vectors_of_the_prefix_equal_the_whole_texts(minilm, hf_tokenizer):
    names = ["long prose", "combining marks", "words over 100 characters", "crlf lines"]
    for name in names:
        ours = embed_texts(minilm, [TEXTS[name]])[0]
        assert np.array_equal(ours, whole_text_vector(minilm, hf_tokenizer, TEXTS[name])), name
