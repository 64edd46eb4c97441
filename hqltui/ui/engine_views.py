"""Pure views of the engine row: an ``EngineState`` to titles, columns or one line, and
the header's engine part.

Each engine column shows, per card, its rank difference with the matching local
column (bm25, semantic, hybrid of bm25 + semantic): ``=``, ``▲n`` (the engine puts
it n places higher), ``▼n``, ``new`` (not in the local column). A refusal (no
``[engine]``, a variable unset) or an engine failure is one line in place of the
three columns. The vector title says what the engine's evidence says
(``approximate`` only when a ready vector index served it, ``exact · full scan``
otherwise, nothing before an answer); the engine's warnings (a missing index, the
engine's own) are a notes line under the columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text

from hqltui.ui.state import EngineState
from hqltui.ui.views import Column, ranking_column, with_fix_text
from producer.terminal import shown

if TYPE_CHECKING:
    from hqltui.core.ranking import Hit, Ranking
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette

ENGINE_SLOTS = ("engine-bm25", "engine-semantic", "engine-hybrid")
ENGINE_ARMS = {"engine-bm25": "bm25", "engine-semantic": "semantic", "engine-hybrid": "hybrid"}
# The local ranking each engine column is compared with (the engine has BM25 only, and
# fuses by RRF in SQL: its hybrid is compared with the local rrf of the same windows).
REFERENCE = {"engine-bm25": "lexical", "engine-semantic": "semantic",
             "engine-hybrid": "rrf_hybrid"}
EMPTY = {"engine-bm25": "no engine bm25 match", "engine-semantic": "no engine vector match",
         "engine-hybrid": "no match in either engine arm"}


def rank_delta(local_rank: int | None, engine_rank: int) -> str:
    """How the engine moved a card against the local column: ``=``, ``▲2``, ``▼1``, ``new``.

    ``▲n``: the engine ranks the card n places higher (nearer the top) than the local
    column; ``new``: the local column does not show the card at all.
    """
    if local_rank is None:
        return "new"
    if local_rank == engine_rank:
        return "="
    if local_rank > engine_rank:
        return f"▲{local_rank - engine_rank}"
    return f"▼{engine_rank - local_rank}"


@dataclass(frozen=True)
class EngineView:
    """The row as drawn: three titles, and either three columns or one line."""

    titles: dict[str, Text]
    columns: dict[str, Column] = field(default_factory=dict)
    line: Text | None = None
    line_kind: str = ""
    notes: Text | None = None  # the answer's warnings, under the columns


def vector_claim(state: EngineState, p: Palette) -> Text:
    """The vector title's claim, from the answer's evidence; nothing before an answer."""
    ranking = state.answer.semantic if state.answer is not None else None
    retrieval = ranking.retrieval if ranking is not None else None
    if retrieval is None:
        return Text()
    if retrieval.approximate:
        return Text.assemble(" (", ("approximate", p.warning), ")")
    return Text.assemble(" (", ("exact · full scan", p.muted), ")")


def titles(state: EngineState, p: Palette) -> dict[str, Text]:
    mark = (" · asking…", p.accent) if state.pending else ""
    return {
        "engine-bm25": Text.assemble(("engine bm25", "bold"), (" · Δ vs local bm25", p.muted),
                                     mark),
        "engine-semantic": Text.assemble(("engine vector", "bold"), vector_claim(state, p),
                                         (" · Δ", p.muted), mark),
        "engine-hybrid": Text.assemble(("engine hybrid", "bold"),
                                       (" · rrf · Δ vs local rrf (bm25)", p.muted), mark),
    }


def notes(state: EngineState, p: Palette) -> Text | None:
    """Each warning of the answer's arms once, under the arm that gave it first."""
    if state.answer is None:
        return None
    out = Text(no_wrap=False)
    seen: set[str] = set()
    for arm, ranking in state.answer.rankings().items():
        for warning in ranking.warnings:
            if warning.message in seen:
                continue
            seen.add(warning.message)
            if out:
                out.append("\n")
            out.append(f"engine {arm}: ", style=p.warning)
            out.append(shown(warning.message))
    return out if out else None


