"""Snapshots of related cards in the app, at 120×36 with a fixed clock.

Accept changes with ``--snapshot-update`` on the whole module (see test_snapshots.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hqltui.ui.widgets.panes import CardDetail
from tests.helpers.waits import frame_before_idle, select_card, settle, type_query
from tests.ui.conftest import SIZE


def test_card_pane_related_section(snap_compare, make_app, birds: Path) -> None:
    """The barn owl's pane, scrolled to its related section: five cards, the two a link
    or relation joins marked."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "barn owl")
        await select_card(pilot, "barn-owl")
        pane = pilot.app.main.query_one(CardDetail)
        pane.scroll_to(y=10, animate=False, immediate=True)
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_link_suggestions_screen(snap_compare, make_app, birds: Path) -> None:
    """ctrl+n: the strongest unlinked pairs, both cards' titles, the score and why."""
    from hqltui.ui.screens.links import LinksScreen
    from tests.helpers.rendering import plain

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, LinksScreen) and screen.ready
        note = plain(screen.query_one("#links-progress").render())
        assert "158 pairs" in note and "hqltui.bm25.v2" in note
        assert screen.table.row_count > 0

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


@pytest.mark.anyio
async def test_a_frame_drawn_before_the_table_measures_its_rows_keeps_full_columns(
        make_app, birds: Path) -> None:
    """The snapshot above once came out with every column as narrow as its label, in
    runs where a frame was drawn after the worker's rows arrived and before the table's
    idle measured them. Here that frame is drawn on purpose, at once."""
    from hqltui.ui.screens.links import LinksScreen

    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LinksScreen) and screen.ready
        note = screen.query_one("#links-progress").render()
        screen.show_rows(list(screen.rows), note)  # as the worker hands them over
        table = screen.table
        await frame_before_idle(pilot, table)
        first = table.render_line(1).text  # under the header
        assert "Barn owl is a member of Tyton…" in first
        assert "vec 0.787 + lex 0.394" in first


def test_related_full_list(snap_compare, make_app, birds: Path) -> None:
    """ctrl+r on the selected card: its related cards in full, linked ones marked."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "barn owl")
        await select_card(pilot, "barn-owl")
        await pilot.press("ctrl+r")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
