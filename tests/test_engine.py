"""The engine client against the loopback fake Hotdata server, through the real SDK.

The fake is a test stand-in built from DataFusion, Tantivy and USearch, not the
Hotdata engine. Jobs run in the fake's "poll" mode: each read of a job moves it
one step (pending -> running -> terminal), so the client's own polling drives
them; sleeps are injected and recorded, so nothing here waits for real.
"""

from __future__ import annotations

import threading

import hotdata
import pytest
from hotdata import models as m

from hqltui.core.engine import (
    EngineCancelled,
    EngineFailure,
    EngineRefused,
    JobProgress,
    LocalCards,
    Options,
    Retrying,
    RetryPolicy,
    RowsUploaded,
    build,
    client_fusion,
    search,
    settings_or_refuse,
    verify,
)
from hqltui.core.semantic import embed_local
from producer.vault import load_vault
from tests.fake_hotdata.testing import api_client
from tests.helpers.engine_vaults import (
    CREATES,
    LOADS,
    Recorder,
    add_engine,
    birds_queries,
    count,
    fresh_index,
    run,
)

pytest_plugins = ["tests.helpers.engine_fixtures"]

# ---------------------------------------------------------------- the lifecycle


def test_sync_build_verify_edit_delete_lifecycle(fake, engine_birds, env):
    n = len(load_vault(engine_birds).cards)
    rec = Recorder()
    report = run("sync", engine_birds, env, rec)
    assert report.first_upload and report.added == n and not report.up_to_date
    uploaded = rec.of(RowsUploaded)
    assert uploaded and uploaded[-1].done == uploaded[-1].total == n

    rec = Recorder()
    built = run("build", engine_birds, env, rec)
    assert [o.action for o in built.outcomes] == ["created", "created"]
    jobs = [e for e in rec.of(JobProgress) if e.job_type == "create_index"]
    for label in ("bm25 index on text", "vector index (cosine) on embedding"):
        seq = [e.status for e in jobs if e.label == label]
        assert seq == ["running", "succeeded"]
        assert all(e.attempts == 1 and e.elapsed >= 0 for e in jobs if e.label == label)
    again = run("build", engine_birds, env)
    assert again.up_to_date and "up to date" in again.summary()
    assert run("sync", engine_birds, env).up_to_date

    clean = run("verify", engine_birds, env)
    assert clean.clean, clean.problems
    assert {p["probe"] for p in clean.probes} == {"vector", "bm25"}

    # Edit a card: the engine row is stale until sync + build.
    card = engine_birds / "barn-owl.hmd"
    card.write_text(card.read_text() + "\nIt also nests in church towers.\n")
    stale = run("verify", engine_birds, env)
    assert not stale.clean and stale.parity.stale == ("barn-owl",)
    assert [p.kind for p in stale.problems] == ["engine-stale"]
    fresh_index(engine_birds, birds_queries())
    rec = Recorder()
    synced = run("sync", engine_birds, env, rec)
    assert (synced.rewritten, synced.added, synced.deleted) == (1, 0, 0)
    assert sorted(synced.dropped_indexes) == ["cards_embedding_vector", "cards_text_bm25"]
    assert [e.action for e in rec.of(RowsUploaded)] == ["rewrite"]
    after_sync = run("verify", engine_birds, env)
    assert {p.kind for p in after_sync.problems} == {"index-missing"}
    assert run("build", engine_birds, env).outcomes[0].action == "created"
    assert run("verify", engine_birds, env).clean

    # Delete a card: its row goes, and verify is clean after sync + build.
    (engine_birds / "dodo-member-of-raphinae.hmd").unlink()
    fresh_index(engine_birds, birds_queries())
    synced = run("sync", engine_birds, env)
    assert (synced.deleted, synced.added, synced.rewritten) == (1, 0, 0)
    run("build", engine_birds, env)
    final = run("verify", engine_birds, env)
    assert final.clean and final.parity.same == n - 1


