"""Pure views: a ``ScreenState`` (and the theme's palette, the active keys) to Rich text.

Nothing here touches a widget, a worker or a file: the app asks these functions what
to show and hands the result to its widgets, so each wording has one home and every
key named on screen is the active binding's (``Keys.hint``).

The first frame (``loading_status``, ``message_columns``, the titles) needs none of the
scoring core: the views of answers, labels and snippets import ``hqltui.core``'s
evaluation, hybrid and snippets where they run, by then loaded by the session worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from hqltui.core import oneline
from hqltui.core.names import LEXICAL_CHOICES
from hqltui.ui import related_views, render
from hqltui.ui.state import SLOTS, ScreenState
from producer.terminal import shown
from producer.wording import refusal_spans

if TYPE_CHECKING:
    from hqltui.core.evaluation import QueryScores
    from hqltui.core.labels import Labels
    from hqltui.core.ranking import Hit, Passage, Ranking, Refusal, Retrieval
    from hqltui.ui.keys import Keys
    from hqltui.ui.palette import Palette
    from producer.vault import Card

# The strip lists what blocks or skews a ranking first.
WARNING_ORDER = {"error": 0, "arm": 1, "config": 1, "stale": 2, "absent": 3, "orphan": 4,
                 "embedder": 5, "loader": 6, "link": 7}
# The card pane is 13 rows tall: it previews this many body lines (a man page holds
# thousands, and drawing them all on every answer cost most of a keystroke).
PREVIEW_LINES = 60
EMPTY = {"lexical": "no lexical match", "semantic": "no semantic match",
         "hybrid": "no match in either arm"}
# A row's passage snippet before the column cuts it to its width (a third of a wide screen).
SNIPPET_CHARS = 160
SNIPPET_LEAD = 12  # characters shown before the longest query word the passage holds
HEADING_MARKS = re.compile(r"(?m)^[ \t]*#{1,6}[ \t]+")


@dataclass(frozen=True)
class Row:
    """One ranked card as a column draws it: rank, name, score, badges."""

    rank: int
    name: str
    score: str
    badges: Text
    label: Text | None = None  # ✓ relevant or ✗ decoy for the query on screen
    snippet: Text | None = None  # a second line: the passage that answered (the column cuts it)


@dataclass(frozen=True)
class Column:
    """What one ranking column shows: rows, or one message of a ``kind``."""

    rows: list[Row] | None = None
    message: Text | None = None
    kind: str = ""


# --------------------------------------------------------------------- status line


def loading_status(path: Path, p: Palette) -> Text:
    return Text(f"{shown(path)} · loading vault…", style=p.muted)


def failed_status(path: Path, message: str | None, p: Palette) -> Text:
    return Text(f"{shown(path)} · cannot be opened: {shown(message)}", style=p.error)


def status_line(state: ScreenState, p: Palette, keys: Keys, now: datetime) -> Text:
    """Vault, card count, index state (counts, model, revision, age) or why there is none."""
    session = state.session
    if session is None:
        return failed_status(state.vault_path, state.load_error, p)
    name = shown(state.vault_path.name or str(state.vault_path))
    out = Text.assemble((name, "bold"), " · ", render.plural(len(session.vault.cards), "card"))
    summary = state.summary
    out.append(" · ")
    config_errors = getattr(session.config, "errors", {})
    if summary is None or summary.state != "ok":
        if "semantics" in config_errors:
            out.append("index unusable", style=p.error)
            out.append(" — hql.toml is refused, see warnings", style=p.muted)
        elif summary is not None and summary.state == "refused":
            out.append("index unusable", style=p.error)
            out.append(" — see warnings", style=p.muted)
        elif summary is not None and summary.state == "opening":
            out.append("index opening…", style=p.muted)
        else:
            out.append("no index", style=p.warning)
            out.append(f" — build one: press {keys.hint('jobs.build')}", style=p.muted)
        return out
    counts = [("fresh", summary.fresh, p.success), ("stale", summary.stale, p.warning),
              ("missing", summary.missing, p.error), ("orphan", summary.orphan, p.warning)]
    out.append("index ")
    for i, (label, count, style) in enumerate(counts):
        if i:
            out.append(" ")
        out.append(f"{count} {label}", style=style if count and label != "fresh" else "")
    out.append(" · ")
    out.append(shown(render.short_model(summary.model)), style=p.primary)
    out.append(f" {shown(render.short_revision(summary.revision))}")
    out.append(f" · built {render.age(_parse_time(summary.built_at), now)} ago")
    return out


def _parse_time(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


# ------------------------------------------------------------------------ columns


def column_titles(state: ScreenState, p: Palette, keys: Keys) -> dict[str, Text]:
    """Each column's title: its arm, then (the query on screen labelled) its metrics."""
    arm = state.shown_arm
    titles = {
        "lexical": Text.assemble(("lexical", "bold"), " · ", (arm, p.accent),
                                 (f" · fused · {keys.hint('app.lexical')} switches", p.muted)),
        "semantic": Text("semantic", style="bold"),
        "hybrid": Text.assemble(("hybrid", "bold"), (hybrid_title(state, arm), p.muted)),
    }
    return titles_with_metrics(titles, state, p)


