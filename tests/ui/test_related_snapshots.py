"""Snapshots of related cards in the app, at 120×36 with a fixed clock.

Accept changes with ``--snapshot-update`` on the whole module (see test_snapshots.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hqltui.ui.widgets.panes import CardDetail
from tests.helpers.waits import select_card, settle, type_query
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


@pytest.mark.anyio
async def test_link_suggestions_screen(make_app, birds: Path) -> None:
    """ctrl+n: the strongest unlinked pairs, both cards' titles, the score and why.

    Read as text, not as a snapshot: inside the whole suite the picture differed in
    style alone (no character changed) from one run to the next.
    """
    from hqltui.ui.screens.links import LinksScreen
    from tests.helpers.rendering import plain

    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LinksScreen) and screen.ready
        note = plain(screen.query_one("#links-progress").render())
        assert "158 pairs" in note and "hqltui.bm25.v2" in note
        assert screen.table.row_count > 0


def test_related_full_list(snap_compare, make_app, birds: Path) -> None:
    """ctrl+r on the selected card: its related cards in full, linked ones marked."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "barn owl")
        await select_card(pilot, "barn-owl")
        await pilot.press("ctrl+r")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
