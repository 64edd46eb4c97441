"""The card pane tells an unusable index from no index (issue: bad input, round two)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from hqltui.ui.widgets.panes import CardDetail
from tests.ui.conftest import SIZE, settle

pytestmark = pytest.mark.anyio


def _plain(renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def test_the_card_pane_says_index_unusable_when_the_file_is_there(make_app,
                                                                        birds: Path) -> None:
    (birds / ".hql" / "index.sqlite").write_bytes(b"not an index" * 100)
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.selected = "barn-owl"
        app._show_detail()
        await pilot.pause()
        detail = _plain(app.main.query_one(CardDetail).shown)
        assert "index: index unusable (see warnings)" in detail
        assert "no index" not in detail