# ------------------------------------------------------------ labels (workbench)


def label_marks(state: ScreenState) -> Callable[[str], str] | None:
    """``card → relevant / decoy / ""`` for the query on screen (None: nothing labelled)."""
    label = state.label()
    if label is None or (not label.relevant and not label.decoys):
        return None
    return label.mark


def column_scores(state: ScreenState) -> dict[str, QueryScores] | None:
    """Each column's figures on the query on screen, when it is labelled (a relevant card
    named) and every column has answered; the metrics are ``eval``'s own."""
    label = state.label()
    if label is None or not label.saved:
        return None
    rankings = state.rankings()
    from hqltui.core.evaluation import query_scores

    out = {}
    for slot in SLOTS:
        ranking = rankings.get(slot)
        if ranking is None:
            return None  # the semantic arm is still on its way
        out[slot] = query_scores(ranking.names() if ranking.refusal is None else None,
                                 label.relevant, label.decoys)
    return out


def metrics_line(scores: QueryScores, wins: bool, p: Palette) -> Text:
    """``hit@1 1 · MRR@10 0.50 · R@10 0.75 ★``: one column's figures (★: it wins)."""
    if scores.refused:
        return Text("refused: counts as a miss", style=p.error)
    out = Text.assemble(
        ("hit@1 ", p.muted), f"{scores.hit1:.0f}", (" · MRR@10 ", p.muted),
        f"{scores.mrr10:.2f}", (" · R@10 ", p.muted), f"{scores.recall10:.2f}")
    if wins:
        out.append(" ★", style=f"bold {p.success}")
    return out


def titles_with_metrics(titles: dict[str, Text], state: ScreenState, p: Palette
                        ) -> dict[str, Text]:
    """``titles`` with a second line of metrics under each, when the query is labelled."""
    scores = column_scores(state)
    if scores is None:
        return titles
    from hqltui.core.evaluation import winners

    won = set(winners(scores))
    return {slot: Text.assemble(title, "\n", metrics_line(scores[slot], slot in won, p))
            for slot, title in titles.items()}


def label_line(state: ScreenState, p: Palette, keys: Keys) -> Text | None:
    """The line under the query: the labels file's refusal, or what the query on screen is
    labelled with and the keys that label; None when there is nothing to say."""
    labels = state.labels
    if labels is not None and labels.error and labels.in_file:  # hql.toml's: the strip has it
        return Text(f"labels: {shown(oneline.one_line(labels.error))}", style=p.error,
                    no_wrap=True, overflow="ellipsis")
    label = state.label()
    if label is None or label.empty:
        return None
    h = keys.hint
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append("labelled" if label.saved else "not saved yet (mark a relevant card)",
               style=p.success if label.saved else p.warning)
    out.append(f" · {len(label.relevant)} relevant ✓ · {len(label.decoys)} "
               f"decoy{'s' if len(label.decoys) != 1 else ''} ✗ · kind {label.kind or 'none'}")
    if labels is not None:
        out.append(f" · {shown(labels.path.name)}", style=p.muted)
    out.append(f" · {h('main.label-relevant')} relevant · {h('main.label-decoy')} decoy · "
               f"{h('main.label-kind')} kind · {h('main.label-undo')} undo", style=p.muted)
    return out


def hybrid_title(state: ScreenState, arm: str) -> str:
    """`` · <method> of <arm>`` (with semantic, always), the method with this query's α when
    it has one (the answer on screen, if it used the method now chosen); short enough for
    a third of an 120-column terminal."""
    method = state.fusion_method
    hybrid = state.rankings().get("hybrid")
    retrieval = hybrid.retrieval if hybrid is not None else None
    if retrieval is None or retrieval.fusion != method:
        return f" · {method} of {arm}"  # no answer by this method yet: its name alone
    from hqltui.core.hybrid import fusion_title

    return f" · {fusion_title(retrieval, method)} of {arm}"


