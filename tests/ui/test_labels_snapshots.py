"""Snapshots of the relevance workbench, at 120×36 with a fixed clock, driven by its keys.

Accept changes with ``--snapshot-update`` on the whole module (see test_snapshots.py).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.vaults import QUERY, unlabel
from tests.helpers.waits import settle, type_query
from tests.ui.conftest import SIZE


def test_labelled_query_with_marks_and_metrics(snap_compare, make_app, birds: Path) -> None:
    """An unlabelled query labelled from the keyboard: ✓ / ✗ in every column, each
    column's hit@1, MRR@10 and recall@10 in its title, ★ on the winner."""
    unlabel(birds)

    async def run(pilot) -> None:
        await settle(pilot)
        await type_query(pilot, QUERY)
        # Three relevant in the semantic column, lexical's first a decoy, kind paraphrase.
        await pilot.press("escape", "2", "home", "space", "down", "space", "down", "space")
        await pilot.press("1", "home", "x", "k")
        await settle(pilot)
        pilot.app.clear_notifications()  # the notices live 3 s: not a stable picture

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_labelled_queries_screen(snap_compare, make_app, birds: Path) -> None:
    """ctrl+l: eval's summary per arm and kind as bars, every labelled query's MRR@10."""

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)


def test_tune_result(snap_compare, make_app, birds: Path) -> None:
    """t on the labelled queries: tune's table, best first, and the key that writes it."""

    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await settle(pilot)

    assert snap_compare(make_app(birds), terminal_size=SIZE, run_before=run)
