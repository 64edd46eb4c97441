"""While a build runs the app keeps ranking from the old index, and swaps to the new one
when it lands: the real producer, offline, held before it replaces the index (the new
index is complete beside the old one) until the test lets it go.

Two ways a build lands, two reload rules: the app's own build (F7) reloads the vault
when its job succeeds; a build run elsewhere (a terminal) is noticed by the watcher,
which sees the index file change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from hqltui.core.jobs import index_build_job
from hqltui.ui.app import HqlApp
from hqltui.ui.widgets.panes import StatusLine
from hqltui.ui.widgets.query import QueryInput
from tests.helpers.held_build import (
    PATIENCE,
    STAMP,
    TOP,
    pause_env,
    rewrite_the_mallard,
    start_held_build,
)
from tests.helpers.rendering import widget_text
from tests.helpers.vaults import QUERY
from tests.helpers.waits import settle, until
from tests.ui.conftest import SIZE
from tests.ui.jobs_helpers import settle_beside_jobs, wait_for_event, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def status(app: HqlApp) -> str:
    return widget_text(app.main.query_one(StatusLine))


def semantic_names(app: HqlApp) -> list[str]:
    return app.main.column("semantic").names


def leftovers(vault: Path) -> list[str]:
    """Files beside the index other than the index and its lock (the new index being
    written, the build's work file)."""
    return sorted(p.name for p in (vault / ".hql").iterdir()
                  if p.name != "index.sqlite" and not p.name.endswith(".lock"))


async def ask(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    """``type_query`` beside a running build job (whose worker ``settle`` would wait for)."""
    app = pilot.app
    app.main.query_one(QueryInput).value = text
    await settle_beside_jobs(pilot)
    await until(app, lambda: app.marks.painted_generation >= app.queries.generation)


async def ranked_from_the_old_index(pilot, vault: Path) -> None:  # type: ignore[no-untyped-def]
    """QUERY typed while the build is held: the old index answers (its stamp, the
    mallard's old vector, stale) though the new index waits complete beside it."""
    app = pilot.app
    assert leftovers(vault), "the new index should wait beside the old one"
    await ask(pilot, QUERY)
    names = semantic_names(app)
    assert names and "mallard" not in names[:TOP], names
    assert "built 3 d ago" in status(app)
    assert app.statuses["mallard"] == "stale"


async def swapped_in(pilot, session: object) -> None:  # type: ignore[no-untyped-def]
    """The reloaded session is on screen and has answered QUERY again by itself."""
    app = pilot.app
    await until(app, lambda: app.session is not session)
    await settle(pilot)
    await until(app, lambda: app.marks.painted_generation >= app.queries.generation)
    assert app.marks.reached["reload-shown"] >= 1
    names = semantic_names(app)
    assert "mallard" in names[:TOP], names
    assert "built 30 min ago" in status(app)
    assert app.statuses["mallard"] == "fresh"


async def test_the_apps_own_build_held_before_the_rename_ranks_old_then_swaps(
    make_app: Callable[..., HqlApp], birds: Path, tmp_path: Path
) -> None:
    """F7's build, held after the new index is written: the old one still answers; the
    job succeeds and the app reloads (its rule after a build), no key pressed."""
    rewrite_the_mallard(birds)
    marker = tmp_path / "held"
    env = pause_env("rename", marker)
    app = make_app(birds, auto_build=False)
    app.job_factories["index-build"] = (
        lambda vault, out, *, clock: index_build_job(vault, out, "--offline", "--built-at",
                                                     STAMP, env=env, clock=clock)
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        session = app.session
        await pilot.press("f7")
        await wait_for_file(pilot, marker, timeout=PATIENCE)
        await ranked_from_the_old_index(pilot, birds)
        assert app.session is session and app.running_jobs()
        marker.unlink()
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished,
                                     timeout=PATIENCE)
        assert final.state == "succeeded", (final.message, final.log)
        assert final.result["embedded"] == 1
        await swapped_in(pilot, session)
    assert leftovers(birds) == []


async def test_a_build_run_elsewhere_lands_and_the_watcher_swaps_it_in(
    make_app: Callable[..., HqlApp], birds: Path
) -> None:
    """`hql-semantics build` in another terminal, held before the rename: the app keeps
    the old index; once the file is replaced the watcher reloads, no key pressed."""
    rewrite_the_mallard(birds)
    app = make_app(birds, poll_interval=0.1, auto_build=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        session = app.session
        held = start_held_build(birds, "rename", "--built-at", STAMP)
        try:
            await asyncio.to_thread(held.wait_held)
            await ranked_from_the_old_index(pilot, birds)
            assert app.session is session
            code, _, err = await asyncio.to_thread(held.release)
            assert code == 0, err
            await swapped_in(pilot, session)
        finally:
            held.stop()
    assert leftovers(birds) == []