def message_columns(text: str, style: str, kind: str) -> dict[str, Column]:
    """The same message in every column (loading, no query yet, the vault is gone)."""
    return {slot: Column(message=Text(text, style=style), kind=kind) for slot in SLOTS}


def preparing_text(step: str) -> str:
    """What every column says while the session is made ready to rank."""
    return f"ranking… {step}"


def columns(state: ScreenState, p: Palette, keys: Keys) -> dict[str, Column]:
    """Each column's rows with their badges, or its one message (waiting, refused, none)."""
    if state.preparing is not None:
        return message_columns(preparing_text(state.preparing), p.muted, "busy")
    if state.answer is None:
        return message_columns("type a query to rank the cards", p.muted, "empty")
    rankings = state.rankings()
    lexical, semantic, hybrid = (rankings[s] for s in SLOTS)
    in_lex = set(lexical.names()) if lexical is not None and lexical.ok else set()
    in_sem = set(semantic.names()) if semantic is not None and semantic.ok else set()
    if hybrid is not None and hybrid.ok:
        for hit in hybrid.hits:
            arms = hit.arms or {}
            if arms.get(state.shown_arm) is not None:
                in_lex.add(hit.card)
            if arms.get("semantic") is not None:
                in_sem.add(hit.card)
    out: dict[str, Column] = {}
    for slot, ranking in zip(SLOTS, (lexical, semantic, hybrid), strict=True):
        if ranking is None:
            wait = ("loading the model for a live query vector…" if slot == "semantic"
                    else "waiting for the semantic arm…")
            out[slot] = Column(message=Text(wait, style=p.muted), kind="busy")
        else:
            out[slot] = ranking_column(
                ranking, EMPTY[slot], p, keys,
                lambda hit: badges(hit.card, in_lex, in_sem, state.statuses, p),
                label_marks(state),
                (lambda hit: row_snippet(state, hit, p)) if wants_snippets(state, slot, ranking)
                else None)
    return out


def wants_snippets(state: ScreenState, slot: str, ranking: Ranking) -> bool:
    """Semantic and hybrid rows show their passage when the arm scored passages and the
    snippets are on (the default; ``app.snippets`` toggles them)."""
    if not state.snippets or slot == "lexical" or not ranking.ok:
        return False
    return any(hit.passage is not None for hit in ranking.hits)


def row_snippet(state: ScreenState, hit: Hit, p: Palette) -> Text:
    """The line under a row: the passage that answered (whitespace collapsed, controls made
    visible, from its longest query word), what scored instead, or why it is not quoted."""
    passage = hit.passage
    card = state.card(hit.card)
    if passage is None or card is None:
        return Text("")
    if passage.ordinal is None:
        return Text("card vector: its beginning", style=p.muted)
    from hqltui.core import snippets

    where = f"p{passage.ordinal} "
    stale = state.statuses.get(hit.card) == "stale"
    text = snippets.answered_text(card, passage, stale)
    if text is None:
        why = "stale: not quoted (the card changed)" if stale else (
            "not quoted: its offsets are outside the card's text")
        return Text.assemble((where, p.muted), (why, p.warning))
    text = HEADING_MARKS.sub("", text)  # "## Options" reads "Options" on one line
    quoted = snippets.snippet(text, state.answer_text, SNIPPET_CHARS, SNIPPET_LEAD,
                              render.analyser_of(state.shown_arm))
    return Text.assemble((where, p.muted), (shown(quoted), "italic"))


def ranking_column(ranking: Ranking, empty: str, p: Palette, keys: Keys,
                   marks: Callable[[Hit], Text],
                   labelled: Callable[[str], str] | None = None,
                   snippet: Callable[[Hit], Text] | None = None) -> Column:
    """One ranking as rows (``marks(hit)`` gives a row's badges, ``labelled(card)`` its
    label mark, ``snippet(hit)`` its second line), its refusal, or ``empty``."""
    if not ranking.ok and ranking.refusal is not None:
        return Column(message=refusal(ranking.refusal, p, keys), kind="refusal")
    if not ranking.hits:
        return Column(message=Text(empty, style=p.warning), kind="none")
    return Column(rows=[Row(hit.rank, hit.card, render.score(hit.score), marks(hit),
                            label_mark(labelled(hit.card), p) if labelled else None,
                            snippet(hit) if snippet else None)
                        for hit in ranking.hits])


