"""The card pane with passages: the passage that answered is marked, and scrolled to."""

from __future__ import annotations

from pathlib import Path

import pytest

from hqltui.ui.widgets.panes import CardDetail
from producer.embedders.local import packaged_embedder
from tests.helpers.passage_vaults import passage_vault
from tests.helpers.rendering import plain
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio

QUERY = "file descriptor limit"


@pytest.fixture
def shell(tmp_path: Path) -> Path:
    return passage_vault(tmp_path / "v", packaged_embedder(), [QUERY])


async def test_the_answering_passage_is_marked_and_scrolled_to(make_app, shell: Path) -> None:
    app = make_app(shell)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, QUERY)
        await pilot.press("escape", "2")  # the semantic column; its first row is the shell
        await settle(pilot)
        semantic = app.main.column("semantic")
        assert semantic.names[0] == "shell" and app.selected == "shell"
        hit = app.answer.semantic.hit("shell")
        assert hit is not None and hit.passage is not None and hit.passage.ordinal
        pane = app.main.query_one(CardDetail)
        passage = pane.query_one(".detail-passage")
        assert passage.display
        text = pane.shown.after  # the body from the passage's first line on
        marked = "".join(text.plain[s.start : s.end] for s in text.spans
                         if s.style == app.palette.passage)
        assert "ulimit builtin" in marked and "Resource limits" in marked
        body = app.session.card("shell").body
        skip = len(app.session.card("shell").text) - len(body)
        assert marked.startswith(body[hit.passage.start - skip :][:20])
        detail = plain(pane.shown.before)
        assert f"answered by: passage {hit.passage.ordinal}, characters" in detail
        for _ in range(20):  # the scroll happens after the pane's next refresh
            if pane.scroll_y > 0:
                break
            await settle(pilot)
        assert pane.scroll_y > 0  # the pane opened at the passage, not at the card's top
