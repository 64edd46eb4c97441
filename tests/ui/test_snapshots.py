"""Snapshots of every screen and state, at 120×36 with a fixed clock.

Review changes with ``pytest tests/ui --snapshot-report snapshot_report.html``
and accept them with ``--snapshot-update`` (run the whole module, never a
subset, so unused snapshots are not pruned by mistake).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE, paraphrase_queries

GROUP_QUERIES = paraphrase_queries()


def test_empty_query(snap_compare, make_app, birds: Path) -> None:
    """Start-up on birds: header with index status, empty columns, card list, no selection."""
    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=settle)


@pytest.mark.parametrize("query", GROUP_QUERIES, ids=lambda q: q.replace(" ", "-"))
def test_group_query(snap_compare, make_app, birds: Path, query: str) -> None:
    """Each paraphrase group: the group leads the semantic column."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, query)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_stale_and_missing(snap_compare, make_app, birds: Path) -> None:
    """One card edited (stale), one added (missing), one deleted (orphan): badges and warnings."""
    card = birds / "great-cormorant.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nIt also dries its wings on posts.\n",
                    encoding="utf-8")
    (birds / "little-auk.hmd").write_text(
        "---\ntitle: Little auk\n---\n# Little auk\n\nA small auk that dives underwater "
        "for plankton and small fish.\n",
        encoding="utf-8",
    )
    (birds / "mallard.hmd").unlink()

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "birds diving underwater catching fish")

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_semantic_refusal_without_index(snap_compare, make_app, birds: Path) -> None:
    """No [semantics] index: semantic and hybrid show the refusal and its fix; lexical answers."""
    (birds / "hql.toml").write_text("# no index configured\n", encoding="utf-8")

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "night hunting birds")

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_hashbag_arm(snap_compare, make_app, birds: Path) -> None:
    """F2 switches the lexical column and hybrid's fused arm to hashbag."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "birds weaving hanging nests")
        await pilot.press("f2")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_card_detail(snap_compare, make_app, birds: Path) -> None:
    """Enter on the hybrid column opens the selected card full-screen."""

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "night hunting birds")
        await pilot.press("escape", "enter")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_help(snap_compare, make_app, birds: Path) -> None:
    """F1 lists every binding with its keys and id."""

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_broken_hql_toml(snap_compare, make_app, birds: Path) -> None:
    """A malformed hql.toml: the app opens, says which file and line, lexical still works."""
    (birds / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite\n',
                                    encoding="utf-8")

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, "Tyto alba")

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
