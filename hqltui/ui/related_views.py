"""What the related-cards parts of the app show, as Rich text from core answers.

The card pane's ``related`` section (top ``PANE_LIMIT``, linked ones marked) and
the rows of the links screen (a card's full related list, or the vault's link
suggestions). Pure functions: the app's controller hands them the answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from producer.terminal import shown

if TYPE_CHECKING:
    from hqltui.core.related import Related, Relatedness
    from hqltui.core.suggestions import Suggestion
    from hqltui.ui.palette import Palette

PANE_LIMIT = 5
TITLE_CHARS = 30  # a pair's titles are cut here, so the row's "why" stays on screen
LINKED = "↔ linked"


@dataclass(frozen=True, repr=False)  # its repr would print the whole session
class RelatedPane:
    """The card pane's related section for one session: its scorer and the key hint."""

    relatedness: Relatedness
    hint: str  # the key that opens the full list


@dataclass(frozen=True)
class LinkRow:
    """One row of the links screen: a pair of cards, its score and why."""

    source: str
    target: str
    score: float
    why: str
    linked: bool = False


def pane_section(head: Text, pane: RelatedPane | None, session: Any, name: str,
                 p: Palette) -> None:
    """Append ``related`` (top 5, linked marked) to the card pane's header."""
    if pane is None or pane.relatedness.session is not session:
        return
    head.append(f"\nrelated ({pane.hint}: all) ", style="bold")
    if session.index_pending:
        head.append("index opening…", style=p.muted)
        return
    if session.index is None:
        head.append("none: no semantic index (see warnings)", style=p.muted)
        return
    if not session.lexical.is_built("bm25"):
        head.append("after the first ranking", style=p.muted)
        return
    answer = pane.relatedness.related(name, PANE_LIMIT)
    if answer.refusal is not None:
        head.append(shown(answer.refusal.message), style=p.warning)
        return
    if not answer.neighbours:
        head.append("none", style=p.muted)
    width = max((len(shown(n.card)) for n in answer.neighbours), default=0)
    for n in answer.neighbours:
        head.append(f"\n  {n.rank}  {shown(n.card).ljust(width)}  {n.score:.3f}")
        if n.linked:
            head.append(f"  {LINKED}", style=p.accent)
        if n.status == "stale":
            head.append("  stale", style=p.warning)
    if answer.duplicates:
        head.append("\n  same text: ", style=p.muted)
        head.append(shown(", ".join(answer.duplicates)))


def neighbour_why(vector: float, lexical: float | None) -> str:
    return f"vec {vector:.3f}" + ("" if lexical is None else f" + lex {lexical:.3f}")


def related_rows(answer: Related) -> list[LinkRow]:
    return [LinkRow(answer.card, n.card, n.score, neighbour_why(n.vector, n.lexical), n.linked)
            for n in answer.neighbours]


def suggestion_rows(pairs: tuple[Suggestion, ...]) -> list[LinkRow]:
    return [LinkRow(s.source, s.target, s.score, s.why()) for s in pairs]


def matches(row: LinkRow, needle: str, titles: dict[str, str]) -> bool:
    """Does the filter text occur in either card's name or title (case-insensitive)?"""
    if not needle:
        return True
    needle = needle.casefold()
    return any(needle in text.casefold() for text in (
        row.source, row.target, titles.get(row.source, ""), titles.get(row.target, "")))


def columns(pairs: bool) -> tuple[str, ...]:
    """The links screen's columns: a card's related list shows only the other card."""
    return ("#", "score", "card", "→ card", "why") if pairs else ("#", "score", "card", "why")


def table_cells(rank: int, row: LinkRow, titles: dict[str, str], p: Palette,
                pairs: bool = True) -> list[Text]:
    """# · score · card · → card · why, each card by its title (the copied link names it)."""
    def card(name: str) -> Text:
        title = shown(titles.get(name) or name)
        if pairs and len(title) > TITLE_CHARS:
            title = title[:TITLE_CHARS - 1] + "…"
        return Text(title)

    why = Text(shown(row.why))
    if row.linked:
        why = Text.assemble((LINKED + "  ", p.accent), why)
    cards = [card(row.source), card(row.target)] if pairs else [card(row.target)]
    return [Text(str(rank)), Text(f"{row.score:.3f}"), *cards, why]


def progress_text(done: int, total: int, method: str, p: Palette) -> Text:
    return Text.assemble(("comparing cards: ", "bold"), f"{done:,} of {total:,}",
                         (f"  · {method}", p.muted))
