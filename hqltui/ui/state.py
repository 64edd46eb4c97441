"""What the screen shows, as frozen values: one ``ScreenState`` for the local row, one
``EngineState`` for the engine row.

The app holds the current state and replaces it (``dataclasses.replace``) on every
event; views (``hqltui.ui.views``, ``hqltui.ui.engine_views``) turn a state into
Rich text. The rules of what may replace what live here, as pure functions: an
answer older than the one on screen is never shown, and a card the user chose is
kept while any column still ranks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hqltui.core.names import DEFAULT_LEXICAL, LEXICAL_ARMS

if TYPE_CHECKING:
    from hqltui.core.engine import EngineAnswer, VerifyReport
    from hqltui.core.labels import Label, Labels
    from hqltui.core.ranking import Ranking
    from hqltui.core.session import Answer, IndexSummary, Session
    from hqltui.ui.related_views import RelatedPane
    from producer.vault import Card

SLOTS = ("lexical", "semantic", "hybrid")


@dataclass(frozen=True)
class PartialAnswer:
    """Lexical only, while the semantic arm waits for a live query vector."""

    query: str
    lexical: Ranking
    semantic: None = None
    hybrid: None = None


@dataclass(frozen=True)
class ScreenState:
    vault_path: Path
    session: Session | None = None
    load_error: str | None = None
    summary: IndexSummary | None = None
    statuses: Mapping[str, str] = field(default_factory=dict)
    lexical: str = DEFAULT_LEXICAL  # the arm asked for (F2)
    answer: Answer | PartialAnswer | None = None
    answer_text: str = ""
    answer_arm: str | None = None  # the lexical arm the answer on screen used
    shown_generation: int = 0
    shown_partial: bool = False
    selected: str | None = None
    pinned: bool = False  # the user chose ``selected`` since the query was last edited
    labels: Labels | None = None  # the vault's labels file (None: not read yet)
    snippets: bool = True  # semantic and hybrid rows show the passage that answered
    # What is being made before the columns can rank ("opening the index", "building
    # bm25"); None once the session can rank with ``lexical``.
    preparing: str | None = None
    related: RelatedPane | None = None  # the card pane's related section (ui.related_views)

    @property
    def labelled_text(self) -> str:
        """The text labels are kept under: the query on screen, without its outer spaces."""
        return self.answer_text.strip() if self.answer is not None else ""

    def label(self) -> Label | None:
        """The labels of the query on screen (None: no query, or no labels file read)."""
        text = self.labelled_text
        if not text or self.labels is None:
            return None
        return self.labels.get(text)
    fusion: str | None = None  # hybrid's method chosen in the app (None: [search] fusion)

    @property
    def fusion_method(self) -> str:
        """The fusion method hybrid uses now: the app's choice, else the vault's."""
        configured = getattr(getattr(self.session, "search", None), "fusion", None)
        return self.fusion or configured or "rrf"

    @property
    def shown_arm(self) -> str:
        """The lexical arm behind the columns on screen: labels follow the numbers shown,
        not a switch whose answer has not arrived yet."""
        return self.answer_arm if self.answer is not None and self.answer_arm else self.lexical

    @property
    def index_file(self) -> str | None:
        """The semantic index the vault's hql.toml names (watched with the vault)."""
        path = getattr(getattr(self.session, "config", None), "index_path", None)
        return str(path) if path else None

    def rankings(self) -> dict[str, Ranking | None]:
        answer = self.answer
        if answer is None:
            return {}
        return {"lexical": answer.lexical, "semantic": answer.semantic, "hybrid": answer.hybrid}

    def card_names(self) -> list[str]:
        return [card.name for card in self.session.vault.cards] if self.session else []

    def card(self, name: str | None) -> Card | None:
        if self.session is None or name is None:
            return None
        return self.session.vault.by_name.get(name)

    def warnings(self) -> list[tuple[str, str]]:
        """(kind, message) from the session, then from the answer on screen, without repeats."""
        found: list[tuple[str, str]] = []
        if self.load_error:
            found.append(("error", self.load_error))
        pending = list(getattr(self.session, "warnings", ()) or ())
        for ranking in self.rankings().values():
            if ranking is not None:
                pending.extend(ranking.warnings)
        seen: set[str] = set()
        for warning in pending:
            kind = getattr(warning, "kind", "warning")
            message = getattr(warning, "message", str(warning))
            if message not in seen:
                seen.add(message)
                found.append((kind, message))
        return found


def default_arm(session: Session) -> str:
    """The lexical arm of the vault's ``[search] lexical`` (the default when it names none)."""
    arm = getattr(getattr(session, "search", None), "lexical", DEFAULT_LEXICAL)
    return arm if arm in LEXICAL_ARMS else DEFAULT_LEXICAL


def loaded(state: ScreenState, session: Session) -> ScreenState:
    """A new session on screen: its index summary and each card's index status."""
    summary = session.index_summary()
    ok = summary.state == "ok"
    if ok:
        statuses = session.card_statuses()
    else:
        statuses = dict.fromkeys((card.name for card in session.vault.cards), "")
    return replace(state, session=session, load_error=None, summary=summary, statuses=statuses)


def with_answer(state: ScreenState, generation: int, text: str, arm: str,
                answer: Answer | PartialAnswer | None, partial: bool) -> ScreenState | None:
    """``state`` showing this answer, or None when the screen holds a newer one (or this
    one, complete): an older answer is never shown."""
    newer = generation > state.shown_generation
    completes = generation == state.shown_generation and state.shown_partial and not partial
    if not (newer or completes):
        return None
    shown = replace(state, shown_generation=generation, shown_partial=partial, answer=answer,
                    answer_text=text, answer_arm=arm)
    return shown if answer is None else pick_selection(shown)


def pick_selection(state: ScreenState) -> ScreenState:
    """Keep a card the user chose while any column ranks it; else the best hybrid hit."""
    rankings = state.rankings()
    ranked = [r.names() for r in rankings.values() if r is not None and r.ok]
    if state.pinned and any(state.selected in names for names in ranked):
        return state
    for slot in ("hybrid", "semantic", "lexical"):
        ranking = rankings.get(slot)
        if ranking is not None and ranking.ok and ranking.hits:
            return replace(state, selected=ranking.hits[0].card)
    return state


@dataclass(frozen=True)
class EngineState:
    """The engine row: on or off, the newest answer shown and the newest verify report."""

    active: bool = False
    generation: int = 0  # newest engine query started
    shown_generation: int = 0
    answer: EngineAnswer | None = None
    reference: Answer | None = None  # the local (bm25) answer it is compared with
    report: VerifyReport | None = None
    check_line: tuple[str, str, str | None] | None = None  # (kind, message, fix)
    unavailable: tuple[str, str, str | None] | None = None
    checking: bool = False

    @property
    def pending(self) -> bool:
        """A newer engine query than the answer on screen is still out."""
        return self.generation > self.shown_generation
