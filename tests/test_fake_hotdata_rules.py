"""The engine-contract rules the fake enforces, each driven through the real SDK.

Every test here fails if the fake stops enforcing its rule.
"""

from __future__ import annotations

import hotdata
import pyarrow as pa
import pytest
from hotdata import models as m

from tests.fake_hotdata.testing import (
    VECTOR,
    cards_table,
    create_database,
    create_index,
    error_body,
    finish,
    load,
    query,
    vector_literal,
)

pytest_plugins = ["tests.fake_hotdata.fixtures"]


@pytest.fixture
def loaded(fake_hotdata, api):
    """A database whose cards table holds 40 rows."""
    db = create_database(api)
    load(api, db, cards_table())
    return db


def _index_names(api, db, table="cards"):
    listed = hotdata.IndexesApi(api).list_indexes(db.default_connection_id, "public", table)
    return sorted(i.index_name for i in listed.indexes)


# -- indexes ---------------------------------------------------------------------------------


def test_no_index_on_a_table_without_data(api):
    db = create_database(api)
    with pytest.raises(hotdata.ApiException) as caught:
        create_index(api, db, name="t_bm25", index_type="bm25", columns=["text"])
    assert caught.value.status == 400
    assert "has no data" in error_body(caught.value)["error"]["message"]
    assert _index_names(api, db) == []


def test_one_vector_index_per_table(fake_hotdata, api, loaded):
    create_index(
        api, loaded, name="v1", index_type="vector", columns=["embedding"], metric="cosine"
    )
    with pytest.raises(hotdata.ApiException) as caught:
        create_index(
            api, loaded, name="v2", index_type="vector", columns=["embedding"], metric="l2"
        )
    assert caught.value.status == 400
    assert "already has a vector index" in error_body(caught.value)["error"]["message"]
    assert _index_names(api, loaded) == ["v1"]


def test_plain_vector_index_and_bm25_coexist(fake_hotdata, api, loaded):
    create_index(api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine")
    create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    fake_hotdata.run_jobs()
    assert _index_names(api, loaded) == ["b", "v"]


def test_provider_backed_vector_index_refused_beside_another_index(fake_hotdata, api, loaded):
    create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    with pytest.raises(hotdata.ApiException) as caught:
        create_index(
            api,
            loaded,
            name="semantic",
            index_type="vector",
            columns=["text"],
            embedding_provider_id="sys_emb_openai",
        )
    message = error_body(caught.value)["error"]["message"]
    assert caught.value.status == 400
    assert message.startswith("Embedding-backed vector indexes cannot coexist")
    assert _index_names(api, loaded) == ["b"]


def test_provider_backed_vector_index_excludes_later_indexes(fake_hotdata, api, loaded):
    job = create_index(
        api,
        loaded,
        name="semantic",
        index_type="vector",
        columns=["text"],
        embedding_provider_id="sys_emb_openai",
    )
    record = finish(fake_hotdata, api, job.id)
    assert record.status.value == "succeeded"
    info = record.result.actual_instance
    assert (info.source_column, info.columns) == ("text", ["text_embedding"])
    with pytest.raises(hotdata.ApiException) as caught:
        create_index(api, loaded, name="b", index_type="bm25", columns=["path"])
    assert caught.value.status == 400
    assert "cannot coexist" in error_body(caught.value)["error"]["message"]
    assert _index_names(api, loaded) == ["semantic"]


def test_no_index_on_a_table_that_declares_a_sort_order(api):
    db = hotdata.DatabasesApi(api).create_database(
        m.CreateDatabaseRequest(
            name="sorted",
            schemas=[
                m.DatabaseDefaultSchemaDecl(
                    name="public",
                    tables=[
                        m.DatabaseDefaultTableDecl(
                            name="cards", sorted_by=[m.TableSortKey(column="name")]
                        )
                    ],
                )
            ],
        )
    )
    load(api, db, cards_table())
    with pytest.raises(hotdata.ApiException) as caught:
        create_index(api, db, name="b", index_type="bm25", columns=["text"])
    assert "sort order" in error_body(caught.value)["error"]["message"]


def test_index_is_pending_until_its_job_runs(fake_hotdata, api, loaded):
    job = create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    assert isinstance(job, m.SubmitJobResponse)
    listed = (
        hotdata.IndexesApi(api)
        .list_indexes(loaded.default_connection_id, "public", "cards")
        .indexes
    )
    assert [i.status.value for i in listed] == ["pending"]
    fake_hotdata.run_jobs()
    listed = (
        hotdata.IndexesApi(api)
        .list_indexes(loaded.default_connection_id, "public", "cards")
        .indexes
    )
    assert [i.status.value for i in listed] == ["ready"]


# -- bm25_search -----------------------------------------------------------------------------


def test_bm25_search_without_a_bm25_index_errors_with_the_engine_message(fake_hotdata, api, loaded):
    sql = "SELECT name FROM bm25_search('default.public.cards', 'text', 'garden', 5)"
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, loaded, sql)
    assert caught.value.status == 400
    assert error_body(caught.value)["error"]["message"] == (
        "No BM25 index found on column 'text' for default.public.cards"
    )
    # An index still pending is no index either; once built, the same query answers.
    create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    with pytest.raises(hotdata.ApiException):
        query(api, loaded, sql)
    fake_hotdata.run_jobs()
    assert len(query(api, loaded, sql).rows) == 5


