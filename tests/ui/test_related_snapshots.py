"""Snapshots of related cards in the app, at 120×36 with a fixed clock.

Accept changes with ``--snapshot-update`` on the whole module (see test_snapshots.py).
"""

from __future__ import annotations

from pathlib import Path

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


def test_related_full_list(snap_compare, make_app, birds: Path) -> None:
    """ctrl+r on the selected card: its related cards in full, linked ones marked."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "barn owl")
        await select_card(pilot, "barn-owl")
        await pilot.press("ctrl+r")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
