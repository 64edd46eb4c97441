"""The app shows a vault's control characters as ``\\xNN`` and its markup literally
(issue: bad input, round two)."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.panes import CardDetail
from producer.terminal import shown
from tests.helpers.rendering import plain
from tests.helpers.vaults import EVIL, hostile_vault
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio



async def test_control_characters_are_escaped_and_markup_is_literal(make_app,
                                                                    tmp_path: Path) -> None:
    app = make_app(hostile_vault(tmp_path / "v"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "body words")
        await settle(pilot)
        app.post_message(CardList.Selected(EVIL))  # as a click on its row does
        await pilot.pause()
        screen = html.unescape(app.export_screenshot()).replace("\xa0", " ")
        assert "\x1b" not in screen and "\x07" not in screen
        assert shown(EVIL)[:20] in screen  # the card list and the lexical column
        assert f"broken{shown(EVIL)}"[:20] in screen  # the warnings strip
        detail = plain(app.main.query_one(CardDetail).shown, width=300)
        assert "[bold red]Boom[/] \\x1b[2J" in detail
        assert shown(EVIL) in detail
