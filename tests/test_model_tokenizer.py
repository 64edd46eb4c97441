"""The ``tokenizers`` package reading tokenizer.json gives today's ids and offsets.

The token prefix, the batches and the passages' windows are all cut on the
tokenizer's output, so a changed id or offset would change the chunk recipe.
Each tricky text here must give, through ``FastTokenizer``, exactly what
transformers' ``AutoTokenizer`` (the tokenizer used before) gives: ids with
truncation at 256 and at 257 (the token count), and character offsets without
special tokens.
"""

from __future__ import annotations

import pytest

from producer.embedders.local import MAX_TOKENS, default_model_dir
from producer.embedders.model_tokenizer import FastTokenizer, TransformersTokenizer, pad_rows
from producer.embedders.probe_texts import PROBE_TEXTS

TRICKY = {
    "empty": "",
    "spaces only": "   \t\n ",
    "accents": "Ünïcödé café naïve façade résumé",
    "combining marks": "o\u0301\u0308wl " * 40,
    "cjk": "日本語のテキストと中文文本、한국어 텍스트。",
    "emoji": "owl 🦉 heron 🪶 zwj 👩‍👩‍👧 flags 🇫🇷",
    "rtl": "שלום עולם مرحبا بالعالم",
    "long word": "k" * 150 + " after",
    "control chars": "a\x00b\x07c\u200bd\ufeffe\u00adf",
    "crlf and nbsp": "line one\r\nline\u00a0two\u2009three\u3000four",
    "man page": ".TH GREP 1\n.SH NAME\ngrep \\- print lines that match patterns\n\\fB\\-E\\fR, "
    "\\fB\\-\\-extended\\-regexp\\fR",
    "punctuation": "a--b...c!!!?(d)[e]{f}<g>/h\\i|j~k`l@m#n$o%p^q&r*s_t+u=v",
    "past the limit": " ".join(f"word{i}" for i in range(400)),
    "digits": "3.14159 1,000,000 0x1F 2026-12-03T13:21:08Z",
    "mixed case": "HyperMarkDown CamelCase ALLCAPS mIxEd",
}


@pytest.fixture(scope="module")
def both():
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoTokenizer.from_pretrained(str(default_model_dir()), local_files_only=True)
    return FastTokenizer(default_model_dir() / "tokenizer.json"), TransformersTokenizer(hf)


@pytest.mark.parametrize("name", [*TRICKY, *(f"probe {i}" for i in range(len(PROBE_TEXTS)))])
def test_ids_and_offsets_equal_todays(both, name):
    fast, today = both
    text = TRICKY[name] if name in TRICKY else PROBE_TEXTS[int(name.split()[1])]
    for limit in (MAX_TOKENS, MAX_TOKENS + 1):
        assert fast.encode([text], limit) == {
            k: v for k, v in today.encode([text], limit).items()
        }, limit
        assert fast.count(text, limit) == today.count(text, limit)
    assert fast.offsets(text) == today.offsets(text)


def test_the_files_own_padding_and_truncation_are_off(both):
    """tokenizer.json pads and truncates at 128; the recipe reads up to 256, unpadded."""
    fast, _ = both
    text = TRICKY["past the limit"]
    assert fast.count(text, MAX_TOKENS) == MAX_TOKENS
    assert len(fast.encode(["owl"], MAX_TOKENS)["input_ids"][0]) == 3  # [CLS] owl [SEP]
    assert len(fast.offsets(text)) > 400  # offsets: the whole text, no truncation


def test_padding_matches_transformers(both):
    fast, today = both
    texts = ["owl", "night hunting birds", TRICKY["cjk"]]
    ours = pad_rows(fast.encode(texts, MAX_TOKENS), [2, 0, 1], fast.pad_id)
    theirs = today._tok.pad(
        {k: [v[i] for i in (2, 0, 1)] for k, v in today.encode(texts, MAX_TOKENS).items()},
        padding=True, return_tensors="np",
    )
    assert sorted(ours) == sorted(theirs.keys())
    for key in ours:
        assert ours[key].tolist() == theirs[key].tolist(), key
