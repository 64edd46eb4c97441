"""Engine jobs ("engine: sync + build", "engine: verify") against the loopback fake Hotdata
server (a test stand-in, not the engine): the client's events become JobEvents with progress,
attempts, a log, the result, and the engine's own text on failure."""

from __future__ import annotations

import pytest

from hqltui.core.engine.jobs import engine_sync_build_job, engine_verify_job
from hqltui.core.jobs import JobBoard
from tests.helpers.engine_vaults import Recorder
from tests.helpers.vaults import copy_vault

pytest_plugins = ["tests.helpers.engine_fixtures"]


def options(rec: Recorder) -> dict:
    return {"sleep": rec.sleep, "clock": rec.clock, "poll_interval": 0.5}


def run(job):
    events = []
    final = job.run(events.append)
    return final, events


def test_sync_build_reports_rows_then_index_jobs_then_both_results(engine_birds, env):
    rec = Recorder()
    final, events = run(engine_sync_build_job(engine_birds, env=env, engine_options=options(rec)))
    assert final.state == "succeeded", final.message
    assert final.kind == "engine-sync-build" and final.title == "engine: sync + build"
    assert events[0].state == "running"
    rows = [e for e in events if e.determinate]
    assert rows and rows[-1].done == rows[-1].total == 58
    polls = [e for e in events if "index" in e.message and e.attempts is not None]
    assert polls and all(not e.determinate for e in polls)
    assert any("bm25 index on text: running, attempt 1" in e.message for e in polls)
    assert any("vector index (cosine) on embedding: succeeded" in e.message for e in polls)
    assert final.result["sync"]["added"] == 58 and final.result["sync"]["first_upload"]
    assert [i["action"] for i in final.result["build"]["indexes"]] == ["created", "created"]
    assert final.message.startswith("synced default.public.cards: 58 added")
    assert any(line.startswith("build: built on default.public.cards") for line in final.log)

    again, _ = run(engine_sync_build_job(engine_birds, env=env, engine_options=options(Recorder())))
    assert again.state == "succeeded"
    assert again.message == ("up to date: 58 rows in default.public.cards match the vault · "
                             "up to date: default.public.cards has a ready bm25 index and a "
                             "ready vector index")


@pytest.mark.parametrize("status", ["failed", "partially_succeeded"])
def test_a_failed_index_job_fails_the_job_with_the_engine_text_verbatim(fake, engine_birds, env,
                                                                        status):
    fake.inject_job_fault("create_index", status=status,
                          message="could not detect dimension for 'embedding'")
    final, events = run(engine_sync_build_job(engine_birds, env=env,
                                              engine_options=options(Recorder())))
    assert final.state == "failed"
    assert "could not detect dimension for 'embedding'" in final.message
    assert final.message.startswith("bm25 index on text")
    assert any("could not detect dimension for 'embedding'" in line for line in final.log)
    assert final.result is None


def test_verify_is_clean_then_counts_an_engine_stale_card(engine_birds, env):
    run(engine_sync_build_job(engine_birds, env=env, engine_options=options(Recorder())))
    final, _ = run(engine_verify_job(engine_birds, env=env, engine_options=options(Recorder())))
    assert final.state == "succeeded" and final.message.startswith("clean:")
    assert final.result["counts"] == {"stale": 0, "missing": 0, "orphan": 0}

    card = engine_birds / "barn-owl.hmd"
    card.write_text(card.read_text() + "\nIt also nests in church towers.\n")
    job = engine_verify_job(engine_birds, env=env, engine_options=options(Recorder()))
    final, _ = run(job)
    assert final.state == "failed"
    assert final.message.endswith("(1 stale 0 missing 0 orphan)")
    assert job.report.counts() == {"stale": 1, "missing": 0, "orphan": 0}
    assert any(line.startswith("engine-stale:") and "barn-owl" in line for line in final.log)


def test_refusals_are_one_line_naming_what_to_set(fake, engine_birds, env, tmp_path):
    no_workspace = {k: v for k, v in env.items() if k != "HOTDATA_WORKSPACE"}
    before = len(fake.requests)
    final, _ = run(engine_sync_build_job(engine_birds, env=no_workspace))
    assert final.state == "failed"
    assert final.message.startswith("refused: the Hotdata workspace variable HOTDATA_WORKSPACE "
                                    "is not set")
    assert "; fix: export HOTDATA_WORKSPACE=<workspace id>" in final.message
    assert "\n" not in final.message
    plain = tmp_path / "plain"
    copy_vault("birds", plain)
    final, _ = run(engine_verify_job(plain, env=env))
    assert final.message.startswith("refused: engine indexes are off: hql.toml has no [engine]")
    assert fake.api_key not in final.message
    assert len(fake.requests) == before  # nothing was sent


def test_cancel_during_the_build_stops_between_polls(engine_birds, env):
    rec = Recorder()
    job = engine_sync_build_job(engine_birds, env=env, engine_options=options(rec))
    events = []

    def emit(event):
        events.append(event)
        if "bm25 index on text: running" in event.message:
            job.cancel()

    final = job.run(emit)
    assert final.state == "cancelled"
    assert final.message.startswith("cancelled during build")


def test_one_engine_job_of_each_kind_at_a_time(engine_birds, env):
    board = JobBoard()
    first = engine_sync_build_job(engine_birds, env=env)
    assert board.claim(first) is None
    assert board.claim(engine_sync_build_job(engine_birds, env=env)) == (
        "engine: sync + build is already running")
    assert board.claim(engine_verify_job(engine_birds, env=env)) is None
