"""Pilot tests of auto-build: an edit the watcher sees is re-embedded without a key.

The builds that only need a job run ``fake_producer.py`` (its ``go`` file made
first, so it finishes at once); the test about the index itself runs the real
producer. Each waits on what the app shows, polling the screen's state.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from hqltui.ui.app import HqlApp
from hqltui.ui.commands import HqlCommands
from hqltui.ui.widgets.panes import StatusLine
from tests.helpers.indexed_vaults import locked
from tests.helpers.vaults import copy_vault, edit_card
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE
from tests.ui.jobs_helpers import fake_build, wait_for_event

pytestmark = pytest.mark.anyio
POLL = 0.05  # the watcher's scan interval in these tests (notifications run too)


def _status(app: HqlApp) -> str:
    return str(app.main.query_one(StatusLine).render())


def _notes(app: HqlApp, severity: str | None = None) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications
            if severity is None or n.severity == severity]


async def until(pilot, test: Callable[[], bool], what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not test():
        if loop.time() > deadline:
            raise AssertionError(f"never: {what}; header: {_status(pilot.app)}")
        await pilot.pause(0.05)
    await pilot.pause()


def fake_auto_builds(app: HqlApp, control: Path, mode: str = "ok") -> list[int]:
    """Automatic builds run the fake producer, done at once; returns each build's bound."""
    control.mkdir(parents=True, exist_ok=True)
    (control / "go").write_text("", encoding="utf-8")
    inner = fake_build(control, mode)
    bounds: list[int] = []

    def factory(vault: Path, out: Path, limit: int, *, clock: Callable[[], float]):  # type: ignore[no-untyped-def]
        bounds.append(limit)
        job = inner(vault, out, clock=clock)
        job.title = "index: auto-build"
        return job

    app.job_factories["auto-build"] = factory
    return bounds


def quiet(app: HqlApp) -> bool:
    """No build runs and none is waiting for the vault to go quiet."""
    return not app.running_jobs() and not app.autobuild.pending


async def test_five_edits_in_a_burst_make_at_most_two_builds(make_app, birds, tmp_path) -> None:
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "auto-build on" in _status(app)
        for _ in range(5):  # five saves, closer together than the quiet time
            edit_card(birds)
            await pilot.pause(POLL)
        await until(pilot, lambda: bounds and quiet(app), "a build, then quiet")
        final = app.last_job_events["index-build"]
        assert final.state == "succeeded" and final.title == "index: auto-build"
        assert 1 <= len(bounds) <= 2 and set(bounds) == {app.autobuild.limit}


async def test_a_failed_build_says_why_once_and_waits_for_the_next_edit(
    make_app, birds, tmp_path
) -> None:
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control", mode="fail")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        edit_card(birds)
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished)
        assert final.state == "failed"
        await until(pilot, lambda: "auto-build paused" in _status(app), "paused")
        errors = [n for n in _notes(app, "error") if "not in the local cache" in n]
        assert len(errors) == 1
        await pilot.press("f5")  # a reload decides again: no retry
        await settle(pilot)
        assert len(bounds) == 1 and "auto-build paused" in _status(app)
        edit_card(birds, "mallard")
        await until(pilot, lambda: len(bounds) == 2, "a second build after the next edit")


async def test_the_toggle_stops_builds_for_the_session(make_app, birds, tmp_path) -> None:
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("shift+f7")
        assert "auto-build off" in _status(app)
        edit_card(birds)
        await until(pilot, lambda: app.statuses.get("great-cormorant") == "stale", "stale")
        await settle(pilot)
        assert bounds == [] and "1 stale" in _status(app)
        await pilot.press("shift+f7")
        assert "auto-build on" in _status(app)


async def test_the_palette_names_the_toggle_and_how_edits_are_noticed(make_app, birds) -> None:
    app = make_app(birds, poll_interval=POLL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.autobuild.watching == "notifications", "notified")
        entries = {title: help for title, help, _run in HqlCommands(app.screen)._commands()}
        assert "edits noticed by notifications (shift+F7)" in entries[
            "index: auto-build on / off"]


async def test_auto_build_false_in_hql_toml_starts_off(make_app, birds, tmp_path) -> None:
    toml = birds / "hql.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        "[semantics]\n", "[semantics]\nauto_build = false\n"), encoding="utf-8")
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "auto-build off" in _status(app)
        edit_card(birds)
        await until(pilot, lambda: app.statuses.get("great-cormorant") == "stale", "stale")
        await settle(pilot)
        assert bounds == []


# ------------------------------------------------------------------- refusals


def _garbage(vault: Path) -> None:
    (vault / ".hql" / "index.sqlite").write_text("my notes, not an index\n", encoding="utf-8")


def _newer_schema(vault: Path) -> None:
    with sqlite3.connect(vault / ".hql" / "index.sqlite") as conn:
        conn.execute("UPDATE index_meta SET schema_version = 2")


def _no_index_named(vault: Path) -> None:
    (vault / "hql.toml").write_text("# no [semantics] index here\n", encoding="utf-8")