def test_bm25_results_come_back_in_row_order_not_score_order(fake_hotdata, api):
    db = create_database(api)
    # Row order and score order disagree: the strongest match is the last row.
    texts = ["apple pear plum fig kiwi", "apple pear", "lime lime lime", "apple apple apple"]
    load(api, db, pa.table({"name": ["r0", "r1", "r2", "r3"], "text": texts}))
    create_index(api, db, name="b", index_type="bm25", columns=["text"])
    fake_hotdata.run_jobs()
    unsorted = query(
        api, db, "SELECT name, score FROM bm25_search('default.public.cards', 'text', 'apple', 10)"
    )
    assert [r[0] for r in unsorted.rows] == ["r0", "r1", "r3"]
    scores = [r[1] for r in unsorted.rows]
    assert scores != sorted(scores, reverse=True)
    ranked = query(
        api,
        db,
        "SELECT name FROM bm25_search('default.public.cards', 'text', "
        "'apple', 10) ORDER BY score DESC, name ASC",
    )
    assert [r[0] for r in ranked.rows][0] == "r3"


def test_bm25_without_k_caps_silently_at_1000_rows(fake_hotdata, api):
    db = create_database(api)
    n = 1200
    load(api, db, pa.table({"name": [f"c{i:04d}" for i in range(n)], "text": ["common word"] * n}))
    create_index(api, db, name="b", index_type="bm25", columns=["text"])
    fake_hotdata.run_jobs()
    unbounded = query(
        api, db, "SELECT name FROM bm25_search('default.public.cards', 'text', 'common')"
    )
    bounded = query(
        api, db, f"SELECT name FROM bm25_search('default.public.cards', 'text', 'common', {n})"
    )
    assert len(unbounded.rows) == 1000
    assert unbounded.warning is None and not unbounded.truncated
    assert len(bounded.rows) == n
    assert fake_hotdata.query_log[-2].bm25_calls[0]["k_explicit"] is False


# -- queries ---------------------------------------------------------------------------------


def test_declared_table_without_data_rejects_queries(api):
    db = create_database(api)
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, db, "SELECT name FROM default.public.cards")
    assert error_body(caught.value)["error"]["message"] == (
        "Managed table 'default.public.cards' is declared but has no data; "
        "POST a load before querying"
    )


def test_identifiers_are_lowercased_when_stored(api):
    db = create_database(api, table="Drivers", key=["driverId"])
    load(api, db, pa.table({"driverId": [1, 2], "FullName": ["Ada", "Bo"]}), name="Drivers")
    info = hotdata.InformationSchemaApi(api).information_schema(
        connection_id=db.default_connection_id, include_columns=True
    )
    (table,) = info.tables
    assert table.table == "drivers"
    assert [c.name for c in table.columns] == ["driverid", "fullname"]
    ok = query(
        api, db, 'SELECT r.driverId, r."fullname" FROM default.public.drivers r ORDER BY r.driverId'
    )
    assert ok.columns == ["driverid", "fullname"] and ok.rows == [[1, "Ada"], [2, "Bo"]]
    # Quoting to impose a case the store does not have fails with a bare 400, no body.
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, db, 'SELECT r."driverId" FROM default.public.drivers r')
    assert caught.value.status == 400 and not caught.value.body


def test_unscoped_query_is_refused(fake_hotdata, api, loaded):
    queries = hotdata.QueryApi(api)
    with pytest.raises(hotdata.ApiException) as caught:
        queries.query(m.QueryRequest(sql="SELECT 1"))
    assert caught.value.status == 400
    assert error_body(caught.value)["error"]["message"] == (
        "a database is required: set the X-Database-Id header or the database_id body field"
    )
    with pytest.raises(hotdata.ApiException) as caught:
        queries.query(
            m.QueryRequest(sql="SELECT 1", database_id="db_other"), x_database_id=loaded.id
        )
    assert caught.value.status == 400
    body_scoped = queries.query(
        m.QueryRequest(sql="SELECT COUNT(name) FROM cards", database_id=loaded.id)
    )
    assert body_scoped.rows == [[40]]


# -- loads and index builds ------------------------------------------------------------------


