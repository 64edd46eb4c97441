"""The fake's wire behaviour: auth and scope headers, body validation, error shape, query
runs and results, and the by-hand entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hotdata
import pytest
from hotdata import models as m

from tests.fake_hotdata.testing import (
    api_client,
    cards_table,
    create_database,
    error_body,
    load,
    query,
)

pytest_plugins = ["tests.fake_hotdata.fixtures"]

ROOT = Path(__file__).resolve().parents[1]


def _raw(api, method, path, body=None, headers=None):
    """Send a hand-built request through the SDK's own transport (for malformed bodies)."""
    config = api.configuration
    if headers is None:
        headers = {
            "Authorization": f"Bearer {config.api_key}",
            "X-Workspace-Id": config.workspace_id,
        }
    response = api.call_api(
        method,
        config.host + path,
        header_params={"Content-Type": "application/json", **headers},
        body=body,
    )
    response.read()
    return response.status, response.data


def test_wrong_api_key_is_401_with_an_error_body(fake_hotdata):
    config = hotdata.Configuration(
        host=fake_hotdata.url, api_key="wrong", workspace_id=fake_hotdata.workspace_id
    )
    with hotdata.ApiClient(config) as api, pytest.raises(hotdata.ApiException) as caught:
        hotdata.DatabasesApi(api).list_databases()
    assert caught.value.status == 401
    assert error_body(caught.value)["error"]["code"] == "UNAUTHORIZED"


def test_workspace_header_is_checked(fake_hotdata):
    config = hotdata.Configuration(
        host=fake_hotdata.url, api_key=fake_hotdata.api_key, workspace_id="ws_someone_else"
    )
    with hotdata.ApiClient(config) as api, pytest.raises(hotdata.ApiException) as caught:
        hotdata.DatabasesApi(api).list_databases()
    assert caught.value.status == 404
    with api_client(fake_hotdata) as api:
        status, data = _raw(
            api, "GET", "/v1/databases", headers={"Authorization": f"Bearer {fake_hotdata.api_key}"}
        )
    assert status == 404 and b"X-Workspace-Id" in data


def test_request_bodies_are_validated_with_the_sdk_models(api):
    status, data = _raw(api, "POST", "/v1/databases", body={"name": "x", "bogus": 1})
    assert status == 400
    assert "CreateDatabaseRequest" in json.loads(data)["error"]["message"]
    status, data = _raw(api, "POST", "/v1/query", body={"sql": 5})
    assert status == 400 and json.loads(data)["error"]["code"] == "BAD_REQUEST"


def test_x_database_id_is_required_where_the_contract_requires_it(api):
    status, data = _raw(api, "GET", "/v1/indexes")
    assert status == 400 and b"X-Database-Id" in data
    status, _ = _raw(api, "GET", "/v1/results/rslt_x")
    assert status == 400


def test_unknown_database_and_route(api):
    with pytest.raises(hotdata.exceptions.NotFoundException):
        hotdata.DatabasesApi(api).get_database("db_missing")
    status, data = _raw(api, "GET", "/v1/nothing-here")
    assert status == 404 and json.loads(data)["error"]["code"] == "NOT_FOUND"


def test_engine_errors_come_back_with_the_engine_message(api):
    db = create_database(api)
    load(api, db, cards_table())
    with pytest.raises(hotdata.ApiException) as caught:
        query(api, db, "SELECT to_tsvector(text) FROM cards")
    assert error_body(caught.value)["error"]["message"].startswith("Invalid function 'to_tsvector'")


def test_if_not_exists_returns_the_existing_database(api):
    first = create_database(api, name="vault")
    again = hotdata.DatabasesApi(api).create_database(
        m.CreateDatabaseRequest(name="Vault", if_not_exists=True)
    )
    assert again.id == first.id and again.created is False
    assert first.created is True and first.default_catalog == "default"
    assert first.default_schema == "public"


def test_query_runs_results_and_arrow(fake_hotdata, api):
    db = create_database(api)
    load(api, db, cards_table())
    response = query(api, db, "SELECT name FROM default.public.cards ORDER BY name LIMIT 3")
    run = hotdata.QueryRunsApi(api).get_query_run(response.query_run_id, x_database_id=db.id)
    assert run.status == "succeeded" and run.result_id == response.result_id
    page = hotdata.ResultsApi(api).get_result(
        response.result_id, x_database_id=db.id, offset=1, limit=1
    )
    assert page.rows == [["card-01"]] and page.total_row_count == 3
    table = hotdata.ResultsApi(api).get_result_arrow(response.result_id, db.id)
    assert table.column("name").to_pylist() == ["card-00", "card-01", "card-02"]
    other = create_database(api, name="other")
    with pytest.raises(hotdata.ApiException) as caught:
        hotdata.ResultsApi(api).get_result(response.result_id, x_database_id=other.id)
    assert caught.value.status == 404


def test_async_query_is_polled_through_query_runs(api):
    db = create_database(api)
    load(api, db, cards_table())
    submitted = hotdata.QueryApi(api).query(
        m.QueryRequest(sql="SELECT COUNT(name) AS n FROM cards", var_async=True),
        x_database_id=db.id,
    )
    assert isinstance(submitted, m.AsyncQueryResponse)
    run = hotdata.QueryRunsApi(api).get_query_run(submitted.query_run_id, x_database_id=db.id)
    result = hotdata.ResultsApi(api).get_result(run.result_id, x_database_id=db.id)
    assert result.rows == [[40]]


def test_truncated_preview_is_followed_by_the_sdk(fake_hotdata, api):
    db = create_database(api)
    load(api, db, cards_table())
    fake_hotdata.state.preview_row_limit = 5
    response = query(api, db, "SELECT name FROM cards ORDER BY name")
    assert response.truncated is True
    assert len(response.rows) == 40  # the SDK fetched the full result


def test_load_from_a_result_and_from_inline_csv(api):
    db = create_database(api)
    load(api, db, cards_table())
    picked = query(api, db, "SELECT name, path FROM cards WHERE name < 'card-03'")
    receipt = hotdata.api.databases_api.DatabasesApi(api).load_database_table(
        db.id,
        "public",
        "picked",
        m.LoadManagedTableRequest(mode="replace", result_id=picked.result_id),
    )
    assert receipt.row_count == 3
    inline = hotdata.api.databases_api.DatabasesApi(api).load_database_table(
        db.id,
        "public",
        "notes",
        m.LoadManagedTableRequest(
            mode="replace",
            data="id,body\n1,hello\n2,world\n",
            columns={"id": m.ColumnDefinition("BIGINT")},
        ),
    )
    assert inline.row_count == 2
    assert query(api, db, "SELECT SUM(id) FROM notes").rows == [[3]]


def test_started_by_hand_and_stopped_cleanly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_hotdata", "--port", "0", "--job-step-seconds", "0.05"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert "test stand-in, not the Hotdata engine" in first
        url = first.rsplit(" on ", 1)[1].strip()
        exports = dict(
            line.split("export ", 1)[1].strip().split("=", 1)
            for line in (proc.stdout.readline() for _ in range(3))
        )
        config = hotdata.Configuration(
            host=url, api_key=exports["HOTDATA_API_KEY"], workspace_id=exports["HOTDATA_WORKSPACE"]
        )
        assert exports["HOTDATA_API_URL"] == url
        with hotdata.ApiClient(config) as api:
            assert create_database(api).default_catalog == "default"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