@pytest.mark.parametrize(("vault_name", "spoil", "words"), [
    ("birds", _garbage, "it is not an SQLite file"),
    ("birds", _newer_schema, "schema"),
    ("heron-notes", None, "was built for `fixtures/birds`"),  # another vault's index
    ("birds", _no_index_named, "semantic search needs an index"),
])
async def test_a_refusal_stands_and_no_build_fixes_it(
    make_app, tmp_path, vault_name, spoil, words
) -> None:
    vault = copy_vault("birds", vault_name)
    if spoil is not None:
        spoil(vault)
    files = {p: p.read_bytes() for p in (vault / "hql.toml", vault / ".hql" / "index.sqlite")}
    app = make_app(vault, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        edit_card(vault)
        await until(pilot, lambda: "auto-build held" in _status(app), "held")
        held = [n for n in _notes(app, "warning") if n.startswith("auto-build held")]
        assert len(held) == 1 and words in held[0] and held[0].endswith("F7 rebuilds it")
        edit_card(vault, "mallard")  # said once, however many edits follow
        await until(pilot, lambda: "mallard" in str(app.sessions.signature), "seen")
        await settle(pilot)
        assert bounds == [] and len(
            [n for n in _notes(app, "warning") if n.startswith("auto-build held")]) == 1
    assert {p: p.read_bytes() for p in files} == files  # hql.toml never written


async def test_a_locked_index_is_left_alone(make_app, birds, tmp_path) -> None:
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        with locked(birds / ".hql" / "index.sqlite"):
            edit_card(birds)
            await until(pilot, lambda: "auto-build held" in _status(app), "held", timeout=90)
        held = [n for n in _notes(app, "warning") if n.startswith("auto-build held")]
        assert bounds == [] and len(held) == 1 and "locked by another process" in held[0]


async def test_more_changed_cards_than_the_bound_are_left_for_f7(make_app, birds, tmp_path):
    app = make_app(birds, poll_interval=POLL)
    bounds = fake_auto_builds(app, tmp_path / "control")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.autobuild.limit = 1  # a branch switch, in small
        edit_card(birds)
        edit_card(birds, "mallard")
        await until(pilot, lambda: "auto-build held" in _status(app), "held")
        held = [n for n in _notes(app, "warning") if n.startswith("auto-build held")]
        assert held == ["auto-build held: 2 cards changed, more than the 1 an automatic build "
                        "embeds; F7 rebuilds it"]
        assert bounds == []


# -------------------------------------------------------- the real producer


@pytest.mark.slow
async def test_an_edit_turns_fresh_and_a_deletion_goes_without_a_key(make_app, birds) -> None:
    """The real producer, incremental: the edited card's new text is what ranks."""
    app = make_app(birds, poll_interval=POLL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        card = birds / "great-cormorant.hmd"
        card.write_text(card.read_text(encoding="utf-8") + "\nA lighthouse keeper repairs a "
                        "brass telescope in the fog beside it.\n", encoding="utf-8")
        await until(pilot, lambda: app.statuses.get("great-cormorant") == "stale", "stale")
        await until(pilot, lambda: app.statuses.get("great-cormorant") == "fresh", "fresh",
                    timeout=240)
        # The watcher may swap the landed index in before the job's own last event
        # reaches the app: wait for that event, then read what the build did.
        await until(pilot, lambda: app.last_job_events["index-build"].finished, "build ended")
        final = app.last_job_events["index-build"]
        assert final.title == "index: auto-build" and final.result["embedded"] == 1
        await type_query(pilot, "lighthouse keeper repairing a brass telescope")
        await pilot.press("enter")  # submitted: the query is embedded live
        await until(pilot, lambda: app.answer is not None and app.answer.semantic is not None
                    and app.main.column("semantic").names, "ranked", timeout=240)
        assert app.main.column("semantic").names[0] == "great-cormorant"

        (birds / "mallard.hmd").unlink()
        await until(pilot, lambda: "1 orphan" in _status(app), "orphan")
        await until(pilot, lambda: "0 orphan" in _status(app) and not app.running_jobs(),
                    "gone", timeout=240)
        assert "mallard" not in app.statuses
        await until(pilot, lambda: app.last_job_events["index-build"].finished, "build ended")
        assert app.last_job_events["index-build"].result["removed"] == 1


@pytest.mark.slow
async def test_the_index_folder_a_build_writes_starts_no_scan(make_app, birds) -> None:
    """The real producer drops a deleted card's row (no model): its lock, temporary
    file, journal and the renamed index start no look at the vault (on man1 each
    costs a 1.4 s scan, and a reload that cancels the build's own)."""
    app = make_app(birds, poll_interval=3600)  # the vault is looked at when notified only
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.autobuild.watching == "notifications", "notified")
        checks: list[str | None] = []
        check = app.sessions.check

        def counted(index: str | None) -> None:
            checks.append(index)
            check(index)

        app.sessions.check = counted  # type: ignore[method-assign]
        (birds / "mallard.hmd").unlink()  # one change
        await until(pilot, lambda: "1 orphan" in _status(app), "orphan")
        await until(pilot, lambda: "0 orphan" in _status(app) and not app.running_jobs(),
                    "gone", timeout=240)
        await pilot.press("shift+f7")  # off: the last change only marks the end
        card = birds / "great-cormorant.hmd"
        hidden = birds / ".great-cormorant.hmd.new"  # an editor's save: one change seen
        hidden.write_text(card.read_text(encoding="utf-8") + "\nLast.\n", encoding="utf-8")
        hidden.replace(card)  # notified after everything the build wrote
        await until(pilot, lambda: app.statuses.get("great-cormorant") == "stale", "stale")
        assert len(checks) == 2, checks  # the deletion and the save
