"""Passages: how a card's text is cut into windows of tokens, and the recipe that says so.

A card's vector reads only the first 256 word pieces of its text. With passages
on (``[semantics] passages = true`` or ``build --passages``) each card is also
cut into windows of ``window`` tokens that overlap by ``overlap`` tokens, each
embedded with the card's title before it, at most ``max_per_card`` per card; the
semantic arm then scores a card by its best passage.

How a window is cut (``cut_windows``), on token boundaries of the model's own
tokenizer:

* a window starts at token ``s`` and would end at ``s + window``;
* when the text goes on, the end moves back to the latest *break* in the last
  half of the window: a token that starts a heading line (a line whose first
  character is ``#``) is preferred, then a token after a blank line;
* a window that ends at a break is followed by one starting exactly there (a
  new section needs no overlap); any other window by one starting ``overlap``
  tokens before its end;
* the last window ends with the text; after ``max_per_card`` windows the rest
  of the card has no passage (its card vector still covers the beginning).

Offsets are character offsets (Python string indices, i.e. Unicode code
points) into ``text(card)``, the text contract of ``producer.vault``: a
passage's text is ``text[start:end]``. What is embedded is the title, a space,
then that text (a passage starting at 0 already begins with the title, so it
gets no prefix). A card whose one passage is its whole text stores its card
vector as that passage: the embedded text is the same.

The recipe (window, overlap, title prefix, cap, break rule, tokenizer) is one
row of the ``chunk_recipe`` table; its digest joins the model revision in the
rule that decides whether a stored passage vector may be reused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

WINDOW = 200
OVERLAP = 40
MAX_PER_CARD = 40
BREAKS = "heading,blank-line"
RECIPE_VERSION = 1
# Measured variants (docs/passages.md, "How the recipe and the rule were chosen"), not
# shipped: no snapping to breaks, and a short last window moved back to a whole window.
NO_BREAKS = "none"

Span = tuple[int, int]


@dataclass(frozen=True)
class Recipe:
    window: int = WINDOW
    overlap: int = OVERLAP
    title_prefix: bool = True
    max_per_card: int = MAX_PER_CARD
    breaks: str = BREAKS
    version: int = RECIPE_VERSION
    # A last window shorter than this starts earlier, so that it holds ``window`` tokens
    # (or the whole text). 0 (recipe 1): as cut. Measured, not shipped.
    min_tail: int = 0

    def fields(self) -> dict[str, object]:
        """The recipe as stored; ``min_tail`` appears only where it is set, so recipe 1's
        digest is the one recipe-1 indexes hold."""
        made = asdict(self)
        if not self.min_tail:
            del made["min_tail"]
        return made

    @property
    def digest(self) -> str:
        """``sha256:`` over the recipe as canonical JSON: what a stored passage was cut by."""
        body = json.dumps(self.fields(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(b"hql-semantics passages\n" + body.encode()).hexdigest()

    def to_json(self) -> dict[str, object]:
        return {**self.fields(), "digest": self.digest}

    def problem(self) -> str | None:
        """Why the reader cannot trust this recipe (None: it can)."""
        known = (self.version == RECIPE_VERSION and self.breaks == BREAKS
                 and self.min_tail == 0 and 0 < self.window <= 512
                 and 0 <= self.overlap < self.window and self.max_per_card > 0)
        return None if known else "the passage recipe is not one this tool knows"


DEFAULT_RECIPE = Recipe()


def _is_break(text: str, prev_end: int, start: int) -> int:
    """2 when the token at ``start`` opens a heading line, 1 when a blank line comes
    before it, else 0 (``prev_end``: where the previous token ends)."""
    gap = text[prev_end:start]
    if "\n" in gap and text.startswith("#", start):
        return 2
    return 1 if gap.count("\n") >= 2 else 0


def cut_windows(text: str, offsets: Sequence[Span], recipe: Recipe = DEFAULT_RECIPE) -> list[Span]:
    """The passages of ``text`` as character spans, given its tokens' character spans
    (``offsets``, in order, special tokens excluded). See the module docstring."""
    n = len(offsets)
    if n == 0:
        return [(0, len(text))] if text else []
    spans: list[Span] = []
    s = 0
    snap = recipe.breaks != NO_BREAKS
    while s < n and len(spans) < recipe.max_per_card:
        e = min(s + recipe.window, n)
        if e == n and s > 0 and e - s < recipe.min_tail:
            # a short tail: the text's last ``window`` tokens (the window before started
            # more than ``window`` tokens before the end, so this one still starts after it)
            s = n - recipe.window
        at_break = False
        if e < n and snap:
            best, kind = e, 0
            for i in range(e, s + recipe.window // 2, -1):
                k = _is_break(text, offsets[i - 1][1], offsets[i][0])
                if k > kind:
                    best, kind = i, k
                    if k == 2:
                        break
            if kind:
                e, at_break = best, True
        start = offsets[s][0]
        end = offsets[e - 1][1] if e < n else len(text)
        spans.append((0 if s == 0 else start, end))
        if e >= n:
            break
        s = e if at_break else max(s + 1, e - recipe.overlap)
    return spans


def passage_text(text: str, title: str, span: Span, recipe: Recipe = DEFAULT_RECIPE) -> str:
    """What is embedded for one passage: the title, a space, the passage's text."""
    start, end = span
    piece = text[start:end]
    if recipe.title_prefix and start > 0 and title:
        return f"{title} {piece}"
    return piece


def whole(text: str, spans: Sequence[Span]) -> bool:
    """Is the only passage the whole text (so its vector is the card's)?"""
    return len(spans) == 1 and spans[0] == (0, len(text))


TokenOffsets = Callable[[str, int], list[Span]]
"""(text, tokens needed) -> character spans of at least that many leading tokens
(or of all of them), without special tokens."""


def tokens_needed(recipe: Recipe = DEFAULT_RECIPE) -> int:
    """How many leading tokens can matter: the cap's windows, each advancing at most a
    window, plus one to see whether the text goes on."""
    return recipe.max_per_card * recipe.window + 1
