"""Pure views of the labelled-queries screen: ``eval``'s summary as bars, one row per query.

The figures are ``hqltui.core.evaluation``'s (the ones ``hql-tui eval`` prints);
this module only draws them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hqltui.core.evaluation import winners
from hqltui.core.names import HYBRID
from producer.terminal import shown

if TYPE_CHECKING:
    from hqltui.core.evaluation import QueryScores, Report, Tally
    from hqltui.ui.palette import Palette

BAR = 8  # cells of a full bar (MRR@10 = 1)
EIGHTHS = " ▏▎▍▌▋▊▉"
QUERY_W = 34


def bar(value: float, width: int = BAR) -> str:
    """``value`` in [0, 1] as a horizontal bar of ``width`` cells (eighths of a cell)."""
    eighths = round(max(0.0, min(1.0, value)) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width)


def ratio_line(report: Report, tallies: dict[str, Tally], p: Palette) -> Text:
    """The default hybrid's MRR@10 over the better of the two arms it fuses (``eval``'s
    ratio column)."""
    arms = report.fused.get(HYBRID, ())
    better = max(arms, key=lambda a: tallies[a].row()["mrr@10"]) if arms else "—"
    out = Text(f"{HYBRID} ÷ {better} ", style=p.muted)
    ratio = report.ratio(HYBRID, tallies)
    if ratio is None or not tallies[better].row()["mrr@10"]:
        out.append("—")
    else:
        out.append(f"{ratio:.2f}×", style=p.success if ratio >= 1 else p.warning)
    return out


def summary_group(title: str, report: Report, tallies: dict[str, Tally], p: Palette) -> Text:
    """One group of bars (all queries, or one kind): MRR@10 per arm, then the ratio."""
    width = max(len(a) for a in tallies)
    out = Text()
    out.append(title, style="bold")
    for arm, tally in tallies.items():
        row = tally.row()
        out.append("\n")
        out.append(arm.ljust(width + 1), style=p.accent if arm == HYBRID else "")
        out.append(f"{row['mrr@10']:.2f} ")  # the figure first: a narrow terminal cuts the bar
        out.append(bar(row["mrr@10"]), style=p.primary)
        if row["refused"]:
            out.append(f" ({row['refused']} refused)", style=p.error)
    out.append("\n")
    out.append_text(ratio_line(report, tallies, p))
    return out


def summary(report: Report, p: Palette) -> RenderableType:
    """Every group side by side: all queries, then each kind (``eval``'s tables as bars)."""
    n = len(report.scores)
    groups = [summary_group(f"all {n} quer{'y' if n == 1 else 'ies'} · MRR@10",
                            report, report.overall, p)]
    for kind, tallies in report.by_kind.items():
        count = next(iter(tallies.values())).queries
        groups.append(summary_group(f"{shown(kind)} ({count})", report, tallies, p))
    grid = Table.grid(padding=(0, 3))
    for _ in groups:
        grid.add_column(no_wrap=True)
    grid.add_row(*groups)
    return grid


# Sorting: by file order, the query, its kind, one arm's MRR@10, or the winner.
def sort_keys(report: Report) -> list[str]:
    return ["#", "query", "kind", *report.arms, "wins"]


def winner_cell(scores: dict[str, QueryScores]) -> str:
    won = winners(scores)
    if not won:
        return "tie"
    return won[0] if len(won) == 1 else f"{won[0]} +{len(won) - 1}"


def rows(report: Report, sort: str = "#", reverse: bool = False
         ) -> list[tuple[str, list[Text | str]]]:
    """(query text, cells) per labelled query, in the order asked for."""
    out: list[tuple[Any, str, list[Text | str]]] = []  # the key's type depends on `sort`
    for i, (detail, scores) in enumerate(zip(report.per_query, report.scores, strict=True)):
        text = detail["text"]
        shown_text = text if len(text) <= QUERY_W else text[: QUERY_W - 1] + "…"
        cells: list[Text | str] = [Text(str(i + 1)), Text(shown(shown_text)),
                                   Text(shown(detail["kind"]))]
        cells += [Text("refused", style="bold") if scores[a].refused
                  else Text(f"{scores[a].mrr10:.2f}", justify="right") for a in report.arms]
        cells.append(Text(winner_cell(scores)))
        key: Any
        if sort == "#":
            key = i
        elif sort == "query":
            key = text.lower()
        elif sort == "kind":
            key = (detail["kind"], i)
        elif sort == "wins":
            key = (winner_cell(scores), i)
        else:
            key = (-scores[sort].mrr10, i) if not reverse else (scores[sort].mrr10, -i)
        out.append((key, text, cells))
    descending = reverse and sort in ("#", "query", "kind", "wins")
    out.sort(key=lambda r: r[0], reverse=descending)
    return [(text, cells) for _, text, cells in out]


# ------------------------------------------------------------------------ tune


def tune_progress(done: int, total: int, cancel_key: str, p: Palette) -> Text:
    """The tune job's line while it runs: a bar, the count, the key that cancels."""
    out = Text("tune ", style="bold")
    out.append(bar(done / total if total else 0.0, 20), style=p.primary)
    out.append(f" {done}/{total} configurations · {cancel_key} cancels", style=p.muted)
    return out


def tune_table(result: Any, write_key: str, p: Palette, rows: int = 8) -> RenderableType:
    """``tune``'s table, best first (its worst kind's ratio to the better arm, the mean,
    each kind's ratio; the configured fusion marked, listed even below the cut), the key
    that writes the winner to ``[search]`` and why it won (``Decision.reason``)."""
    kinds = sorted(next(iter(result.rows)).kinds) if result.rows else []
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("fusion")
    table.add_column("worst", justify="right")
    table.add_column("mean", justify="right")
    for kind in kinds:
        table.add_column(shown(kind), justify="right")
    decision = result.decision
    incumbent = decision.incumbent if decision is not None else None
    listed = result.rows[:rows]
    if incumbent is not None and incumbent not in listed:
        listed = [*listed, incumbent]
    for row in listed:
        label = Text(row.config.label())
        if row is incumbent:
            label.append(" (configured)", style=p.muted)
        table.add_row(label, f"{row.worst:.2f}", f"{row.mean:.2f}",
                      *(f"{row.kinds[k].ratio:.2f}" for k in kinds))
    head = Text.assemble(
        ("tune", "bold"),
        (f" · {len(result.rows)} of {result.total} configurations"
         f"{' (cancelled)' if result.cancelled else ''} · {result.folds}-fold, ratio to the "
         f"better of {result.lexical} and semantic per kind", p.muted))
    best = result.best
    foot = (Text.assemble((f"{write_key} writes ", p.muted), (best.config.label(), p.accent),
                          (" to hql.toml's [search] (asks first)", p.muted))
            if best is not None else Text("nothing scored", style=p.warning))
    if decision is None:
        return Group(head, table, foot)
    return Group(head, table, foot, Text(decision.reason(), style=p.muted))