def busy(state: EngineState, text: str, p: Palette) -> EngineView:
    """Every column waiting (the first query of the row is out)."""
    message = Column(message=Text(text, style=p.muted), kind="busy")
    return EngineView(titles(state, p), dict.fromkeys(ENGINE_SLOTS, message))


def unavailable_line(kind: str, message: str, fix: str | None, p: Palette) -> Text:
    out = Text(no_wrap=False)
    lead = {"refusal": "engine refused: ", "empty": "engine: "}.get(kind, "engine failed: ")
    out.append(lead, style=p.warning if kind == "empty" else p.error)
    return out.append_text(with_fix_text(message, fix, p))


def row(state: EngineState, p: Palette, keys: Keys) -> EngineView:
    """The row for ``state``: why the engine cannot answer, or its three columns."""
    head = titles(state, p)
    blocked = state.unavailable
    report = state.report
    if state.check_line and state.check_line[0] == "refusal":
        blocked = state.check_line
    elif report is not None and any(pr.kind == "no-rows" for pr in report.problems):
        blocked = ("empty", f"{report.table} has no rows on the engine yet",
                   f"{keys.hint('app.engine-sync')} runs engine sync + build")
    answer = state.answer
    if state.pending and answer is None:
        return busy(state, "asking the engine…", p)
    if blocked is not None:
        return EngineView(head, line=unavailable_line(*blocked, p), line_kind=blocked[0])
    if answer is None:
        empty = Column(message=Text("type a query to rank on the engine", style=p.muted),
                       kind="empty")
        return EngineView(head, dict.fromkeys(ENGINE_SLOTS, empty))
    parity = report.parity if report is not None else None
    stale = set(parity.stale) if parity else set()
    rankings = answer.rankings()
    out: dict[str, Column] = {}
    for slot in ENGINE_SLOTS:
        ranking = rankings.get(ENGINE_ARMS[slot])
        reference = state.reference
        local = getattr(reference, REFERENCE[slot], None) if reference is not None else None
        if ranking is None:
            out[slot] = Column(message=Text("not asked", style=p.muted), kind="busy")
        else:
            out[slot] = ranking_column(ranking, EMPTY[slot], p, keys,
                                       partial(delta, local=local, stale=stale, p=p))
    return EngineView(head, out, notes=notes(state, p))


def delta(hit: Hit, local: Ranking | None, stale: set[str], p: Palette) -> Text:
    out = Text()
    if local is None or not local.ok:
        out.append("  ")
    else:
        found = local.hit(hit.card)
        moved = rank_delta(found.rank if found is not None else None, hit.rank)
        style = p.muted if moved == "=" else p.accent if moved == "new" else \
            p.success if moved.startswith("▲") else p.warning
        out.append(moved, style=style)
    if hit.card in stale:
        out.append(" !", style=p.warning)
    return out


def header(state: EngineState, p: Palette, keys: Keys) -> Text:
    """The header's engine part: counts from the newest verify, or why there are none."""
    sync = keys.hint("app.engine-sync")
    out = Text()
    out.append("engine ", style="bold")
    report = state.report
    if report is None:
        if state.check_line is not None:
            kind, message, _ = state.check_line
            out.append("refused — see the engine row" if kind == "refusal"
                       else f"check failed: {message}", style=p.error)
        else:
            out.append("checking…", style=p.muted)
        return out
    out.append(report.table)
    parity = report.parity
    if parity is None:
        if "no-rows" in [problem.kind for problem in report.problems]:
            out.append(" · no rows yet", style=p.warning)
            out.append(f" — {sync} syncs and builds", style=p.muted)
        return out
    counts = report.counts()
    out.append(f" · {parity.same} in step ")
    for i, label in enumerate(("stale", "missing", "orphan")):
        if i:
            out.append(" ")
        count = counts[label]
        style = (p.error if label == "missing" else p.warning) if count else ""
        out.append(f"{count} {label}", style=style)
    if any(pr.kind.startswith("index-") for pr in report.problems):
        out.append(" · indexes not ready", style=p.warning)
        out.append(f" — {sync} builds", style=p.muted)
    elif report.problems:
        out.append(f" · {sync} syncs and builds", style=p.muted)
    else:
        out.append(" · indexes ready", style=p.success)
    return out
