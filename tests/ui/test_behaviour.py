"""Pilot tests of what the app does: selection sync, answer ordering, reload, history."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hqltui.core.session import Session
from hqltui.ui.app import HqlApp
from hqltui.ui.screens.card import CardScreen
from hqltui.ui.screens.help import HelpScreen
from hqltui.ui.widgets.cards import CardList
from hqltui.ui.widgets.panes import CardDetail, StatusLine, WarningsStrip
from hqltui.ui.widgets.query import QueryInput
from tests.helpers.rendering import plain, widget_text
from tests.helpers.waits import settle, type_query, until, until_shown
from tests.ui.conftest import SIZE, fixed_clock

pytestmark = pytest.mark.anyio


def _detail_text(app: HqlApp) -> str:
    return plain(app.main.query_one(CardDetail).shown)


async def test_query_input_focused_at_start_and_columns_fill(make_app, mini: Path) -> None:
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, QueryInput)
        await pilot.press(*"header")
        await settle(pilot)
        assert app.answer is not None and app.answer.query == "header"
        assert app.main.column("lexical").names[:1] == ["comment-header"]
        # No index in mini: semantic and hybrid refuse, never fall back to lexical.
        assert app.main.column("semantic").has_class("-message")
        assert app.main.column("hybrid").has_class("-message")


async def test_selection_syncs_across_columns_and_card_list(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "birds diving underwater catching fish")
        main = app.main
        semantic = main.column("semantic")
        start = semantic.names.index(app.selected) if app.selected in semantic.names else 0
        await pilot.press("escape", "2")  # leave the query, focus the semantic column
        await settle(pilot)
        assert app.focused is semantic.table
        await pilot.press("down", "down")
        await settle(pilot)
        chosen = semantic.cursor_name
        assert chosen == semantic.names[start + 2]
        assert app.selected == chosen
        for column in main.columns:
            if chosen in column.names:
                assert column.cursor_name == chosen
            else:
                assert column.cursor_name is None
        cards = main.query_one(CardList)
        assert cards.shown[cards.table.cursor] == chosen
        assert chosen in _detail_text(app)
        # Choosing in the card list moves the columns too.
        await pilot.press("c")
        await pilot.press("up")
        await settle(pilot)
        picked = cards.shown[cards.table.cursor]
        assert app.selected == picked
        for column in main.columns:
            assert column.cursor_name == (picked if picked in column.names else None)


class SlowFirst:
    """A session whose answers to ``slow`` arrive late (after the next query's answer)."""

    def __init__(self, inner: Session, slow: str) -> None:
        self.inner = inner
        self.slow = slow
        self.release = threading.Event()
        self.started = threading.Event()  # the slow query is running
        self.finished: list[str] = []

    def query(self, text: str, **kwargs: Any) -> Any:
        if text == self.slow:
            self.started.set()
            self.release.wait(5)
        answer = self.inner.query(text, **kwargs)
        self.finished.append(text)
        if text != self.slow:
            self.release.set()
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_an_older_answer_never_overwrites_a_newer_one(make_app, birds: Path) -> None:
    holder: dict[str, SlowFirst] = {}

    def factory(root: Path) -> SlowFirst:
        holder["s"] = SlowFirst(Session.load(root, clock=fixed_clock), slow="night")
        return holder["s"]

    app = make_app(birds, session_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        query = app.main.query_one(QueryInput)
        query.value = "night"
        assert await asyncio.to_thread(holder["s"].started.wait, 120)  # the slow one runs
        query.value = "night hunting birds"
        await settle(pilot, rounds=4)
        # "night" needs a live model load: slow on a loaded machine
        await until_shown(pilot, lambda: len(holder["s"].finished) == 2, tries=6000)
        await settle(pilot)
        # The slow, older answer finished last, and was not shown.
        assert holder["s"].finished == ["night hunting birds", "night"]
        assert app.answer.query == "night hunting birds"
        expected = holder["s"].inner.query("night hunting birds", lexical=app.lexical)
        assert app.main.column("semantic").names == expected.semantic.names()
        assert app.main.column("hybrid").names == expected.hybrid.names()


async def test_reload_after_a_file_changes(make_app, mini: Path) -> None:
    app = make_app(mini, poll_interval=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cards = app.main.query_one(CardList)
        assert "brand-new" not in cards.shown
        (mini / "brand-new.md").write_text("# Brand new\n\nA card written while the app ran.\n",
                                           encoding="utf-8")
        await until(app, lambda: "brand-new" in cards.shown)  # the reload swapped in
        assert "brand-new" in cards.shown
        assert "11 cards" in widget_text(app.main.query_one(StatusLine))


async def test_an_edit_made_while_a_reload_reads_the_vault_is_not_lost(make_app,
                                                                         mini: Path) -> None:
    """A file written after the reload read it (and before the watcher's next look) is
    still noticed: the load's baseline predates what it read, so the card shows its
    new text without a key press."""
    loads: list[Session] = []

    def factory(root: Path) -> Session:
        session = Session.load(root, clock=fixed_clock)
        if len(loads) == 1:  # the reload: the vault is read; now the user saves again
            (root / "brand-new.md").write_text("# Brand new\n\nSecond version.\n",
                                               encoding="utf-8")
        loads.append(session)
        return session

    app = make_app(mini, poll_interval=0.1, session_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (mini / "brand-new.md").write_text("# Brand new\n\nFirst version.\n", encoding="utf-8")
        # the edit's reload, then the one for the save made while it read the vault
        await until(app, lambda: len(loads) >= 3 and app.state.session is loads[-1])
        assert "Second version." in app.state.session.card("brand-new").text


async def test_reload_key_reads_the_vault_again(make_app, mini: Path) -> None:
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (mini / "another.md").write_text("# Another\n\nText.\n", encoding="utf-8")
        await pilot.press("f5")
        await settle(pilot)
        assert "another" in app.main.query_one(CardList).shown


async def test_lexical_arm_switch_reranks_both_columns(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "Tyto alba")
        assert app.answer.lexical.retrieval.arm == "bm25"
        await pilot.press("f2")
        await settle(pilot)
        assert app.lexical == "hashbag"
        assert app.answer.lexical.retrieval.arm == "hashbag"
        fused = [arm.arm for arm in app.answer.hybrid.retrieval.arms]
        assert "hashbag" in fused and "bm25" not in fused
        await pilot.press("escape", "l")  # the single-letter key outside the input
        await settle(pilot)
        assert app.lexical == "bm25"


async def test_the_fusion_key_cycles_the_method_title_and_card_pane(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "night hunting birds")
        def title() -> str:
            return widget_text(app.main.column("hybrid").query_one(".column-title"))

        assert app.answer.hybrid.retrieval.fusion == "adaptive"  # the default
        assert "adaptive α 0.79 of bm25" in title()  # shape 0.65, lexical top gap 0.09
        await pilot.press("ctrl+t")  # adaptive -> rrf
        await settle(pilot)
        assert app.state.fusion == "rrf" and app.answer.hybrid.retrieval.fusion == "rrf"
        assert "rrf of bm25" in title()
        await pilot.press("escape", "m")  # rrf -> convex, from the panes
        await settle(pilot)
        ret = app.answer.hybrid.retrieval
        assert (ret.fusion, ret.alpha) == ("convex", 0.5)
        assert "convex α 0.50" in title()
        detail = _detail_text(app)
        assert "fused from bm25" in detail and "(+" in detail


async def test_enter_opens_the_card_and_help_lists_bindings(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "night hunting birds")
        await pilot.press("escape", "enter")
        await settle(pilot)
        assert isinstance(app.screen, CardScreen)
        assert app.screen.card_name == app.selected
        await pilot.press("escape")
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)


async def test_every_binding_has_an_id() -> None:
    from hqltui.ui.screens.main import MainScreen
    from hqltui.ui.widgets.ranking import RankingColumn

    for owner in (HqlApp, MainScreen, QueryInput, RankingColumn, CardList, CardScreen,
                  HelpScreen):
        for binding in owner.BINDINGS:
            assert binding.id, f"{owner.__name__}: {binding.key} has no id"


async def test_query_history_persists_between_runs(make_app, mini: Path) -> None:
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"header", "enter")
        await settle(pilot)
    again = make_app(mini)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        query = again.main.query_one(QueryInput)
        query.focus()
        await pilot.press("up")
        assert query.value == "header"


async def test_warnings_strip_shows_loader_and_link_warnings(make_app, mini: Path) -> None:
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        strip = app.main.query_one(WarningsStrip)
        assert "warnings (" in str(strip.border_title)
        body = plain(strip.shown)
        assert "a-card-not-written-yet" in body


async def test_ready_markers_at_first_paint_cards_shown_and_ranking_ready(
    make_app, mini: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ready.txt"
    app = make_app(mini, ready_file=str(marker))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(app, lambda: app.marks.reached["ranking-ready"] > 0)
    events = [line.split()[0] for line in marker.read_text().splitlines()]
    assert events[:3] == ["first-paint", "cards-shown", "ranking-ready"]


async def test_ready_marker_notes_each_answer_painted(make_app, mini: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ready.txt"
    app = make_app(mini, ready_file=str(marker))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "header")
        await type_query(pilot, "merge keys")
    events = [line.split()[0] for line in marker.read_text().splitlines()]
    assert events.count("answer-painted") == 2
    assert events.index("answer-painted") > events.index("ranking-ready")


async def test_first_paint_shows_loading_before_the_vault_is_read(make_app, mini: Path) -> None:
    gate = threading.Event()

    def slow_factory(root: Path) -> Session:
        gate.wait(5)
        return Session.load(root, clock=fixed_clock)

    app = make_app(mini, session_factory=slow_factory)
    async with app.run_test(size=SIZE) as pilot:
        await until(app, lambda: app.marks.reached["first-paint"] > 0)
        assert "loading vault" in widget_text(app.main.query_one(StatusLine))
        assert app.session is None
        gate.set()
        await settle(pilot)
        assert app.session is not None
        assert "10 cards" in widget_text(app.main.query_one(StatusLine))


def test_app_module_imports_no_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hqltui.ui.app, hqltui.core.session;"
        "print('torch' in sys.modules or 'transformers' in sys.modules)"
    )
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False", time.perf_counter() - started


class HeldBm25:
    """A session whose bm25 answers wait until released (the switch to hashbag is pressed
    while one is still being computed)."""

    def __init__(self, inner: Session) -> None:
        self.inner = inner
        self.release = threading.Event()
        self.holding = threading.Event()  # a bm25 answer is waiting for the release

    def query(self, text: str, **kwargs: Any) -> Any:
        if kwargs.get("lexical") == "bm25":
            self.holding.set()
            self.release.wait(5)
        return self.inner.query(text, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_labels_follow_the_arm_of_the_answer_on_screen(make_app, birds: Path) -> None:
    """An answer computed with bm25 is labelled bm25 even after F2 asked for hashbag."""
    holder: dict[str, HeldBm25] = {}

    def factory(root: Path) -> HeldBm25:
        holder["s"] = HeldBm25(Session.load(root, clock=fixed_clock))
        return holder["s"]

    app = make_app(birds, session_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        holder["s"].release.clear()
        app.main.query_one(QueryInput).value = "night hunting birds"
        assert await asyncio.to_thread(holder["s"].holding.wait, 120)  # bm25 is computing
        app.lexical = "hashbag"
        await pilot.pause()
        holder["s"].release.set()  # now both answers may arrive, in either order
        await settle(pilot, rounds=4)
        title = str(app.main.column("lexical").query_one(".column-title").render())
        assert app.answer_arm == "hashbag" and "hashbag" in title
        # Whatever is on screen is labelled by the arm that computed it.
        app.show_answer(app.shown_generation + 1, "night hunting birds", "bm25",
                         holder["s"].inner.query("night hunting birds", lexical="bm25"))
        title = str(app.main.column("lexical").query_one(".column-title").render())
        assert app.lexical == "hashbag" and "bm25" in title and "hashbag" not in title


async def test_a_vault_that_vanished_is_not_ranked_or_built(make_app, birds: Path) -> None:
    import shutil

    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shutil.rmtree(birds)
        await pilot.press("f5")
        await settle(pilot)
        assert app.session is None
        assert "cannot be opened" in widget_text(app.main.query_one(StatusLine))
        await pilot.press("f7")
        await settle(pilot)
        assert not app.jobs


async def test_a_long_card_is_previewed_in_the_pane_and_whole_on_its_screen(
    make_app, mini: Path
) -> None:
    lines = "\n".join(f"owlet paragraph {i}" for i in range(1, 201))
    (mini / "long-owlet.md").write_text(f"# Long owlet\n\n{lines}\n", encoding="utf-8")
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_query(pilot, "owlet paragraph")
        assert app.selected == "long-owlet"
        pane = _detail_text(app)
        assert "owlet paragraph 58" in pane and "owlet paragraph 59" not in pane
        assert "… 142 more lines in the full card" in pane
        await pilot.press("escape", "enter")
        await settle(pilot)
        assert isinstance(app.screen, CardScreen)
        whole = plain(app.screen.query_one(CardDetail).shown)
        assert "owlet paragraph 200" in whole and "more lines" not in whole