def label_mark(label: str, p: Palette) -> Text | None:
    """One character before a card's name: ✓ relevant, ✗ decoy (None: unlabelled)."""
    if label == "relevant":
        return Text("✓", style=f"bold {p.success}")
    if label == "decoy":
        return Text("✗", style=p.error)
    return None


def badges(name: str, in_lex: set[str], in_sem: set[str], statuses: Mapping[str, str],
           p: Palette) -> Text:
    """``LS`` / ``L·`` / ``·S``: which arms rank the card; `` !`` stale, `` ×`` missing."""
    out = Text()
    if name in in_lex and name in in_sem:
        out.append("LS", style=p.success)
    elif name in in_lex:
        out.append("L·", style=p.muted)
    elif name in in_sem:
        out.append("·S", style=p.muted)
    else:
        out.append("  ")
    status = statuses.get(name, "")
    if status == "stale":
        out.append(" !", style=p.warning)
    elif status == "missing":
        out.append(" ×", style=p.error)
    return out


def refusal(refused: Refusal, p: Palette, keys: Keys) -> Text:
    """Why an arm refused, and the fix (``live``: submit the query to embed it)."""
    fix = refused.fix
    if fix == "live":
        fix = f"press {keys.hint('textual.submit')} in the query to embed it with the http embedder"
    out = Text()
    out.append("refused: ", style=p.error)
    return out.append_text(with_fix_text(refused.message, fix, p))


def with_fix_text(message: str, fix: str | None, p: Palette) -> Text:
    """``producer.wording.with_fix`` styled: the fix in the accent colour."""
    styles = {"message": "", "lead": "bold", "fix": p.accent}
    out = Text(no_wrap=False)
    for role, text in refusal_spans(message, fix):
        out.append(shown(text), style=styles[role])
    return out


def labelled_title(labels: Labels, count: int, p: Palette) -> tuple[Text, Text]:
    """The labelled-queries screen's title line, and what it says while scoring."""
    title = Text.assemble(("labelled queries", "bold"), " · ",
                          (f"{count} in {shown(labels.path.name)}", p.muted),
                          (" · the figures hql-tui eval prints", p.muted))
    counted = render.plural(count, "labelled query", "labelled queries")
    return title, Text(f"scoring {counted} on every arm…", style=p.muted)


# ----------------------------------------------------------------------- warnings


def warnings_title(state: ScreenState, keys: Keys) -> str:
    count = len(state.warnings()) if state.session is not None or state.load_error else 0
    if not count:
        return "warnings"
    return f"warnings ({count}) · {keys.hint('app.warnings')} shows them in full"


def warnings_text(state: ScreenState, p: Palette, one_line: bool) -> Text:
    """Every warning, most severe first; ``one_line`` cuts each to the strip's width."""
    found = sorted(state.warnings(), key=lambda w: WARNING_ORDER.get(w[0], 9))
    out = Text(no_wrap=one_line, overflow="ellipsis" if one_line else "fold")
    if not found:
        out.append("none", style=p.muted)
        return out
    for i, (kind, message) in enumerate(found):
        style = p.error if kind in ("error", "arm", "config") else p.warning
        if i:
            out.append("\n")
        out.append(f"{kind}: ", style=style)
        out.append(shown(oneline.one_line(message) if one_line else message))
    return out


# ------------------------------------------------------------------------- detail


def detail_pane(state: ScreenState, p: Palette) -> RenderableType:
    """The card pane: the selected card, a hint to select one, or nothing."""
    if state.session is None:
        return Text("")
    if state.card(state.selected) is None:
        return Text("select a card in a column or in the card list", style=p.muted)
    return card_detail(state, str(state.selected), p, full=False)


def card_header(card: Card, p: Palette) -> Text:
    return Text.assemble((shown(card.title), "bold"), "  ",
                         (f"{shown(card.name)} · {shown(card.path)}", p.muted))


