"""Pilot tests of the engine row against the loopback fake Hotdata server (a test stand-in,
not the engine): toggling, the palette entry, a slow engine never holding up local
re-ranking, an older engine answer never replacing a newer one, rank differences."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hqltui.ui.engine_views import rank_delta
from hqltui.ui.messages import EngineAnswered
from hqltui.ui.widgets.engine import EngineRow
from hqltui.ui.widgets.panes import StatusLine
from tests.helpers.waits import settle, type_query, until, until_shown
from tests.ui.conftest import SIZE
from tests.ui.engine_helpers import engine_options, sync_and_build

pytest_plugins = ["tests.ui.engine_helpers"]
pytestmark = pytest.mark.anyio


def test_rank_delta_words() -> None:
    assert rank_delta(3, 3) == "="
    assert rank_delta(5, 2) == "▲3"
    assert rank_delta(1, 2) == "▼1"
    assert rank_delta(None, 4) == "new"


@pytest.fixture
def synced(engine_vault: Path, engine_env) -> Path:
    engine_env.set_job_mode("immediate")
    sync_and_build(engine_vault)
    return engine_vault


def _app(make_app, vault: Path):
    app = make_app(vault)
    app.engine_options = engine_options()
    return app


async def test_f9_shows_and_hides_the_engine_row_and_its_header_line(make_app, synced) -> None:
    app = _app(make_app, synced)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = app.main.query_one(EngineRow)
        assert not row.display or not row.active
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")
        assert row.active and row.has_class("-on")
        header = str(app.main.query_one(StatusLine).render())
        assert "engine default.public.cards · 58 in step 0 stale 0 missing 0 orphan" in header
        assert "127.0.0.1" not in header
        names = row.column("engine-bm25").names
        assert names and names[0] == app.main.column("lexical").names[0]
        assert row.column("engine-semantic").names[:3] == app.main.column("semantic").names[:3]
        await pilot.press("f9")
        await settle(pilot)
        assert not row.active
        assert "engine" not in str(app.main.query_one(StatusLine).render()).split("\n")[0][:7]


async def test_palette_lists_the_engine_entries(make_app, synced) -> None:
    from hqltui.ui.commands import HqlCommands

    app = _app(make_app, synced)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        provider = HqlCommands(app.screen)
        titles = [title for title, _, _ in provider._commands()]
        assert {"view: engine columns", "engine: sync + build", "engine: verify"} <= set(titles)
        keys = {b.id: b.key for b in app.BINDINGS}
        assert keys["app.engine-view"] == "f9"
        assert keys["app.engine-sync"] == "f11" and keys["app.engine-verify"] == "f12"



def _gate_engine_search(monkeypatch) -> threading.Event:
    """Engine searches wait until the returned event is set."""
    import hqltui.core.engine as engine

    release = threading.Event()
    real = engine.search

    def gated(*args, **kwargs):
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "search", gated)
    return release


async def test_a_slow_engine_never_holds_up_local_ranking(make_app, synced, monkeypatch
                                                          ) -> None:
    release = _gate_engine_search(monkeypatch)
    app = _app(make_app, synced)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        await pilot.pause()
        app.main.query_one("#query").value = "night hunting birds"  # type: ignore[attr-defined]
        # the local answer is painted while the engine's is held back
        await until(app, lambda: app.answer is not None
                    and app.answer.query == "night hunting birds")
        assert app.answer is not None and app.answer.query == "night hunting birds"
        row = app.main.query_one(EngineRow)
        assert row.answer is None  # the engine has not answered yet
        release.set()
        await settle(pilot)
        assert row.answer is not None and row.answer.query == "night hunting birds"


async def test_an_older_engine_answer_never_replaces_a_newer_one(make_app, synced) -> None:
    app = _app(make_app, synced)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")
        row = app.main.query_one(EngineRow)
        newer = row.answer
        generation = row.shown_generation
        row.post_message(EngineAnswered(generation - 1, "old", object(), None))
        await settle(pilot)
        assert row.answer is newer and row.shown_generation == generation


async def test_an_unreachable_engine_is_one_line_without_a_traceback(make_app, engine_vault,
                                                                     engine_env) -> None:
    engine_env.set_job_mode("immediate")
    sync_and_build(engine_vault)
    engine_env.inject_fault("POST", "/v1/query*", status=500, message="query planner exploded",
                            times=50)
    app = _app(make_app, engine_vault)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")
        row = app.main.query_one(EngineRow)
        assert row.has_class("-line")
        line = str(row.query_one("#engine-line").render())
        assert line.startswith("engine failed:") and "query planner exploded" in line


async def test_quitting_while_the_engine_waits_out_a_retry_after_is_prompt(make_app, synced,
                                                                          engine_env) -> None:
    """The real sleep (nothing injected but an event sink): a 60 s Retry-After on every engine
    query must not hold up the app's exit. The row's thread workers run on the event loop's
    default executor, so the test joins it the way the loop's own shutdown does."""
    import asyncio
    import time

    from hqltui.core.engine import Retrying

    waiting = threading.Event()

    def on_event(event) -> None:
        if isinstance(event, Retrying):
            waiting.set()

    app = make_app(synced)
    app.engine_options = {"on_event": on_event}
    engine_env.inject_fault("POST", "/v1/query*", status=429, retry_after=60, times=50)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        app.main.query_one("#query").value = "night hunting birds"  # type: ignore[attr-defined]
        assert await asyncio.to_thread(waiting.wait, 60)
        started = time.monotonic()
    await asyncio.get_running_loop().shutdown_default_executor()
    assert time.monotonic() - started < 5
    engine_env.clear_faults()


