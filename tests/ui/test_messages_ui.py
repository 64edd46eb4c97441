"""The card pane tells an unusable index from no index (issue: bad input, round two)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.panes import CardDetail
from tests.helpers.rendering import plain
from tests.helpers.waits import settle
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio


async def test_the_card_pane_says_index_unusable_when_the_file_is_there(make_app,
                                                                        birds: Path) -> None:
    (birds / ".hql" / "index.sqlite").write_bytes(b"not an index" * 100)
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.post_message(CardList.Selected("barn-owl"))  # as a click on its row does
        await pilot.pause()
        detail = plain(app.main.query_one(CardDetail).shown)
        assert "index: index unusable (see warnings)" in detail
        assert "no index" not in detail