def card_detail(state: ScreenState, name: str, p: Palette, full: bool) -> RenderableType:
    """Index status, ranks in every column, provenance, links, then the body marked."""
    card = state.card(name)
    assert card is not None and state.session is not None
    vault = state.session.vault
    head = Text()
    if not full:
        head.append(shown(card.title), style="bold")
        head.append(f"  {shown(card.name)} · {shown(card.path)}", style=p.muted)
        head.append("\n")
    status = state.statuses.get(name, "")
    head.append("index: ", style="bold")
    if not status and state.summary is not None and state.summary.state == "refused":
        head.append("index unusable (see warnings)", style=p.error)  # a file is there
    elif not status and state.summary is not None and state.summary.state == "opening":
        head.append("index opening…", style=p.muted)
    else:
        head.append(status or "no index",
                    style={"stale": p.warning, "missing": p.error}.get(status, p.muted))
    passage = answering_passage(state, name)
    span = None
    if passage is not None:  # under the index status: a stale card's says so at the top
        span = _answered(head, passage, card, status == "stale", p)
    rankings = state.rankings()
    _ranks(head, state, name, p)
    if rankings:
        head.append("\nprovenance:", style="bold")
        for slot in SLOTS:
            ranking = rankings.get(slot)
            if ranking is not None and ranking.retrieval is not None:
                head.append("\n  ")
                head.append_text(provenance(ranking.retrieval, p))
    outgoing = [link.target for link in card.links]
    resolved = [t for t in outgoing if t in vault.by_name]
    unresolved = [t for t in outgoing if t not in vault.by_name]
    head.append("\nlinks → ", style="bold")
    head.append(shown(", ".join(dict.fromkeys(resolved))) or "—")
    head.append("\nbacklinks ← ", style="bold")
    head.append(shown(", ".join(vault.backlinks(name))) or "—")
    related_views.pane_section(head, state.related, state.session, name, p)
    if unresolved:
        head.append("\nunresolved: ", style=p.warning)
        head.append(shown(", ".join(dict.fromkeys(oneline.link_target(t) for t in unresolved))))
    arm = state.shown_arm  # its analyser finds the query's terms in the body
    terms = render.query_terms(state.answer_text, arm) if state.answer is not None else set()
    text, more = card.body, 0
    if not full and span is None:  # the pane previews; the card screen shows the whole body,
        text, more = preview(text, PREVIEW_LINES)  # and so does a pane opening at a passage
    body, anchor = render.body_text(text, terms, mark=p.mark, heading=p.heading, span=span,
                                    span_style=p.passage, arm=arm)
    rule = Text("─" * 40, style=p.muted)
    if anchor is None:
        if not more:
            return Group(head, rule, body)
        rest = Text(f"… {render.plural(more, 'more line')} in the full card", style=p.muted)
        return Group(head, rule, body, rest)
    before, after = body.divide([anchor])
    before.rstrip()  # the line break before the passage: the pane starts it on its own line
    return render.Anchored(Group(head, rule, before), after)


def _answered(head: Text, passage: Passage, card: Card, stale: bool, p: Palette
              ) -> tuple[int, int] | None:
    """``answered by:`` in the header, and the span of the body to mark (None: none). A
    stale card's offsets point into the text it had when the index was built, so nothing
    is marked; nor are offsets that are not a span of today's text."""
    which = "its card vector" if passage.ordinal is None else f"passage {passage.ordinal}"
    head.append("\nanswered by: ", style="bold")
    if passage.ordinal is None and passage.end <= passage.start:  # a card with no passages
        head.append("its card vector (no passage of this card is in the index)")
        return None
    where = f"characters {passage.start}–{passage.end}"
    if stale:
        head.append(f"{which}, {where} of the text the index was built from; ")
        head.append("stale: the card changed since, so no passage is marked", style=p.warning)
        return None
    skip = len(card.text) - len(card.body)  # the body ends the text (the text contract)
    span = (max(0, passage.start - skip), max(0, passage.end - skip))
    if not 0 <= passage.start < passage.end <= len(card.text) or span[0] >= span[1]:
        head.append(f"{which}, {where} of its text (none of it in the body)", style=p.muted)
        return None
    head.append(f"{which}, {where} of its text (marked)")
    return span


def preview(body: str, lines: int) -> tuple[str, int]:
    """The first ``lines`` lines of ``body`` (after its leading blank lines), and how many
    lines with text follow them (0: the whole body)."""
    parts = body.lstrip("\r\n").split("\n", lines)
    if len(parts) <= lines or not parts[lines].strip():
        return body, 0
    return "\n".join(parts[:lines]), len(parts[lines].rstrip().split("\n"))


def answering_passage(state: ScreenState, name: str) -> Passage | None:
    """The passage the semantic column (or else hybrid) says answered for ``name``."""
    rankings = state.rankings()
    for slot in ("semantic", "hybrid"):
        ranking = rankings.get(slot)
        hit = ranking.hit(name) if ranking is not None and ranking.ok else None
        if hit is not None and hit.passage is not None:
            return hit.passage
    return None


