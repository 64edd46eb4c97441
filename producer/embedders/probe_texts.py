"""The texts a new ONNX graph is checked on against torch before it is used.

Chosen to reach what differs between runtimes: a one-word text, texts cut at
the 256-token limit, batches padded to their longest text (lengths spread so
each batch of 16 holds several widths), and non-ASCII (accents, combining
marks, CJK, emoji, right-to-left, a word over 100 characters that becomes one
``[UNK]``). Committed, so every machine checks the same texts.
"""

from __future__ import annotations

_WORDS = (
    "owl heron night marsh wing feather hunt quiet reed egg the a of to grep sed awk "
    "manual page option file directory print list sort"
).split()


def _words(n: int, offset: int) -> str:
    return " ".join(_WORDS[(i * 7 + offset) % len(_WORDS)] for i in range(n))


SHORT = ("owls", "night hunting birds", "x")
NON_ASCII = (
    "Ünïcödé café naïve façade — “quoted” ‘text’ …",
    "日本語のテキストと中文文本 한국어 텍스트",
    "owl 🦉 heron 🪶 night 🌙 emoji between words",
    "o\u0301\u0308wl he\u0301ro\u0308n combining marks on every letter",
    "שלום עולם مرحبا بالعالم right to left scripts",
    "k" * 130 + " a word too long for the vocabulary",
    "tab\tseparated\tcolumns\nand\r\nline breaks \u00a0non-breaking\u2009thin spaces",
)
# Lengths from a few tokens to past the 256-token cut, so batches are padded.
SPREAD = tuple(_words(n, n) for n in (5, 12, 30, 60, 90, 120, 160, 200, 240, 250, 300, 600))

PROBE_TEXTS: tuple[str, ...] = SHORT + NON_ASCII + SPREAD

# What ``auto`` is timed on when a graph is made: a build's usual work, full batches
# of texts past the 256-token cut (most man pages are), and a batch of mid-length ones.
TIMING_TEXTS: tuple[str, ...] = tuple(_words(300 + i, i) for i in range(32)) + tuple(
    _words(60 + 5 * i, i) for i in range(16)
)
