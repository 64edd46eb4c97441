"""Pilot tests of the relevance workbench: labels from the keyboard, the file eval reads.

Each test presses the real bindings (space relevant, x decoy, k kind, u undo, ctrl+l the
labelled queries) on a copy of birds and reads the labels file back with the reader
`hql-tui eval` uses; the figures the column titles show are compared with the core's
`evaluate` on that file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hqltui.core.evaluation import evaluate, read_queries
from hqltui.ui import views
from hqltui.ui.screens.labelled import LabelledScreen
from tests.helpers.rendering import plain
from tests.helpers.vaults import QUERY, unlabel
from tests.helpers.waits import frame_before_idle, settle, type_query
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio

# Stored in the birds index (no model is loaded) and, once removed from the file, unlabelled.



def _notices(app) -> list[str]:  # type: ignore[no-untyped-def]
    """Every notice the app has posted. Kept as posted, not read from the toasts on
    screen: a label's notice leaves after 3 s, which a loaded machine can outlast
    between the key that posted it and the assertion."""
    seen: list[str] = app.__dict__.setdefault("_seen_notices", [])
    return seen


def _record_notices(app) -> None:  # type: ignore[no-untyped-def]
    seen = _notices(app)
    notify = app.notify

    def record(message, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = record


def _title(app, slot: str) -> str:  # type: ignore[no-untyped-def]
    return str(app.main.column(slot).query_one(".column-title").render())


async def _label_three(pilot) -> list[str]:  # type: ignore[no-untyped-def]
    """In the semantic column: its top two relevant, its third a decoy."""
    app = pilot.app
    await pilot.press("escape", "2", "home")
    names = app.main.column("semantic").names
    await pilot.press("space", "down", "space", "down", "x")
    await settle(pilot)
    return names[:3]


async def test_three_labels_from_the_keyboard_are_what_eval_reads(make_app, birds: Path):
    (birds / "queries.toml").unlink()
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        assert "hit@1" not in _title(app, "semantic")  # not labelled yet
        first, second, third = await _label_three(pilot)
        assert any(n.startswith("created queries.toml with the first label")
                   for n in _notices(app))
        queries = read_queries(birds / "queries.toml")
        assert [(q.text, q.relevant, q.decoys, q.kind) for q in queries] == [
            (QUERY, (first, second), (third,), "query")]
        # The titles show eval's own figures for this query, column by column.
        report = evaluate(app.session, queries)
        arm = app.state.shown_arm
        for slot, name in (("lexical", arm), ("semantic", "semantic"), ("hybrid", "hybrid")):
            figures = report.scores[0][name]
            assert (f"hit@1 {figures.hit1:.0f} · MRR@10 {figures.mrr10:.2f} · "
                    f"R@10 {figures.recall10:.2f}") in _title(app, slot)
        assert "★" in _title(app, "semantic")  # the two relevant lead it: it wins
        line = str(app.main.query_one("#label-line").render())
        assert "labelled · 2 relevant ✓ · 1 decoy ✗ · kind none" in line


async def test_kind_cycles_and_undo_goes_back(make_app, birds: Path):
    unlabel(birds)
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("escape", "2", "space", "k")
        await settle(pilot)
        entry = next(q for q in read_queries(birds / "queries.toml") if q.text == QUERY)
        assert entry.kind == "paraphrase"
        await pilot.press("k")
        await settle(pilot)
        entry = next(q for q in read_queries(birds / "queries.toml") if q.text == QUERY)
        assert entry.kind == "keyword"
        await pilot.press("u", "u", "u")  # keyword → paraphrase → none, then unmarked
        await settle(pilot)
        assert QUERY not in [q.text for q in read_queries(birds / "queries.toml")]
        assert any(n.startswith("undone: ") for n in _notices(app))


async def test_a_card_cannot_be_relevant_and_a_decoy(make_app, birds: Path):
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)  # labelled in birds: common-kestrel is a decoy
        await pilot.press("escape", "1")
        assert app.state.selected == "common-kestrel"
        await pilot.press("space")
        await settle(pilot)
        entry = next(q for q in read_queries(birds / "queries.toml") if q.text == QUERY)
        assert "common-kestrel" in entry.relevant and "common-kestrel" not in entry.decoys


async def test_labels_need_a_query(make_app, birds: Path):
    before = (birds / "queries.toml").read_bytes()
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("escape", "c", "space")
        await settle(pilot)
        assert any(n.startswith("type a query first") for n in _notices(app))
    assert (birds / "queries.toml").read_bytes() == before


async def test_a_broken_labels_file_turns_labelling_off_and_is_kept(make_app, birds: Path):
    path = birds / "queries.toml"
    broken = path.read_text(encoding="utf-8").replace('text = "lamellae"', 'text = lamellae')
    path.write_text(broken, encoding="utf-8")
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        line = str(app.main.query_one("#label-line").render())
        assert line.startswith("labels: ") and "is not valid TOML" in line
        assert "labelling is off" in line
        await pilot.press("escape", "2", "space")
        await settle(pilot)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "labelling is off" in errors[-1].message
    assert path.read_text(encoding="utf-8") == broken


async def test_the_labelled_queries_screen_loads_a_query(make_app, birds: Path):
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LabelledScreen)
        labelled = read_queries(birds / "queries.toml")
        assert screen.table.row_count == len(labelled)
        await pilot.press("s", "s", "s", "s")  # by hashbag's MRR@10 … by bm25's, best first
        bm25 = {q["text"]: s["bm25"].mrr10
                for q, s in zip(screen.report.per_query, screen.report.scores, strict=True)}
        first = str(screen.table.get_row_at(0)[1])
        assert bm25[first] == max(bm25.values())
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, LabelledScreen)
        assert app.answer is not None and app.answer.query == first
        assert views.column_scores(app.state) is not None  # labelled: titles have figures


async def test_a_frame_drawn_before_the_table_measures_its_rows_keeps_full_columns(
        make_app, birds: Path):
    """The labelled table is filled when the worker hands the report over; a frame drawn
    after that and before the table's idle once left every column as narrow as its
    label (as on the links screen). Here that frame is drawn on purpose, at once."""
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LabelledScreen) and screen.report is not None
        assert screen.palette is not None
        screen.show_report(screen.report, screen.lexical, screen.palette)  # as the worker does
        table = screen.table
        await frame_before_idle(pilot, table)
        first = str(table.get_row_at(0)[1])
        assert len(first) > len("query") + 2  # a query longer than the column's label
        assert first in table.render_line(1).text  # under the header, whole


async def test_enter_on_a_query_still_being_answered_lands_on_its_column(make_app, birds: Path):
    """Enter while hybrid waits for the semantic arm (a model loading): the card list
    holds the focus meanwhile, then the hybrid column takes it when its rows come, so
    the label keys act on the column's cards."""
    from hqltui.ui import views as v

    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.main
        busy = {slot: v.Column(message=v.Text("waiting…"), kind="busy")
                for slot in ("lexical", "semantic", "hybrid")}
        main.paint_columns(busy, app.state, app.palette, app.keys)
        main.action_focus_column("hybrid")
        await pilot.pause()
        assert app.focused is not main.column("hybrid").table
        await type_query(pilot, QUERY)
        assert app.focused is main.column("hybrid").table


async def test_tune_runs_as_a_job_and_writes_search_only_when_confirmed(make_app, birds: Path):
    from hqltui.core.config import load_app_config
    from hqltui.ui.screens.confirm import ConfirmScreen

    before = (birds / "hql.toml").read_text(encoding="utf-8")
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await settle(pilot)
        result = app.workbench.tune_result
        assert result is not None and not result.cancelled and result.rows
        shown = plain(app.screen.tune_shown)
        assert result.best.config.label() in shown and "w writes" in shown
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # kept: nothing written
        await settle(pilot)
        assert (birds / "hql.toml").read_text(encoding="utf-8") == before
        await pilot.press("w")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
    search = load_app_config(birds).search
    assert search.fusion == result.best.config.method
    assert (birds / "hql.toml").read_text(encoding="utf-8").startswith(before)


async def test_tune_refuses_a_kind_with_too_few_queries(make_app, birds: Path):
    (birds / "queries.toml").write_text(
        '[[query]]\ntext = "night hunting birds"\nrelevant = ["barn-owl"]\n', encoding="utf-8")
    app = make_app(birds)
    _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        shown = plain(app.screen.tune_shown)
        assert shown.startswith("tune: too few labelled queries to cross-validate")