def _ranks(head: Text, state: ScreenState, name: str, p: Palette) -> None:
    """``ranks:`` the card's place in every column, and what hybrid fused it from."""
    rankings = state.rankings()
    head.append("\nranks: ", style="bold")
    if not rankings:
        head.append("no query", style=p.muted)
    for i, slot in enumerate(SLOTS):
        ranking = rankings.get(slot)
        if ranking is None:
            continue
        if i:
            head.append("  │  ", style=p.muted)
        head.append(f"{state.shown_arm if slot == 'lexical' else slot} ", style=p.accent)
        if not ranking.ok:
            head.append("refused", style=p.error)
            continue
        found = ranking.hit(name)
        if found is None:
            head.append("—", style=p.muted)
        else:
            head.append(f"#{found.rank} {render.score(found.score)}")
    hybrid = rankings.get("hybrid")
    hit = hybrid.hit(name) if hybrid is not None and hybrid.ok else None
    if hit is not None and hit.arms:
        parts = [f"{arm} {'—' if s is None else f'#{s.rank} {render.score(s.score)}'}"
                 + _contribution(hit.contributions.get(arm))
                 for arm, s in hit.arms.items()]
        head.append(f"\n       fused from {', '.join(parts)}", style=p.muted)


def _contribution(part: float | None) -> str:
    """`` (+0.412)``: what an arm added to the fused score (a floor counts too)."""
    return "" if part is None else f" ({part:+.3f})"


def provenance(retrieval: Retrieval, p: Palette) -> Text:
    """How one column was computed: model, revision, metric, exactness, query vector."""
    out = Text()
    out.append(f"{retrieval.arm}: ", style=p.accent)
    if retrieval.fusion:
        from hqltui.core.hybrid import fusion_summary

        windows = ", ".join(f"{k} {v}" for k, v in (retrieval.windows or {}).items())
        out.append(f"{fusion_summary(retrieval)} · windows {windows}")
        return out
    out.append(shown(render.short_model(retrieval.model)))
    out.append(f" {shown(render.short_revision(retrieval.revision))}")
    out.append(f" · {retrieval.metric}")
    out.append(" · approximate" if retrieval.approximate else " · exact")
    if retrieval.query_vector_source and retrieval.arm == "semantic":
        out.append(f" · query vector: {retrieval.vector_source}")
    if retrieval.passages:
        p_ = retrieval.passages
        out.append(f" · card vector and best of {p_['count']} passages "
                   f"({p_['window']}/{p_['overlap']} tokens)")
    return out


# -------------------------------------------------------------------------- hints


def jobs_hint(keys: Keys) -> str:
    """The empty jobs panel's line."""
    h = keys.hint
    return (f"no jobs yet · {h('jobs.build')} builds the index · {h('jobs.verify')} verifies "
            f"it · {h('jobs.cancel')} cancels · {h('jobs.panel')} hides")


def help_notes(keys: Keys) -> list[str]:
    """The lines under F1's table."""
    h = keys.hint
    return [
        "",
        f"{h('textual.palette')} opens the command palette "
        f"(lexical: {' | '.join(LEXICAL_CHOICES)}, "
        "view: …, vault: reload).",
        "Jobs: index: build / verify, jobs: cancel, view: jobs in the palette too; a build",
        "runs hql-semantics in the background and reloads the vault when it succeeds.",
        f"Keys with ctrl or F work while typing; {h('main.escape')} leaves the query so single "
        "letters work.",
        f"{h('rank.open')} on a column or card row opens the card; {h('textual.focus-next')} "
        "moves between panes.",
        f"Labels: {h('main.label-relevant')} marks the selected card relevant for the query, "
        f"{h('main.label-decoy')} a decoy, {h('main.label-kind')} cycles its kind, "
        f"{h('main.label-undo')} undoes;",
        f"✓ relevant · ✗ decoy in every column; {h('app.labelled')} lists the labelled "
        "queries (the file hql-tui eval reads).",
        "Badges: LS ranked by both arms · L· lexical only · ·S semantic only ·",
        "! stale (text changed since the index was built) · × missing (no index row).",
        f"Passages: under a semantic or hybrid row, pN and the passage that answered "
        f"({h('app.snippets')} or {h('main.snippets')} hides / shows it);",
        "the card pane marks that passage and opens at it (not for a stale card).",
        f"Engine columns ({h('app.engine-view')}): ▲n / ▼n the engine ranks the card n places "
        "higher / lower",
        "than the local column, = the same, new: not in the local column; ! engine-stale.",
    ]
