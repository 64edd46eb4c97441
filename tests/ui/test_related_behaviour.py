"""Related cards in the app: what a user sees and what the keys do (read-only)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hqltui.ui.screens.links import LinksScreen
from hqltui.ui.widgets.panes import CardDetail
from tests.helpers.rendering import plain
from tests.helpers.waits import select_card, settle, type_query

pytestmark = pytest.mark.anyio


def _pane_text(app) -> str:  # type: ignore[no-untyped-def]
    return plain(app.main.query_one(CardDetail).shown)


@asynccontextmanager
async def _suggestions(make_app: Any, vault: Path) -> AsyncIterator[tuple[Any, LinksScreen]]:
    """The app on ``vault`` with the link suggestions screen opened (ctrl+n) and drawn."""
    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        yield pilot, app.screen


async def test_the_pane_lists_five_related_cards_with_links_marked(make_app, birds: Path
                                                                   ) -> None:
    app = make_app(birds)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await type_query(pilot, "barn owl")
        await select_card(pilot, "barn-owl")
        assert app.state.selected == "barn-owl"
        lines = _pane_text(app).splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("related (ctrl+r: all)"))
        rows = [line.split() for line in lines[at + 1:at + 6]]
        assert [r[1] for r in rows] == ["eurasian-eagle-owl", "tawny-owl",
                                        "barn-owl-member-of-tytonidae", "tytonidae",
                                        "european-nightjar"]
        assert [r[-1] == "linked" for r in rows] == [False, False, True, True, False]


async def test_suggestions_copy_a_link_and_say_it(make_app, birds: Path) -> None:
    before = {p: p.read_bytes() for p in birds.glob("*.hmd") if p.is_file()}
    async with _suggestions(make_app, birds) as (pilot, screen):
        assert isinstance(screen, LinksScreen) and screen.ready
        first = screen.shown_rows[0]
        await pilot.press("c")
        await pilot.pause()
        assert pilot.app.clipboard == f"[[{first.target}]]"
        notices = [n.message for n in pilot.app._notifications]
        assert f"[[{first.target}]] copied: paste it into {first.source}" in notices
    assert {p: p.read_bytes() for p in birds.glob("*.hmd") if p.is_file()} == before


async def test_suggestions_filter_by_title_as_you_type(make_app, birds: Path) -> None:
    async with _suggestions(make_app, birds) as (pilot, screen):
        everything = len(screen.shown_rows)
        await pilot.press("slash", "p", "u", "f", "f", "i", "n")
        await pilot.pause()
        shown = screen.shown_rows
        assert 0 < len(shown) < everything
        assert all("puffin" in (r.source + r.target) for r in shown)
        assert screen.table.row_count == len(shown)


async def test_full_list_needs_a_selected_card(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not isinstance(app.screen, LinksScreen)
        assert "select a card first" in [n.message for n in app._notifications]


async def test_closing_the_suggestions_screen_cancels_its_worker(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n", "escape")
        await settle(pilot)
        assert not isinstance(app.screen, LinksScreen)
        assert all(w.is_finished for w in app.workers if w.group == "links")


async def test_a_late_progress_message_leaves_the_final_note(make_app, birds: Path) -> None:
    async with _suggestions(make_app, birds) as (pilot, screen):
        note = str(screen.query_one("#links-progress").render())
        screen.post_message(LinksScreen.Progress(1, 58, "card vectors"))
        await settle(pilot)
        assert str(screen.query_one("#links-progress").render()) == note
        assert note.startswith("158 pairs · ")