def _mixed_upsert(api, db):
    """Rewrite two existing ids and add one new one in a single load."""
    base = cards_table()
    rewritten = base.slice(0, 2)
    new = cards_table(n=41).slice(40, 1)
    batch = pa.concat_tables([rewritten, new])
    return load(api, db, batch, mode="upsert", key=["name"])


def test_vector_build_right_after_a_mixed_upsert_fails_on_the_job_record(fake_hotdata, api, loaded):
    receipt = _mixed_upsert(api, loaded)
    assert receipt.row_count == 41
    job = create_index(
        api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine"
    )
    assert isinstance(job, m.SubmitJobResponse) and job.status.value == "pending"
    record = finish(fake_hotdata, api, job.id)
    assert record.status.value == "failed"
    assert record.error_message == "could not detect dimension for 'embedding'"
    assert _index_names(api, loaded) == []
    # A load that is not a mixed upsert (here: a pure rewrite) clears the condition.
    load(api, loaded, cards_table().slice(0, 3), mode="upsert", key=["name"])
    job = create_index(
        api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine"
    )
    assert finish(fake_hotdata, api, job.id).status.value == "succeeded"


def test_a_pure_upsert_rewrite_and_a_pure_insert_are_not_mixed(fake_hotdata, api, loaded):
    load(api, loaded, cards_table().slice(0, 5), mode="upsert", key=["name"])
    load(api, loaded, cards_table(n=45).slice(40, 5), mode="upsert", key=["name"])
    job = create_index(
        api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine"
    )
    assert finish(fake_hotdata, api, job.id).status.value == "succeeded"


def test_load_while_another_load_runs_gets_resource_locked(fake_hotdata, api, loaded):
    first = load(api, loaded, cards_table(), var_async=True)
    assert isinstance(first, m.SubmitJobResponse)
    with pytest.raises(hotdata.ApiException) as caught:
        load(api, loaded, cards_table())
    assert caught.value.status == 409
    assert error_body(caught.value)["error"]["code"] == "RESOURCE_LOCKED"
    assert caught.value.headers["Retry-After"] == "1"
    # The SDK's own lock-retrying client gives up the same way once its budget is spent.
    policy = hotdata.LoadRetryPolicy(max_retries=0)
    with pytest.raises(hotdata.TableLockedError):
        hotdata.DatabasesApi(api, load_retry=policy).load_database_table(
            loaded.id,
            "public",
            "cards",
            m.LoadManagedTableRequest(mode="replace", data="name\nx\n"),
        )
    assert finish(fake_hotdata, api, first.id).status.value == "succeeded"
    assert load(api, loaded, cards_table()).row_count == 40


def test_keyed_upsert_replaces_and_inserts(api, loaded):
    changed = cards_table().slice(0, 1).set_column(2, "text", pa.array(["rewritten text"]))
    receipt = load(api, loaded, changed, mode="upsert", key=["name"])
    assert receipt.row_count == 40
    rows = query(api, loaded, "SELECT text FROM default.public.cards WHERE name = 'card-00'")
    assert rows.rows == [["rewritten text"]]
    with pytest.raises(hotdata.ApiException) as caught:
        load(api, loaded, changed, mode="upsert", name="keyless_new")
    assert "needs a key" in error_body(caught.value)["error"]["message"]


# -- which path serves a vector query --------------------------------------------------------


