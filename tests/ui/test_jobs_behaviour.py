"""Pilot tests of the jobs: build, verify, cancel, configure, coalescing, any event stream.

Builds that only need a progress stream run ``fake_producer.py``; the tests
that are about the index itself (badges clear after a build, a cancelled
build leaves the file byte-identical) run the real producer, offline.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import Static

from hqltui.core.jobs import JobEvent, index_build_job
from hqltui.ui.app import HqlApp
from hqltui.ui.commands import HqlCommands
from hqltui.ui.keys import JOB_BINDINGS
from hqltui.ui.messages import JobUpdate
from hqltui.ui.screens.confirm import ConfirmScreen
from hqltui.ui.widgets.jobs import Coalescer, JobsPanel, counts_line, elapsed_text
from hqltui.ui.widgets.panes import StatusLine, WarningsStrip
from hqltui.ui.widgets.query import QueryInput
from tests.helpers.rendering import widget_text
from tests.helpers.vaults import edit_card
from tests.helpers.waits import settle, until, until_shown
from tests.ui.conftest import SIZE
from tests.ui.jobs_helpers import (
    CONTROL,
    fake_build,
    settle_beside_jobs,
    wait_for_event,
    wait_for_file,
)

pytestmark = pytest.mark.anyio


def _event(state: str = "running", done: int | None = None, job_id: int = 7) -> JobEvent:
    return JobEvent(job_id=job_id, kind="index-build", title="index: build", state=state,
                    done=done, total=10 if done is not None else None)


def _status(app: HqlApp) -> str:
    return str(app.main.query_one(StatusLine).render())


def _panel(app: HqlApp) -> JobsPanel:
    return app.main.query_one("#jobs", JobsPanel)


def _panel_text(app: HqlApp) -> str:
    lines = []
    for view in _panel(app).views.values():
        for static in view.query(".job-title, .job-counts, .job-log"):
            lines.append(widget_text(static))
    return "\n".join(lines)


def _warnings(app: HqlApp) -> str:
    return str(app.main.query_one(WarningsStrip).shown)


# ---------------------------------------------------------------- coalescing


def test_coalescer_posts_state_changes_at_once_and_only_the_newest_progress() -> None:
    now = [0.0]
    posted: list[JobEvent] = []
    coalesce = Coalescer(posted.append, interval=0.1, clock=lambda: now[0])
    coalesce(_event("running"))
    now[0] = 0.01
    coalesce(_event(done=1))
    now[0] = 0.02
    coalesce(_event(done=2))
    assert [e.done for e in posted] == [None]  # the burst is held
    coalesce.flush()  # what the timer thread does when the interval is over
    assert [e.done for e in posted] == [None, 2]  # the newest of the burst, once
    now[0] = 0.5
    coalesce(_event(done=3))  # the interval has passed: at once
    now[0] = 0.51
    coalesce(_event(done=4))
    coalesce(_event("succeeded", done=10))  # the final event never waits
    assert [(e.state, e.done) for e in posted][-2:] == [("running", 3), ("succeeded", 10)]
    coalesce.flush()  # nothing is held any more: the stale progress 4 is never posted
    assert len(posted) == 4


def test_coalescer_timer_flushes_the_last_progress_before_a_pause() -> None:
    posted: list[JobEvent] = []
    arrived = threading.Event()

    def post(event: JobEvent) -> None:
        posted.append(event)
        if event.done == 2:
            arrived.set()

    coalesce = Coalescer(post, interval=0.05)
    coalesce(_event("running"))
    coalesce(_event(done=1))
    coalesce(_event(done=2))
    assert arrived.wait(2), "the held progress was never posted"
    assert [e.done for e in posted] == [None, 2]


def test_a_queued_update_is_superseded_by_a_newer_one_of_the_same_job_only() -> None:
    older = JobUpdate(_event(done=1))
    assert older.can_replace(JobUpdate(_event(done=2)))
    assert not older.can_replace(JobUpdate(_event(done=2, job_id=8)))
    assert not JobUpdate(_event("succeeded", done=10)).can_replace(JobUpdate(_event(done=2)))


def test_panel_wording() -> None:
    assert elapsed_text(0) == "0:00" and elapsed_text(75.9) == "1:15"
    assert elapsed_text(3725) == "1:02:05"
    event = JobEvent(1, "engine-build", "engine: sync + build", "running", reused=3,
                     done=4, total=9, attempts=2)
    assert counts_line(event) == "4 of 9 · 3 reused · attempt 2"
    building = JobEvent(2, "index-build", "index: build", "running", reused=0, done=384,
                        total=17824, rate=41.25, eta=422.7)
    assert counts_line(building) == "384 of 17824 · 0 reused · 41.2 texts/s · 7m03s left"
    finished = JobEvent(2, "index-build", "index: build", "succeeded", reused=0, done=17824,
                        total=17824, rate=41.25, eta=0.0)
    assert counts_line(finished) == "17824 of 17824 · 0 reused"  # no ETA once done


# ------------------------------------------------------------------ building


async def test_a_build_shows_progress_in_the_panel_and_the_header(make_app, birds: Path) -> None:
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = _panel(app)
        assert not panel.shown
        await pilot.press("f7")
        await wait_for_event(pilot, "index-build", lambda e: e.done == 4)
        assert panel.shown
        assert "index: build 4/10" in _status(app)
        text = _panel_text(app)
        assert "running" in text and "embedded 4 of 10" in text
        assert "4 of 10 · 38 reused" in text
        assert "`mallard` was removed" in text
        # One build at a time: the binding is disabled, and the action refuses.
        assert app.check_action("build_index", ()) is None
        await pilot.press("f7")
        app.action_build_index()
        await pilot.pause()
        assert len(app.running_jobs()) == 1
        assert any("already running" in n.message for n in app._notifications)
        # A query while the build runs never cancels it.
        app.main.query_one(QueryInput).value = "night hunting birds"
        await settle_beside_jobs(pilot)
        assert app.answer is not None and app.answer.query == "night hunting birds"
        assert app.last_job_events["index-build"].state == "running"
        (CONTROL / "go").write_text("", encoding="utf-8")
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished)
        # read before the reload below: the notice lasts 4 s, a loaded machine reloads slower
        assert any("built: 10 embedded" in n.message for n in app._notifications)
        await settle(pilot)
        assert final.state == "succeeded"
        assert final.message.startswith("built: 10 embedded, 38 reused")
        assert app.check_action("build_index", ()) is True
        assert "index: build" not in _status(app)


async def test_a_failed_build_says_why_and_the_header_keeps_it(make_app, birds: Path) -> None:
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL, mode="fail")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await wait_for_file(pilot, CONTROL / "waiting")
        (CONTROL / "go").write_text("", encoding="utf-8")
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished)
        await settle(pilot)
        assert final.state == "failed"
        assert "not in the local cache" in final.message
        assert "index: build: failed" in _status(app)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "not in the local cache" in errors[-1].message


async def test_a_build_clears_the_stale_badge_and_warning(make_app, birds: Path) -> None:
    """The real producer, offline: one edited card is re-embedded, the session reloads."""
    edit_card(birds)
    app = make_app(birds)
    app.job_factories["index-build"] = (
        lambda vault, out, *, clock: index_build_job(vault, out, "--offline", clock=clock)
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.statuses["great-cormorant"] == "stale"
        assert "stale:" in _warnings(app) and "1 stale" in _status(app)
        session = app.session
        await pilot.press("f7")
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished, timeout=180)
        assert final.state == "succeeded", (final.message, final.log)
        assert final.result["embedded"] == 1
        await until(app, lambda: app.session is not session)
        await settle(pilot)
        assert app.session is not session
        assert app.statuses["great-cormorant"] == "fresh"
        assert "stale:" not in _warnings(app) and "0 stale" in _status(app)


async def test_a_cancelled_build_leaves_the_index_byte_identical(
    make_app, birds: Path, tmp_path: Path
) -> None:
    """The real producer, paused while embedding: ctrl+g, and the old index is untouched."""
    edit_card(birds)
    index = birds / ".hql" / "index.sqlite"
    before = index.read_bytes()
    marker = tmp_path / "paused"
    env = {**os.environ, "HQL_SEMANTICS_TEST_PAUSE": f"embedding:{marker}"}
    app = make_app(birds)
    app.job_factories["index-build"] = (
        lambda vault, out, *, clock: index_build_job(vault, out, "--offline", env=env,
                                                     clock=clock)
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await wait_for_file(pilot, marker, timeout=120)
        assert app.check_action("cancel_jobs", ()) is True
        await pilot.press("ctrl+g")
        final = await wait_for_event(pilot, "index-build", lambda e: e.finished, timeout=60)
        await settle(pilot)
        assert final.state == "cancelled"
        assert "cancelled" in _panel_text(app)
        assert "index: build: cancelled" in _status(app)
        assert app.check_action("cancel_jobs", ()) is False
        assert app.statuses["great-cormorant"] == "stale"  # nothing was rebuilt
    assert index.read_bytes() == before
    left = sorted(p.name for p in index.parent.iterdir() if not p.name.endswith(".lock"))
    assert left == ["index.sqlite"], "a temporary file or journal was left behind"


async def test_quitting_during_a_build_stops_the_producer(make_app, birds: Path) -> None:
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await wait_for_event(pilot, "index-build", lambda e: e.done == 4)
        (job,) = app.running_jobs()
    assert job.cancel_requested.is_set()
    deadline = time.monotonic() + 10
    while job.state == "running" and time.monotonic() < deadline:
        time.sleep(0.05)  # kept: the app has exited, only the job's own thread is left
    assert job.state == "cancelled"


async def test_quitting_during_a_build_asks_first(make_app, birds: Path) -> None:
    """Quitting used to drop a running build silently: now the app asks, and "keep
    building" leaves it running; quitting after all stops it cleanly (SIGINT)."""
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await wait_for_event(pilot, "index-build", lambda e: e.done == 4)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#confirm-body", Static).render())
        assert "(4 of 10 embedded)" in body and "next build" in body and "resumes" in body
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen) and app.is_running
        (job,) = app.running_jobs()
        assert not job.cancel_requested.is_set()
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert not app.is_running
    assert job.cancel_requested.is_set()


