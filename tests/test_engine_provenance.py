"""Engine provenance from evidence, and jobs that survive transient faults (against the fake).

The fake is a test stand-in built from DataFusion, Tantivy and USearch, not the Hotdata
engine. Every claim an engine ranking makes -- approximate or not, which index served it,
which model its rows hold -- is checked here against what the fake really did.
"""

from __future__ import annotations

import dataclasses
import json

import hotdata
import pyarrow as pa
import pytest
from hotdata import models as m

from hqltui.cli import main as cli_main
from hqltui.core.engine import (
    EngineFailure,
    JobProgress,
    LocalCards,
    Retrying,
    Step,
    build,
    settings_or_refuse,
    sync,
)
from hqltui.core.engine import client as client_mod
from hqltui.core.semantic import embed_local
from tests.fake_hotdata.testing import api_client, parquet_bytes
from tests.helpers.engine_vaults import (
    CREATES,
    LOADS,
    Recorder,
    birds_queries,
    count,
    fresh_index,
    run,
)

pytest_plugins = ["tests.helpers.engine_fixtures"]


def _query() -> str:
    return birds_queries()[0]


def _models_counted(fake) -> int:
    return sum("GROUP BY model, revision" in q.sql for q in fake.query_log)


# ---------------------------------------------------------------- approximate from evidence


def test_vector_search_before_build_is_a_full_scan_that_says_so_and_after_build_names_its_index(
        fake, engine_birds, env):
    run("sync", engine_birds, env)
    before = run("search", engine_birds, env, text=_query())
    semantic, hybrid = before.semantic, before.hybrid
    assert semantic.ok and semantic.retrieval.approximate is False
    vector_queries = [q for q in fake.query_log if "cosine_distance" in q.sql]
    assert vector_queries and all(q.served_by == "scan" for q in vector_queries)
    assert semantic.retrieval.engine["served_by"] is None
    assert semantic.retrieval.engine["full_scan"] is True
    [warning] = [w for w in semantic.warnings if w.kind == "engine-index"]
    assert "no vector index on embedding" in warning.message
    assert "full scan" in warning.message and "hql-tui engine build VAULT" in warning.message
    # BM25 has no scan to fall back to: it refuses, and so does hybrid, with the fix.
    assert not before.bm25.ok and before.bm25.refusal.fix == "hql-tui engine build VAULT"
    assert not hybrid.ok and hybrid.retrieval.approximate is False

    run("build", engine_birds, env)
    after = run("search", engine_birds, env, text=_query())
    semantic = after.semantic
    assert semantic.retrieval.approximate is True
    assert not [w for w in semantic.warnings if w.kind == "engine-index"]
    served = semantic.retrieval.engine["served_by"]
    assert served == {"name": "cards_embedding_vector", "type": "vector",
                      "columns": ["embedding"], "metric": "cosine", "status": "ready"}
    assert after.hybrid.retrieval.approximate is True
    assert after.bm25.retrieval.engine["served_by"]["name"] == "cards_text_bm25"
    vector_queries = [q for q in fake.query_log if "cosine_distance" in q.sql]
    assert vector_queries[-2].served_by == "vector_index"  # the vector arm, then hybrid
    for ranking in after.rankings().values():
        record = ranking.retrieval.engine
        assert record["query_run_id"].startswith("qrun")
        assert isinstance(record["execution_time_ms"], int) and record["sql"]


def test_a_vector_index_of_another_metric_does_not_make_the_arm_approximate(fake, engine_birds, env,
                                                                            db):
    run("sync", engine_birds, env)
    with api_client(fake) as api:
        hotdata.IndexesApi(api).create_index(
            db.default_connection_id, "public", "cards",
            m.CreateIndexRequest(index_name="l2_vec", index_type="vector",
                                 columns=["embedding"], metric="l2"))
    answer = run("search", engine_birds, env, text=_query(), mode="semantic")
    assert answer.semantic.retrieval.approximate is False
    assert fake.query_log[-1].served_by == "scan"
    assert any("uses metric l2, not cosine" in w.message for w in answer.semantic.warnings)