@pytest.fixture
def indexed(fake_hotdata, api, loaded):
    create_index(api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine")
    fake_hotdata.run_jobs()
    return loaded


def _served(fake_hotdata, api, db, sql):
    query(api, db, sql)
    return fake_hotdata.query_log[-1].served_by


def test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan(fake_hotdata, api, indexed):
    vec = vector_literal(cards_table().column("embedding")[3].as_py())
    dist = f"cosine_distance(embedding, {vec})"
    served = (
        f"SELECT name, {dist} AS dist FROM default.public.cards ORDER BY dist ASC, name ASC LIMIT 5"
    )
    assert _served(fake_hotdata, api, indexed, served) == "vector_index"
    scans = {
        "two-part name": served.replace("default.public.cards", "public.cards"),
        "vector projected": served.replace("SELECT name,", "SELECT name, embedding,"),
        "metric mismatch": served.replace("cosine_distance", "l2_distance"),
        "no limit": served.replace(" LIMIT 5", ""),
        "descending": served.replace("dist ASC", "dist DESC"),
    }
    for label, sql in scans.items():
        assert _served(fake_hotdata, api, indexed, sql) == "scan", label
    filtered = served.replace("ORDER BY", "WHERE name <> 'card-03' ORDER BY")
    assert _served(fake_hotdata, api, indexed, filtered) == "vector_index"
    assert fake_hotdata.query_log[-1].vector_lookups[0]["filtered"] is True


def test_vector_shape_without_an_index_is_a_scan_with_the_same_rows(fake_hotdata, api, loaded):
    vec = vector_literal(cards_table().column("embedding")[3].as_py())
    sql = (
        f"SELECT name, cosine_distance(embedding, {vec}) AS dist FROM default.public.cards "
        "ORDER BY dist ASC, name ASC LIMIT 5"
    )
    before = query(api, loaded, sql).rows
    assert fake_hotdata.query_log[-1].served_by == "scan"
    create_index(api, loaded, name="v", index_type="vector", columns=["embedding"], metric="cosine")
    fake_hotdata.run_jobs()
    after = query(api, loaded, sql).rows
    assert fake_hotdata.query_log[-1].served_by == "vector_index"
    assert [r[0] for r in after] == [r[0] for r in before]
    assert before[0][0] == "card-03"


def test_list_float32_column_is_reported_as_such(api, loaded):
    info = hotdata.InformationSchemaApi(api).information_schema(
        connection_id=loaded.default_connection_id, table="cards", include_columns=True
    )
    types = {c.name: c.data_type for c in info.tables[0].columns}
    assert types["embedding"] == "List(Float32)"
    assert cards_table().schema.field("embedding").type == VECTOR


def test_bm25_with_no_matching_row_returns_no_rows(fake_hotdata, api, loaded):
    create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    fake_hotdata.run_jobs()
    empty = query(
        api,
        loaded,
        "SELECT name, score FROM bm25_search('default.public.cards', 'text', 'xyzzyplugh', 10) "
        "ORDER BY score DESC, name ASC",
    )
    assert empty.rows == [] and empty.columns == ["name", "score"]


# -- loads, continued ------------------------------------------------------------------------


def test_an_upload_serves_one_load_and_a_second_use_is_a_409(api, loaded):
    from tests.fake_hotdata.testing import upload

    upload_id = upload(api, cards_table(n=3))
    generated = hotdata.api.databases_api.DatabasesApi(api)
    request = m.LoadManagedTableRequest(mode="replace", upload_id=upload_id)
    assert generated.load_database_table(loaded.id, "public", "cards", request).row_count == 3
    with pytest.raises(hotdata.ApiException) as caught:
        generated.load_database_table(loaded.id, "public", "cards", request)
    assert caught.value.status == 409
    assert "already loaded" in error_body(caught.value)["error"]["message"]
    assert len(query(api, loaded, "SELECT name FROM default.public.cards").rows) == 3


def test_an_append_with_a_column_the_table_lacks_adds_it(api, loaded):
    extra = pa.table({**{c: cards_table(n=2).column(c) for c in cards_table(n=2).column_names},
                      "rating": pa.array([4, 5], pa.int64())})
    extra = extra.set_column(0, "name", pa.array(["new-0", "new-1"]))
    load(api, loaded, extra, mode="append")
    got = query(api, loaded, "SELECT name, rating FROM default.public.cards "
                "ORDER BY rating ASC NULLS FIRST, name ASC")
    assert len(got.rows) == 42
    assert got.rows[0] == ["card-00", None] and got.rows[-2:] == [["new-0", 4], ["new-1", 5]]
    # Every other mode still refuses a column the table lacks.
    with pytest.raises(hotdata.ApiException) as caught:
        load(api, loaded, extra.drop_columns(["rating"]).append_column(
            "stars", pa.array([1, 2])), mode="upsert")
    assert "columns not in the table: stars" in error_body(caught.value)["error"]["message"]


def test_bm25_search_on_a_declared_empty_table_says_it_has_no_data(api):
    db = create_database(api)
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, db, "SELECT name, score FROM bm25_search('default.public.cards', 'text', "
              "'owl', 5)")
    assert error_body(caught.value)["error"]["message"] == (
        "Managed table 'default.public.cards' is declared but has no data; "
        "POST a load before querying"
    )


def test_the_database_record_does_not_settle_the_catalog(api):
    """A database whose tables answer to `f1` (as an attached source's do) still reports
    default_catalog `default`; information_schema.tables is the only authority."""
    decl = m.DatabaseDefaultTableDecl(name="cards", key=["name"])
    db = hotdata.DatabasesApi(api).create_database(m.CreateDatabaseRequest(
        name="f1db", default_catalog="f1",
        schemas=[m.DatabaseDefaultSchemaDecl(name="public", tables=[decl])]))
    assert db.default_catalog == "default"
    assert hotdata.DatabasesApi(api).get_database(db.id).default_catalog == "default"
    load(api, db, cards_table(n=3))
    listed = query(api, db, "SELECT table_catalog FROM information_schema.tables "
                   "WHERE table_schema = 'public' AND table_name = 'cards'")
    assert listed.rows == [["f1"]]
    assert len(query(api, db, "SELECT name FROM f1.public.cards").rows) == 3
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, db, "SELECT name FROM default.public.cards")
    assert "not found" in error_body(caught.value)["error"]["message"].lower()
