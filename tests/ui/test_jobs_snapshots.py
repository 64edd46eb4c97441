"""Snapshots of the jobs panel, at 120×36 with a fixed clock (elapsed times read 0:00).

A build runs ``fake_producer.py`` (the producer's JSONL progress stream, paused
at 4 of 10 until the test lets it go), so what is on screen does not depend on
a model; a verify runs the real producer, which needs no model. The same
functions feed ``scripts/screenshots.py``.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.vaults import edit_card
from tests.helpers.waits import settle
from tests.ui.conftest import SIZE
from tests.ui.jobs_helpers import CONTROL, fake_build, wait_for_event, wait_for_file


async def _build_paused(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("f7")
    await wait_for_file(pilot, CONTROL / "waiting")
    await wait_for_event(pilot, "index-build", lambda e: e.done == 4)
    # kept: the coalescer's last flush (its own 0.1 s thread timer; nothing marks it)
    await pilot.pause(0.2)


def test_build_in_progress(snap_compare, make_app, birds: Path) -> None:
    """F7 on a vault with a stale card: panel with 4 of 10 embedded, 38 reused; header 4/10."""
    edit_card(birds)
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)
    assert snap_compare(app, terminal_size=SIZE, run_before=_build_paused)


def test_build_finished(snap_compare, make_app, birds: Path) -> None:
    """The build's result line and full bar; the vault reloaded; F7 enabled again."""
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await _build_paused(pilot)
        (CONTROL / "go").write_text("", encoding="utf-8")
        await wait_for_event(pilot, "index-build", lambda e: e.finished)
        await settle(pilot)
        pilot.app.clear_notifications()  # "vault reloaded" lives 2 s: not a stable picture
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run)


def test_build_cancelled(snap_compare, make_app, birds: Path) -> None:
    """ctrl+g mid-build: cancelled, the producer's last word in the log, header says so."""
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await _build_paused(pilot)
        await pilot.press("ctrl+g")
        await wait_for_event(pilot, "index-build", lambda e: e.finished)
        await settle(pilot)
        pilot.app.clear_notifications()  # "cancelling…" lives 2 s: not a stable picture
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run)


def test_verify_with_problems(snap_compare, make_app, birds: Path) -> None:
    """F8 after an edit, an addition and a removal: every problem listed under the job."""
    edit_card(birds)
    (birds / "little-auk.hmd").write_text(
        "---\ntitle: Little auk\n---\n# Little auk\n\nA small auk of the high Arctic.\n",
        encoding="utf-8",
    )
    (birds / "mallard.hmd").unlink()

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("f8")
        await wait_for_event(pilot, "index-verify", lambda e: e.finished)
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_configure_index_confirmation(snap_compare, make_app, birds: Path) -> None:
    """F7 with no [semantics] index: a confirmation before hql.toml is written."""
    (birds / "hql.toml").write_text("# no index configured\n", encoding="utf-8")

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("f7")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