def test_exact_is_a_full_scan_by_request_without_a_missing_index_warning(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    answer = run("search", engine_birds, env, text=_query(), exact=True)
    assert answer.semantic.retrieval.approximate is False
    assert answer.semantic.retrieval.engine["served_by"] is None
    assert not [w for w in answer.semantic.warnings if w.kind == "engine-index"]
    assert answer.hybrid.retrieval.approximate is True  # hybrid's vector arm is never exact


# ---------------------------------------------------------------- the model from the rows


def _relabel_local_index(root, revision: str) -> None:
    from producer.index_format import IndexContents
    from producer.index_reader import read_index
    from producer.index_writer import write_index

    target = root / ".hql" / "index.sqlite"
    old = read_index(target)
    write_index(target, IndexContents(model=dataclasses.replace(old.model, revision=revision),
                                      meta=old.meta, cards=old.cards, queries=old.queries))


def test_rows_under_another_model_refuse_the_vector_arm_naming_both(fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    _relabel_local_index(engine_birds, "another-revision")
    answer = run("search", engine_birds, env, text=_query())
    assert answer.bm25.ok
    for ranking in (answer.semantic, answer.hybrid):
        assert not ranking.ok
        message = ranking.refusal.message
        assert "revision test-random-unit-vectors" in message
        assert "revision another-revision" in message and "rows)" in message
        assert "hql-tui engine sync VAULT" in ranking.refusal.fix
    assert answer.semantic.retrieval.revision == "test-random-unit-vectors"  # the rows' own
    assert not any("cosine_distance" in q.sql for q in fake.query_log[-3:])


def test_the_rows_model_is_the_retrievals_and_is_counted_once_until_the_next_sync(
        fake, engine_birds, env):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    first = run("search", engine_birds, env, text=_query(), mode="semantic")
    assert first.semantic.retrieval.revision == "test-random-unit-vectors"
    assert first.semantic.retrieval.engine["model_from"] == "the engine's rows"
    assert _models_counted(fake) == 1
    run("search", engine_birds, env, text=_query(), mode="semantic")
    assert _models_counted(fake) == 1  # cached
    run("sync", engine_birds, env)
    run("search", engine_birds, env, text=_query(), mode="semantic")
    assert _models_counted(fake) == 2  # a sync forgets it
    run("build", engine_birds, env)
    run("search", engine_birds, env, text=_query(), mode="semantic")
    assert _models_counted(fake) == 3  # so does a build


def test_an_engine_warning_is_kept_and_shown(fake, engine_birds, env, capsys, monkeypatch):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    fake.state.query_warning = "result preview truncated to 10000 rows"
    answer = run("search", engine_birds, env, text=_query(), mode="bm25")
    assert answer.bm25.retrieval.engine["warning"] == "result preview truncated to 10000 rows"
    assert [w.message for w in answer.bm25.warnings if w.kind == "engine"] == [
        "the engine warned: result preview truncated to 10000 rows"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli_main(["engine", "search", str(engine_birds), _query(), "--mode", "bm25"]) == 0
    assert "  warning: the engine warned: result preview truncated" in capsys.readouterr().out


# ---------------------------------------------------------------- --show-sql


def test_show_sql_prints_each_statement_before_its_results_and_json_carries_them(fake, engine_birds,
                                                                                 env, capsys,
                                                                                 monkeypatch):
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert cli_main(["engine", "search", str(engine_birds), _query(), "--show-sql",
                     "--limit", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("engine ")]
    assert len(heads) == 3
    for head in heads:
        assert lines[head + 1].startswith("  sql: SELECT") or lines[head + 1].startswith(
            "  sql: WITH")
        assert lines[head + 2].lstrip().startswith("1 ")
    assert lines[heads[0] + 1].startswith("  sql: SELECT name, score FROM bm25_search(")
    # what no arm owns comes first: the table's catalog, then the rows' models
    assert lines[0].startswith("sql (find the table's catalog): SELECT table_catalog FROM "
                               "information_schema.tables")
    assert lines[1].startswith("sql (count the rows' models): SELECT model, revision")
    assert cli_main(["engine", "search", str(engine_birds), _query(), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [s["what"] for s in answer["statements"]] == [
        "engine bm25 search", "engine vector search", "engine hybrid search"]  # both cached
    assert answer["hybrid"]["retrieval"]["engine"]["sql"].startswith("WITH near AS")
    # without the flag, no statement is printed
    assert cli_main(["engine", "search", str(engine_birds), _query()]) == 0
    assert "sql:" not in capsys.readouterr().out


# ---------------------------------------------------------------- jobs and transient faults


def test_a_503_on_one_job_read_is_retried_and_the_build_succeeds(fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_fault("GET", "/v1/jobs/*", status=503, code="PERSISTENCE_UNAVAILABLE",
                      message="job store briefly unavailable")
    rec = Recorder()
    built = run("build", engine_birds, env, rec)
    assert [o.action for o in built.outcomes] == ["created", "created"]
    [retry] = [r for r in rec.of(Retrying) if r.status == 503]
    assert "job store briefly unavailable" in retry.message
    assert run("verify", engine_birds, env).clean


def test_a_dropped_connection_on_a_job_read_is_retried(fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_fault("GET", "/v1/jobs/*", drop="before")
    assert [o.action for o in run("build", engine_birds, env).outcomes] == ["created", "created"]


def test_job_reads_give_up_within_the_same_budget(fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_fault("GET", "/v1/jobs/*", status=503, times=50)
    with pytest.raises(EngineFailure, match="after 6 attempts"):
        run("build", engine_birds, env)
    fake.clear_faults()


def test_a_5xx_on_a_create_is_still_not_retried(fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_fault("POST", CREATES, status=503, message="index store unavailable")
    with pytest.raises(EngineFailure, match="index store unavailable"):
        run("build", engine_birds, env)
    assert count(fake, "POST", CREATES) == 1


def test_a_partially_succeeded_index_is_rebuilt_by_the_next_build_never_up_to_date(
        fake, engine_birds, env):
    run("sync", engine_birds, env)
    fake.inject_job_fault("create_index", status="partially_succeeded",
                          message="2 of 48 rows were not indexed")
    with pytest.raises(EngineFailure, match="partially succeeded"):
        run("build", engine_birds, env)
    report = run("verify", engine_birds, env)
    [failed] = [p for p in report.problems if p.kind == "index-failed"]
    assert "partially succeeded (2 of 48 rows were not indexed)" in failed.message
    rec = Recorder()
    again = run("build", engine_birds, env, rec)
    assert not again.up_to_date
    assert [(o.spec.index_type, o.action) for o in again.outcomes] == [
        ("bm25", "replaced"), ("vector", "created")]
    assert "cards_text_bm25" in again.dropped
    assert any("its build job partially succeeded" in e.message for e in rec.of(Step))
    assert run("build", engine_birds, env).up_to_date  # its new job succeeded
    assert run("verify", engine_birds, env).clean


def test_after_an_interrupted_sync_verify_bm25_and_vector_each_say_what_is_missing(
        fake, engine_birds, env):
    """Rows present, search indexes absent: what a sync interrupted after its loads leaves."""
    run("sync", engine_birds, env)
    report = run("verify", engine_birds, env)
    assert {p.kind for p in report.problems} == {"index-missing"}
    assert all("run `hql-tui engine build VAULT`" in p.message for p in report.problems)
    answer = run("search", engine_birds, env, text=_query())
    assert not answer.bm25.ok and "hql-tui engine build VAULT" == answer.bm25.refusal.fix
    assert answer.semantic.ok and answer.semantic.retrieval.approximate is False
    assert any("the index is missing" in w.message for w in answer.semantic.warnings)


def test_the_job_list_is_read_page_by_page(fake, engine_birds, env, monkeypatch):
    monkeypatch.setattr(client_mod, "JOBS_PAGE", 1)
    run("sync", engine_birds, env)
    run("build", engine_birds, env)
    card = engine_birds / "barn-owl.hmd"  # an edit: the next sync drops both indexes
    card.write_text(card.read_text() + "\nIt also nests in church towers.\n")
    fresh_index(engine_birds, birds_queries())
    run("sync", engine_birds, env)
    # The lost create's job is on a later page than the two earlier builds' jobs.
    fake.inject_fault("POST", CREATES, drop="after")
    local = LocalCards.load(engine_birds, embed=embed_local)
    built = build(settings_or_refuse(local, env), Recorder().options(job_timeout=20))
    assert [o.action for o in built.outcomes] == ["created", "created"]
    assert count(fake, "POST", CREATES) == 4  # the lost create was found, never resent


def _other_table(fake, db):
    """A second table in the database, with rows of its own."""
    with api_client(fake) as api:
        upload = hotdata.UploadsApi(api).upload_file(
            parquet_bytes(
                pa.table({"name": ["x"], "text": ["other words"]})))
        hotdata.api.databases_api.DatabasesApi(api).load_database_table(
            db.id, "public", "other", m.LoadManagedTableRequest(
                mode="replace", upload_id=upload.upload_id, key=["name"]))


@pytest.mark.parametrize("drop", ["before", "after"])
def test_a_lost_create_reply_never_adopts_another_tables_index_job(fake, engine_birds, env, db,
                                                                   drop):
    run("sync", engine_birds, env)
    _other_table(fake, db)
    fake.inject_fault("POST", CREATES, drop=drop, times=1)
    rec = Recorder()

    def on_event(event):
        rec.events.append(event)
        if isinstance(event, Retrying) and "create" in event.what and event.status is None:
            fake.inject_job_fault("create_index", status="failed",
                                  message="the other table's index failed")
            with api_client(fake) as api:  # someone else's build starts, and fails, meanwhile
                hotdata.IndexesApi(api).create_index(
                    db.default_connection_id, "public", "other",
                    m.CreateIndexRequest(index_name="other_text_bm25", index_type="bm25",
                                         columns=["text"], var_async=True))
            fake.run_jobs()

    local = LocalCards.load(engine_birds, embed=embed_local)
    options = dataclasses.replace(rec.options(), on_event=on_event)
    built = build(settings_or_refuse(local, env), options)
    assert [o.action for o in built.outcomes] == ["created", "created"]
    # "before": ours never arrived and is sent again; "after": ours is followed to its end.
    # Either way the other table's create is one of the creates counted.
    assert count(fake, "POST", CREATES) == (4 if drop == "before" else 3)
    assert run("verify", engine_birds, env).clean


def test_a_lost_load_reply_never_waits_on_another_tables_load(fake, engine_birds, env, db):
    _other_table(fake, db)
    fake.inject_fault("POST", LOADS.replace("*/tables/*", "*/tables/cards"), drop="before")

    def on_event(event):
        if isinstance(event, Retrying) and "load" in event.what and event.status is None:
            fake.inject_job_fault("managed_load", status="failed",
                                  message="the other table's load failed")
            with api_client(fake) as api:
                upload = hotdata.UploadsApi(api).upload_file(
                    parquet_bytes(
                        pa.table({"name": ["y"], "text": ["more"]})))
                hotdata.api.databases_api.DatabasesApi(api).load_database_table(
                    db.id, "public", "other", m.LoadManagedTableRequest(
                        mode="upsert", upload_id=upload.upload_id, key=["name"],
                        var_async=True))

    local = LocalCards.load(engine_birds, embed=embed_local)
    rec = Recorder()
    options = dataclasses.replace(rec.options(), on_event=on_event)
    report = sync(local, settings_or_refuse(local, env), options)
    assert report.added == len(local.vault.cards)  # the other table's failure is not ours
    assert run("sync", engine_birds, env).up_to_date


def test_ctrl_c_during_a_sync_says_a_load_job_may_still_run(fake, engine_birds, env, capsys,
                                                            monkeypatch):
    import hqltui.commands.engine as engine_cmd

    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def interrupting(as_json, quiet):
        def emit(event):
            if isinstance(event, JobProgress):
                raise KeyboardInterrupt
        return emit

    monkeypatch.setattr(engine_cmd, "_printer", interrupting)
    assert cli_main(["engine", "sync", str(engine_birds)]) == 130
    err = capsys.readouterr().err
    assert "hql-tui engine sync: interrupted; a load job may still run on the engine" in err
    assert "run `hql-tui engine sync VAULT` again" in err and "Traceback" not in err
