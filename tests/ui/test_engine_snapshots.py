"""Snapshots of the engine row (F9) against the loopback fake Hotdata server (a test
stand-in, not the engine), at 120×36 with a fixed clock. The header and columns name the
table only, never the fake's port or the database id, so the images are the same on
every run. Regenerate with ``--snapshot-update`` on the whole module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.conftest import SIZE, copy_vault, settle, type_query
from tests.ui.engine_helpers import engine_options, sync_and_build

pytest_plugins = ["tests.fake_hotdata.fixtures", "tests.ui.engine_helpers"]


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