def _title(row: EngineRow, slot: str) -> str:
    from textual.widgets import Label

    return str(row.column(slot).query_one(".column-title", Label).render())


async def test_an_answer_on_screen_is_marked_while_a_newer_query_is_out(make_app, synced,
                                                                        monkeypatch) -> None:
    release = _gate_engine_search(monkeypatch)
    release.set()
    app = _app(make_app, synced)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")
        row = app.main.query_one(EngineRow)
        shown = row.answer
        assert shown is not None and "asking" not in _title(row, "engine-bm25")
        release.clear()
        app.main.query_one("#query").value = "red plumage"  # type: ignore[attr-defined]
        await until_shown(pilot, lambda: bool(row.pending))
        assert row.answer is shown  # the old answer stays, marked as out of date
        assert all(_title(row, slot).endswith(" · asking…") for slot in
                   ("engine-bm25", "engine-semantic", "engine-hybrid"))
        release.set()
        await settle(pilot)
        assert row.answer is not shown and row.answer.query == "red plumage"
        assert not row.pending and "asking" not in _title(row, "engine-hybrid")


async def test_before_build_the_vector_title_says_full_scan_and_the_notes_say_why(
        make_app, engine_vault, engine_env) -> None:
    """Rows synced, no index: the engine answers the vector arm by a full scan; the title says
    so (never "approximate") and the missing-index warning is a line under the columns."""
    from textual.widgets import Static

    from hqltui.core.engine import LocalCards, Options, settings_or_refuse, sync

    engine_env.set_job_mode("immediate")
    local = LocalCards.load(engine_vault)
    sync(local, settings_or_refuse(local), Options(**engine_options()))
    app = _app(make_app, engine_vault)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")
        row = app.main.query_one(EngineRow)
        await until_shown(pilot, lambda: row.answer is not None)
        await settle(pilot)
        title = str(row.column("engine-semantic").query_one(".column-title").render())
        assert "(exact · full scan)" in title and "approximate" not in title
        assert row.has_class("-notes")
        notes = str(row.query_one("#engine-notes", Static).render())
        assert "engine semantic: no vector index on embedding" in notes
        assert "full scan" in notes and "hql-tui engine build VAULT" in notes
        assert row.column("engine-semantic").names  # it answered all the same