async def test_quitting_with_no_build_running_asks_nothing(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running


# ------------------------------------------------------------------ verifying


async def test_verify_lists_every_problem(make_app, birds: Path) -> None:
    edit_card(birds)
    (birds / "mallard.hmd").unlink()
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        final = await wait_for_event(pilot, "index-verify", lambda e: e.finished)
        await settle(pilot)
        assert (final.state, final.message) == ("failed", "2 problems")
        text = _panel_text(app)
        assert "`great-cormorant` is stale (changed since the index was built)" in text
        assert "`mallard` is in the index and no longer in the vault" in text
        assert "index: verify: failed" in _status(app)


async def test_verify_of_a_clean_index_succeeds(make_app, birds: Path) -> None:
    app = make_app(birds)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        final = await wait_for_event(pilot, "index-verify", lambda e: e.finished)
        assert (final.state, final.message) == ("succeeded", "clean: 58 cards")


# ---------------------------------------------------------------- configuring


ORIGINAL = '# my birds\n[search]\nlimit = 7  # short lists\n'


async def test_no_index_asks_then_writes_hql_toml_and_builds(make_app, birds: Path) -> None:
    (birds / "hql.toml").write_text(ORIGINAL, encoding="utf-8")
    outs: list[Path] = []
    factory = fake_build(CONTROL)

    def recording(vault: Path, out: Path, *, clock):  # type: ignore[no-untyped-def]
        outs.append(out)
        return factory(vault, out, clock=clock)

    app = make_app(birds)
    app.job_factories["index-build"] = recording
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert (birds / "hql.toml").read_text(encoding="utf-8") == ORIGINAL
        await pilot.press("y")
        await wait_for_file(pilot, CONTROL / "waiting")
        text = (birds / "hql.toml").read_text(encoding="utf-8")
        assert text.startswith(ORIGINAL)
        assert '[semantics]\nindex = ".hql/index.sqlite"' in text
        assert outs == [birds / ".hql" / "index.sqlite"]
        (CONTROL / "go").write_text("", encoding="utf-8")
        await wait_for_event(pilot, "index-build", lambda e: e.finished)
        await settle(pilot)
        assert app.session.config.index == ".hql/index.sqlite"
        assert app.session.config.search.limit == 7


async def test_no_index_and_no_leaves_hql_toml_alone(make_app, birds: Path) -> None:
    (birds / "hql.toml").write_text(ORIGINAL, encoding="utf-8")
    app = make_app(birds)
    app.job_factories["index-build"] = fake_build(CONTROL)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert (birds / "hql.toml").read_text(encoding="utf-8") == ORIGINAL
        assert not app.running_jobs() and not (CONTROL / "waiting").exists()
        # Verify without an index says how to get one instead of running.
        await pilot.press("f8")
        await pilot.pause()
        assert "index-verify" not in app.last_job_events
        assert any("F7 configures" in n.message for n in app._notifications)


# ----------------------------------------------------------------- the panel


async def test_the_panel_shows_any_job_event_stream(make_app, mini: Path) -> None:
    """Events of a job the app does not run (an engine job, say) draw the same way."""
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = _panel(app)
        await pilot.press("f10")
        assert panel.shown and panel.query_one(".jobs-empty").display
        await pilot.press("f10")
        assert not panel.shown
        event = JobEvent(job_id=10_000, kind="engine-build", title="engine: sync + build",
                         state="running", message="index job bm25: running", attempts=2,
                         elapsed=65, log=("uploaded 10 rows",))
        app.post_message(JobUpdate(event))
        await until_shown(pilot, lambda: bool(_panel_text(app).strip()))  # once mounted
        assert panel.shown and not panel.query_one(".jobs-empty").display
        text = _panel_text(app)
        assert "engine: sync + build" in text and "1:05" in text and "attempt 2" in text
        assert "uploaded 10 rows" in text
        done = JobEvent(job_id=10_000, kind="engine-build", title="engine: sync + build",
                        state="failed", message="bm25 index job failed: disk full")
        app.show_job_event(done)
        await pilot.pause()
        assert "bm25 index job failed: disk full" in _panel_text(app)
        # A new job of the same kind replaces the finished one's view.
        app.show_job_event(JobEvent(job_id=10_001, kind="engine-build",
                                    title="engine: sync + build", state="running"))
        await pilot.pause()
        assert list(panel.views) == [10_001]


async def test_palette_and_help_list_every_job_action(make_app, mini: Path) -> None:
    app = make_app(mini)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        provider = HqlCommands(app.screen)
        titles = [title for title, _, _ in provider._commands()]
        for title in ("index: build", "index: verify", "jobs: cancel", "view: jobs",
                      "index: auto-build on / off"):
            assert title in titles
        ids = {binding.id for binding in JOB_BINDINGS}
        assert ids == {"jobs.build", "jobs.verify", "jobs.panel", "jobs.cancel",
                       "jobs.auto-build"}
        await pilot.press("f1")
        await settle(pilot)
        shown = app.export_screenshot()  # the help screen as drawn
        for binding_id in ids:
            assert binding_id in shown


def test_the_keys_page_documents_every_binding() -> None:
    from hqltui.ui.screens.card import CardScreen
    from hqltui.ui.screens.help import HelpScreen
    from hqltui.ui.screens.main import MainScreen
    from hqltui.ui.screens.warnings import WarningsScreen
    from hqltui.ui.widgets.cards import CardList
    from hqltui.ui.widgets.ranking import RankingColumn
    from hqltui.ui.widgets.ranklist import RankList

    readme = (Path(__file__).resolve().parents[2] / "docs" / "keys.md").read_text(encoding="utf-8")
    owners = [HqlApp, MainScreen, QueryInput, RankingColumn, RankList, CardList, CardScreen,
              HelpScreen, WarningsScreen, ConfirmScreen]
    ids = {b.id for owner in owners for b in owner.BINDINGS if b.id}
    missing = sorted(i for i in ids if f"`{i}`" not in readme)
    assert not missing, f"docs/keys.md has no row for {missing}"


async def test_a_file_that_is_not_an_index_is_moved_aside_only_after_yes(
    make_app, birds: Path
) -> None:
    index = birds / ".hql" / "index.sqlite"
    index.write_text("my precious notes\n", encoding="utf-8")
    outs: list[Path] = []
    factory = fake_build(CONTROL)

    def recording(vault: Path, out: Path, *, clock):  # type: ignore[no-untyped-def]
        outs.append(out)
        return factory(vault, out, clock=clock)

    app = make_app(birds)
    app.job_factories["index-build"] = recording
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert index.read_text(encoding="utf-8") == "my precious notes\n" and outs == []
        await pilot.press("f7")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for_file(pilot, CONTROL / "waiting")
        stamp = app.clock().strftime("%Y%m%dT%H%M%SZ")
        aside = birds / ".hql" / f"index.sqlite.unreadable-{stamp}"
        assert aside.read_text(encoding="utf-8") == "my precious notes\n"
        assert outs == [index]
        (CONTROL / "go").write_text("", encoding="utf-8")
        await wait_for_event(pilot, "index-build", lambda e: e.finished)
        await settle(pilot)


# ------------------------------------------------------------- after a build lands


async def test_a_build_that_changed_only_the_index_keeps_the_cards_on_hand(
    make_app, birds: Path, tmp_path: Path
) -> None:
    """The reload after a build reads the index again and keeps the cards read before
    (the vault's files are as they were); a card saved during the build is read anew."""
    control = tmp_path / "control"
    app = make_app(birds, poll_interval=None)  # no watcher: only the build reloads
    app.job_factories["index-build"] = fake_build(control)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.state.session
        assert before is not None
        (control / "go").write_text("", encoding="utf-8")
        await pilot.press("f7")
        await until(app, lambda: app.state.session is not before)
        kept = app.state.session
        assert kept.vault is before.vault and kept.lexical is before.lexical
        assert kept.index is not None and kept.index is not before.index  # read again

        (control / "go").unlink()
        await pilot.press("f7")
        await wait_for_event(pilot, "index-build", lambda e: e.done == 4)
        edit_card(birds)  # saved while the build runs
        (control / "go").write_text("", encoding="utf-8")
        await until(app, lambda: app.state.session is not kept)
        read = app.state.session
        assert read.vault is not kept.vault
        assert "dries its wings on posts" in read.card("great-cormorant").text


async def test_an_edit_a_check_saw_is_read_when_a_build_lands_first(
    make_app, birds: Path, tmp_path: Path
) -> None:
    """A check that saw an edit moves the watch baseline on before its reload has read
    the edit; a build landing then must still read the vault, not keep the old cards."""
    from hqltui.core.watch import before_load

    control = tmp_path / "control"
    app = make_app(birds, poll_interval=None)
    app.job_factories["index-build"] = fake_build(control)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.state.session
        assert before is not None
        edit_card(birds)
        app.sessions.signature = before_load(birds)  # what a check that saw it keeps
        (control / "go").write_text("", encoding="utf-8")
        await pilot.press("f7")
        await until(app, lambda: app.state.session is not before)
        assert app.state.session.vault is not before.vault
        assert "dries its wings on posts" in app.state.session.card("great-cormorant").text