def test_edit_plus_new_card_is_two_loads_never_a_mixed_upsert(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    card = engine_birds / "mallard.hmd"
    card.write_text(card.read_text() + "\nDabbles at dusk.\n")
    (engine_birds / "new-bird.hmd").write_text(
        "---\ntitle: New bird\n---\n# New bird\n\nA brand new bird.\n")
    fresh_index(engine_birds, birds_queries())
    rec = Recorder()
    synced = run("sync", engine_birds, env, rec)
    assert [e.action for e in rec.of(RowsUploaded)] == ["rewrite", "insert"]
    assert (synced.rewritten, synced.added) == (1, 1)
    # The fake fails every vector build that follows a mixed upsert; this one succeeds.
    assert [o.action for o in run("build", engine_birds, env).outcomes] == ["created", "created"]
    assert run("verify", engine_birds, env).clean


def test_sync_refuses_a_stale_or_incomplete_local_index_before_sending_anything(fake, engine_birds,
                                                                                env):
    card = engine_birds / "grey-heron.hmd"
    card.write_text(card.read_text() + "\nStands still for hours.\n")
    before = len(fake.requests)
    with pytest.raises(EngineRefused) as info:
        run("sync", engine_birds, env)
    assert "grey-heron" in str(info.value) and "hql-semantics build" in info.value.refusal.fix
    (engine_birds / "another.hmd").write_text("# Another\n\nText.\n")
    with pytest.raises(EngineRefused, match="no vector in the local index"):
        run("sync", engine_birds, env)
    assert len(fake.requests) == before


def test_build_before_sync_fails_with_what_to_run(fake, engine_birds, env):
    with pytest.raises(EngineFailure, match="engine sync"):
        run("build", engine_birds, env)
    report = run("verify", engine_birds, env)
    assert [p.kind for p in report.problems] == ["no-rows"]


def test_build_replaces_wrong_indexes_and_leaves_right_ones(fake, engine_birds, env, db):
    run("sync", engine_birds, env)
    with api_client(fake) as api:
        indexes = hotdata.IndexesApi(api)
        for name, kind, cols, metric in (("wrong_vec", "vector", ["embedding"], "l2"),
                                         ("title_bm25", "bm25", ["title"], None),
                                         ("right_bm25", "bm25", ["text"], None)):
            indexes.create_index(db.default_connection_id, "public", "cards",
                                 m.CreateIndexRequest(index_name=name, index_type=kind,
                                                      columns=cols, metric=metric))
    report = run("verify", engine_birds, env)
    assert sum(p.kind == "index-unexpected" for p in report.problems) == 2
    built = run("build", engine_birds, env)
    assert sorted(built.dropped) == ["title_bm25", "wrong_vec"]
    assert [(o.action, o.name) for o in built.outcomes] == [
        ("up to date", "right_bm25"), ("replaced", "cards_embedding_vector")]
    assert run("verify", engine_birds, env).clean


# ---------------------------------------------------------------- search


def test_engine_hybrid_sql_equals_client_rrf_over_the_engines_own_arms(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    local = LocalCards.load(engine_birds, embed=embed_local)
    settings = settings_or_refuse(local, env)
    s = local.config.search
    for text in birds_queries():
        answer = search(local, settings, text, limit=s.window, options=Recorder().options())
        assert answer.ok, text
        arms = [q for q in fake.query_log[-3:]]
        # bm25 alone, vector alone (index-served), hybrid (its vector CTE index-served)
        assert arms[1].served_by == "vector_index" and arms[2].served_by == "vector_index"
        assert all(call["k_explicit"] and call["k"] == s.window
                   for q in (arms[0], arms[2]) for call in q.bm25_calls)
        mine = client_fusion(answer.bm25, answer.semantic, k=s.rrf_k,
                             weights={"bm25": s.weights.lexical, "semantic": s.weights.semantic},
                             window=s.window, limit=s.window, query=text)
        got = answer.hybrid
        assert [h.card for h in got.hits] == [h.card for h in mine.hits], text
        for a, b in zip(got.hits, mine.hits, strict=True):
            assert a.score == pytest.approx(b.score, rel=0, abs=1e-12)
            for arm in ("bm25", "semantic"):
                x, y = a.arms[arm], b.arms[arm]
                assert (x is None) == (y is None)
                if x is not None:
                    assert x.rank == y.rank and x.score == pytest.approx(y.score, abs=1e-6)
        assert got.total == mine.total
        assert got.retrieval.windows == {"bm25": s.window, "semantic": s.window}
        assert answer.semantic.retrieval.approximate is True


def test_exact_vector_search_is_a_scan_and_says_so(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    text = birds_queries()[0]
    approx = run("search", engine_birds, env, text=text, mode="semantic")
    assert fake.query_log[-1].served_by == "vector_index"
    exact = run("search", engine_birds, env, text=text, mode="semantic", exact=True)
    assert fake.query_log[-1].served_by == "scan"
    assert exact.semantic.retrieval.approximate is False
    assert approx.semantic.retrieval.approximate is True
    assert exact.semantic.names()[:5] == approx.semantic.names()[:5]


def test_a_blank_query_sends_nothing(fake, engine_birds, env):
    before = len(fake.requests)
    answer = run("search", engine_birds, env, text="   ")
    assert answer.ok and all(not r.hits for r in answer.rankings().values())
    assert len(fake.requests) == before


def test_a_query_no_card_matches_gives_an_empty_bm25_ranking(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    answer = run("search", engine_birds, env, text="xyzzyplugh", mode="bm25")
    assert answer.bm25.ok and answer.bm25.hits == ()


def test_bm25_without_its_index_refuses_with_the_build_command_and_sends_no_bm25(fake, engine_birds,
                                                                                 env):
    run("sync", engine_birds, env)
    answer = run("search", engine_birds, env, text="owl", mode="bm25")
    assert not answer.bm25.ok
    assert "has no bm25 index on text" in answer.bm25.refusal.message
    assert answer.bm25.refusal.fix == "hql-tui engine build VAULT"
    assert not any("bm25_search" in q.sql for q in fake.query_log)


def test_vector_arm_refuses_without_a_query_vector_and_hybrid_does_not_fall_back(fake, engine_birds,
                                                                                 env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    answer = run("search", engine_birds, env, text="a query nobody stored")
    assert answer.bm25.ok
    assert not answer.semantic.ok and not answer.hybrid.ok
    assert "hql-semantics build" in answer.hybrid.refusal.fix


# ---------------------------------------------------------------- faults


def test_resource_locked_on_a_load_is_retried_after_retry_after(fake, engine_birds, env):
    fake.inject_fault("POST", LOADS, status=409, code="RESOURCE_LOCKED", retry_after=2, times=2)
    rec = Recorder()
    run("sync", engine_birds, env, rec)
    retries = rec.of(Retrying)
    assert [r.code for r in retries] == ["RESOURCE_LOCKED"] * 2 and 2.0 in rec.sleeps
    assert run("sync", engine_birds, env).up_to_date


def test_overloaded_query_is_retried_and_bounded(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.inject_fault("POST", "/v1/query", status=429, retry_after=1.5, times=1)
    rec = Recorder()
    assert run("search", engine_birds, env, rec, text="owl", mode="bm25").bm25.ok
    assert rec.sleeps[:1] == [1.5] and rec.of(Retrying)[0].code == "OVERLOADED"
    fake.inject_fault("POST", "/v1/query", status=429, retry_after=1, times=50)
    local = LocalCards.load(engine_birds, embed=embed_local)
    opts = Recorder().options(policy=RetryPolicy(max_attempts=3))
    with pytest.raises(EngineFailure, match="after 3 attempts"):
        search(local, settings_or_refuse(local, env), "owl", mode="bm25", options=opts)
    fake.clear_faults()


def test_other_errors_are_not_retried_and_carry_the_engines_message(fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_fault("POST", CREATES, status=500, message="index store unavailable: disk full")
    with pytest.raises(EngineFailure, match="index store unavailable: disk full"):
        run("build", engine_birds, env)
    assert count(fake, "POST", CREATES) == 1


@pytest.mark.parametrize("drop", ["after", "before"])
def test_dropped_connection_on_create_never_creates_twice(fake, engine_birds, env, drop):
    run("sync", engine_birds, env)
    fake.inject_fault("POST", CREATES, drop=drop)
    rec = Recorder()
    built = run("build", engine_birds, env, rec)
    assert [o.action for o in built.outcomes] == ["created", "created"]
    # "after": the engine did create it; the client re-read and adopted its job.
    # "before": nothing was created; the client re-read, then sent it once more.
    assert count(fake, "POST", CREATES) == (2 if drop == "after" else 3)
    with api_client(fake) as api:
        db = next(iter(fake.state.databases.values()))
        listed = hotdata.IndexesApi(api).list_indexes(db.default_connection_id, "public",
                                                      "cards")
    assert sorted(i.index_name for i in listed.indexes) == ["cards_embedding_vector",
                                                            "cards_text_bm25"]
    assert rec.of(Retrying) and run("verify", engine_birds, env).clean


@pytest.mark.parametrize("drop", ["after", "before"])
def test_dropped_connection_on_a_load_rereads_before_writing_again(fake, engine_birds, env, drop):
    fake.inject_fault("POST", LOADS, drop=drop)
    report = run("sync", engine_birds, env)
    assert report.added == len(load_vault(engine_birds).cards)
    assert count(fake, "POST", LOADS) == (1 if drop == "after" else 2)
    run("build", engine_birds, env)
    assert run("verify", engine_birds, env).clean


@pytest.mark.parametrize("status", ["failed", "partially_succeeded"])
def test_a_failed_index_job_is_a_failure_with_its_message(fake, engine_birds, env, status):
    run("sync", engine_birds, env)
    fake.inject_job_fault("create_index", status=status,
                          message="could not detect dimension for 'embedding'")
    rec = Recorder()
    with pytest.raises(EngineFailure) as info:
        run("build", engine_birds, env, rec)
    assert "could not detect dimension for 'embedding'" in str(info.value)
    assert info.value.detail == "could not detect dimension for 'embedding'"
    last = rec.of(JobProgress)[-1]
    assert last.status == status and last.error == info.value.detail
    if status == "partially_succeeded":
        assert "partially succeeded" in str(info.value)
    assert not run("verify", engine_birds, env).clean  # nothing was reported as built


def test_a_failed_load_job_fails_the_sync(fake, engine_birds, env):
    fake.inject_job_fault("managed_load", status="failed", message="storage quota exceeded")
    with pytest.raises(EngineFailure, match="storage quota exceeded"):
        run("sync", engine_birds, env)


def test_cancel_stops_between_polls(fake, engine_birds, env):
    run("sync", engine_birds, env)
    cancel = threading.Event()
    rec = Recorder()

    def on_event(event):
        rec.events.append(event)
        if isinstance(event, JobProgress):
            cancel.set()

    local = LocalCards.load(engine_birds, embed=embed_local)
    opts = Options(on_event=on_event, sleep=rec.sleep, clock=rec.clock, cancel=cancel)
    with pytest.raises(EngineCancelled):
        build(settings_or_refuse(local, env), opts)


def test_cancel_ends_a_long_retry_after_wait_at_once(fake, engine_birds, env):
    """Only the cancel event is injected: the default sleep is the event's own wait, so a
    60 s Retry-After ends as soon as the cancel is set (the app joins workers at exit)."""
    import time

    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.inject_fault("POST", "/v1/query", status=429, retry_after=60, times=5)
    local = LocalCards.load(engine_birds, embed=embed_local)
    settings = settings_or_refuse(local, env)
    cancel = threading.Event()
    waiting = threading.Event()

    def on_event(event):
        if isinstance(event, Retrying):
            waiting.set()

    outcome: list[BaseException | None] = []

    def ask():
        try:
            search(local, settings, "owl", mode="bm25",
                   options=Options(on_event=on_event, cancel=cancel))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    assert waiting.wait(10)
    set_at = time.monotonic()
    cancel.set()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - set_at < 5
    assert isinstance(outcome[0], EngineCancelled)
    fake.clear_faults()


def test_wrong_key_and_unknown_database_fail_with_the_engines_words(fake, engine_birds, env):
    with pytest.raises(EngineFailure, match="invalid API key"):
        run("sync", engine_birds, {**env, "HOTDATA_API_KEY": "wrong"})
    text = (engine_birds / "hql.toml").read_text().replace('database = "db_', 'database = "nope_')
    (engine_birds / "hql.toml").write_text(text)
    with pytest.raises(EngineFailure, match="was not found in workspace"):
        run("build", engine_birds, env)


# ------------------------------------------------- faults a user meets, in one line
# (the words docs/engine.md gives: never a decoder's column, a validator's page of
# field errors, the SDK's HTTP headers, or "connection closed" for a timeout)

QUERY = "/v1/query"


def failure(kind, root, env, **kw) -> str:  # noqa: ANN001 - the helpers' own types
    with pytest.raises(EngineFailure) as caught:
        run(kind, root, env, **kw)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def test_a_reply_that_is_not_json_is_named_so(fake, engine_birds, env) -> None:
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.inject_fault("POST", QUERY, body=b"<html>oops</html>", times=10)
    message = failure("search", engine_birds, env, text="owl", mode="bm25")
    assert message.endswith("the engine's reply is not JSON (it begins `<html>oops</html>`)")
    assert "JSONDecodeError" not in message


def test_a_reply_of_the_wrong_shape_is_one_line(fake, engine_birds, env) -> None:
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.inject_fault("POST", QUERY, body=b'{"columns": 7, "rows": "many"}', times=10)
    message = failure("search", engine_birds, env, text="owl", mode="bm25")
    assert "the engine's reply does not have the expected shape" in message
    assert "pydantic" not in message and "errors.pydantic.dev" not in message


def test_a_refused_upload_gives_the_engines_message_not_its_headers(fake, engine_birds, env
                                                                    ) -> None:
    fake.inject_fault("POST", "/v1/uploads", status=403, code="FORBIDDEN",
                      message="this key may not upload")
    message = failure("sync", engine_birds, env)
    assert message == "upload Parquet: this key may not upload"


def test_no_reply_within_the_request_timeout_is_called_a_timeout(fake, engine_birds, env
                                                                 ) -> None:
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.inject_fault("GET", "/v1/connections/*/indexes", stall=30, times=10)
    try:
        rec = Recorder()
        options = rec.options(request_timeout=0.2)
        local = LocalCards.load(engine_birds, embed=embed_local)
        with pytest.raises(EngineFailure) as caught:
            verify(local, settings_or_refuse(local, env), options)
    finally:
        fake.clear_faults()
    message = str(caught.value)
    assert message == ("list the table's indexes: the engine did not reply within 0.2 s (the "
                       "request may still take effect)")


def test_an_empty_vault_is_named_not_a_dimension(fake, tmp_path, db, env) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    (root / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n')
    fresh_index(root)
    add_engine(root, db.id)
    with pytest.raises(EngineRefused) as caught:
        run("sync", root, env)
    assert str(caught.value) == (f"{root}: the vault has no cards, so there is nothing to "
                                 "sync (nothing was sent; the engine table is left as it is)")
    assert count(fake, "POST", "/v1/uploads") == 0
    report = run("verify", root, env)
    assert [p.message for p in report.problems] == [
        f"{report.table} has no rows on the engine: the vault has no cards, so there is "
        "nothing to index or search; add cards, then sync and build"]
