"""Snapshots of the engine row (F9) against the loopback fake Hotdata server (a test
stand-in, not the engine), at 120×36 with a fixed clock. The header and columns name the
table only, never the fake's port or the database id, so the images are the same on
every run. Regenerate with ``--snapshot-update`` on the whole module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.vaults import copy_vault
from tests.helpers.waits import settle, type_query, until
from tests.ui.conftest import SIZE
from tests.ui.engine_helpers import engine_options, sync_and_build

pytest_plugins = ["tests.ui.engine_helpers"]


def _app(make_app, vault: Path):
    app = make_app(vault)
    app.engine_options = engine_options()
    return app


def test_engine_columns_for_a_group_query(snap_compare, make_app, engine_vault, engine_env
                                          ) -> None:
    """Engine bm25 / vector (approximate) / hybrid below the local row, each card's rank
    difference with its local column, the engine counts in the header."""
    engine_env.set_job_mode("immediate")
    sync_and_build(engine_vault)

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "birds diving underwater catching fish")

    assert snap_compare(_app(make_app, engine_vault), terminal_size=SIZE, run_before=run)


def test_engine_stale_after_a_card_edit(snap_compare, make_app, engine_vault, engine_env
                                        ) -> None:
    """A card edited after sync + build: the header counts it engine-stale, its engine
    rows carry ``!``, and the local index calls it stale too."""
    engine_env.set_job_mode("immediate")
    sync_and_build(engine_vault)
    card = engine_vault / "barn-owl.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nIt also nests in church towers.\n",
                    encoding="utf-8")

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")

    assert snap_compare(_app(make_app, engine_vault), terminal_size=SIZE, run_before=run)


def test_engine_refused_without_engine_table(snap_compare, make_app, engine_env) -> None:
    """No [engine] in hql.toml: one line in place of the engine columns, naming the fix."""
    vault = copy_vault("birds")

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await type_query(pilot, "night hunting birds")

    assert snap_compare(_app(make_app, vault), terminal_size=SIZE, run_before=run)


@pytest.mark.parametrize("unset", ["HOTDATA_WORKSPACE"])
def test_engine_refused_without_workspace(snap_compare, make_app, engine_vault, monkeypatch,
                                          unset: str) -> None:
    """A variable unset: the refusal names it; nothing is sent."""
    monkeypatch.delenv(unset)

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await settle(pilot)

    assert snap_compare(_app(make_app, engine_vault), terminal_size=SIZE, run_before=run)


def _frozen_options() -> dict:
    """The engine client's clock never moves (every elapsed time reads 0s); its sleep is a
    short real one, so the test steps the fake's jobs while the job polls."""
    import time

    return {"clock": lambda: 0.0, "sleep": lambda _s: time.sleep(0.005), "poll_interval": 0.5}


def _index_job_running(fake) -> bool:
    with fake.state.lock:
        return any(j.job_type == "create_index" and j.status == "running"
                   for j in fake.state.jobs.values())


async def _wait_for(pilot, app, words: str) -> None:
    """Pause until the jobs panel shows ``words``; never ``settle``: that waits for the
    polling job to end."""
    def shown() -> bool:
        event = app.last_job_events.get("engine-sync-build")
        return event is not None and words in event.message

    await until(app, shown)  # each event drawn is a ``job-shown`` mark
    # Fixed pause, kept: the jobs' coalescer holds the newest progress for its own thread
    # timer (0.1 s), and nothing says when none is held; 0.3 s outlasts that timer.
    await pilot.pause(0.3)


def test_engine_job_in_progress(snap_compare, make_app, engine_vault, engine_env) -> None:
    """F11 on an empty engine table: rows written, then the bm25 index job running
    (status, attempt, elapsed) in the jobs panel.

    Deterministic by construction: the fake moves a job one step each time the client
    reads it, and the client's wait between polls blocks once the index job runs, so
    the job stands still at exactly that point until the screenshot is taken."""
    import threading
    import time

    engine_env.set_job_mode("poll")
    gate = threading.Event()

    def sleep(_seconds: float) -> None:
        if not _index_job_running(engine_env):
            time.sleep(0.005)
            return
        deadline = time.monotonic() + 30  # until the screenshot is taken (app exit cancels)
        while time.monotonic() < deadline and not gate.is_set():
            if any(job.cancel_requested.is_set() for job in list(app.jobs.values())):
                return
            time.sleep(0.02)

    app = make_app(engine_vault)
    app.engine_options = {**_frozen_options(), "sleep": sleep}

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await settle(pilot)
        await pilot.press("f11")
        await _wait_for(pilot, app, "bm25 index on text: running")

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run)
    finally:
        for job in list(app.jobs.values()):
            job.cancel()
        gate.set()


def test_engine_job_failed_with_its_message(snap_compare, make_app, engine_vault, engine_env
                                            ) -> None:
    """An index job the engine fails: the job fails with the engine's error_message."""
    engine_env.set_job_mode("immediate")
    engine_env.inject_job_fault("create_index",
                                message="could not detect dimension for 'embedding'")
    app = make_app(engine_vault)
    app.engine_options = _frozen_options()

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f9")
        await settle(pilot)
        await pilot.press("f11")
        await settle(pilot)
        await pilot.pause(0.3)  # kept: the coalescer's last flush (see ``_wait_for``)

    assert snap_compare(app, terminal_size=SIZE, run_before=run)
