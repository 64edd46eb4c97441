"""What the app shows on real-corpus shapes: a broken arm alone, link targets on one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from hqltui.ui.app import HqlApp
from hqltui.ui.screens.warnings import WarningsScreen
from hqltui.ui.widgets.panes import CardDetail, StatusLine, WarningsStrip
from producer.vault import load_vault
from tests.broken_arms import bring_back_the_bucket_overflow
from tests.helpers.rendering import plain
from tests.helpers.waits import settle, type_query
from tests.synthetic_text import COLLIDED
from tests.ui.conftest import SIZE

pytestmark = pytest.mark.anyio

OVERFLOW = "hashbag cannot be built: IndexError: index 36 is out of bounds for axis 0 with size"


def _message(app: HqlApp, slot: str) -> str:
    return str(app.main.column(slot).query_one(".column-message", Static).render())


async def test_a_broken_arm_refuses_alone_in_the_app(make_app, birds: Path, monkeypatch) -> None:
    (birds / "zz-synopsis.hmd").write_text(f"# synopsis\n\n{COLLIDED}\n", encoding="utf-8")
    bring_back_the_bucket_overflow(monkeypatch, [c.text for c in load_vault(birds).cards])
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "cannot be opened" not in str(app.main.query_one(StatusLine).render())
        await type_query(pilot, "night hunting birds")
        for slot in ("lexical", "semantic", "hybrid"):  # bm25, the default, is unharmed
            assert app.main.column(slot).names, slot
        # hashbag's matrix is built when an answer first needs it: no refusal before that
        assert OVERFLOW not in plain(app.main.query_one(WarningsStrip).shown, width=300)
        await pilot.press("escape", "f2")  # switch the lexical arm to the broken one
        await settle(pilot)
        assert app.lexical == "hashbag"
        assert OVERFLOW in plain(app.main.query_one(WarningsStrip).shown, width=300)
        for slot in ("lexical", "hybrid"):
            assert not app.main.column(slot).names
            assert OVERFLOW in _message(app, slot), slot
            assert "Traceback" not in _message(app, slot)
        assert app.main.column("semantic").names  # semantic still answers


async def test_a_link_target_spanning_lines_fits_one_line(make_app, mini: Path) -> None:
    target = "\n.B \\-\\-color\n[=\n.I WHEN\n]\n" + "colorize the output; " * 10
    (mini / "ls.1.hmd").write_text(f"# ls\n\nls [[{target}]] FILE\n", encoding="utf-8")
    shown = "`ls.1` links to `.B \\-\\-color [= .I WHEN ] colorize the output; colorize the…`"
    app = make_app(mini)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        strip = plain(app.main.query_one(WarningsStrip).shown, width=300)
        assert shown in strip and "colorize the output; colorize the output; colorize" not in strip
        await pilot.press("f6")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WarningsScreen)
        full = plain(screen.query_one(Static).render(), width=300)
        assert f"link: {shown}, which is not a card" in full.splitlines()
        await pilot.press("escape")
        await type_query(pilot, "colorize")
        assert app.selected == "ls.1"
        detail = plain(app.main.query_one(CardDetail).shown, width=300)
        assert "unresolved: .B \\-\\-color [= .I WHEN ] colorize the output; colorize the…" in detail
