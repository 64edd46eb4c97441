"""Job stepping and fault injection, observed through the real SDK."""

from __future__ import annotations

import time

import hotdata
import pytest
from hotdata import models as m
from hotdata.query import RetryPolicy
from urllib3.exceptions import MaxRetryError, ProtocolError

from tests.fake_hotdata.testing import (
    api_client,
    cards_table,
    create_database,
    create_index,
    error_body,
    finish,
    load,
)

pytest_plugins = ["tests.fake_hotdata.fixtures"]


@pytest.fixture
def loaded(api):
    db = create_database(api)
    load(api, db, cards_table())
    return db


def _count(api, db):
    return (
        hotdata.QueryApi(api)
        .query(m.QueryRequest(sql="SELECT COUNT(name) FROM cards"), x_database_id=db.id)
        .rows[0][0]
    )


# -- jobs ------------------------------------------------------------------------------------


def test_jobs_step_pending_running_succeeded_under_test_control(fake_hotdata, api, loaded):
    jobs = hotdata.JobsApi(api)
    job = create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    seen = [jobs.get_job(job.id)]
    fake_hotdata.advance_jobs()
    seen.append(jobs.get_job(job.id))
    seen.append(jobs.get_job(job.id))  # polling alone does not move a job in manual mode
    fake_hotdata.advance_jobs()
    seen.append(jobs.get_job(job.id))
    assert [j.status.value for j in seen] == ["pending", "running", "running", "succeeded"]
    assert [j.attempts for j in seen] == [0, 1, 1, 1]
    assert seen[0].completed_at is None and seen[0].result is None
    done = seen[-1]
    assert done.completed_at >= done.created_at
    assert done.job_type.value == "create_index" and done.error_message is None
    assert done.result.actual_instance.status.value == "ready"
    listed = jobs.list_jobs(job_type=m.JobType.CREATE_INDEX, status="succeeded")
    assert [j.id for j in listed.jobs] == [job.id]


def test_async_load_job_carries_the_load_receipt(fake_hotdata, api, loaded):
    job = load(api, loaded, cards_table(n=12), var_async=True)
    assert _count(api, loaded) == 40  # not applied until the job runs
    record = finish(fake_hotdata, api, job.id)
    assert record.job_type.value == "managed_load"
    assert record.result.actual_instance.row_count == 12
    assert _count(api, loaded) == 12


def test_poll_mode_steps_a_job_on_each_read(fake_hotdata, api, loaded):
    fake_hotdata.set_job_mode("poll")
    job = create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    jobs = hotdata.JobsApi(api)
    assert [jobs.get_job(job.id).status.value for _ in range(3)] == [
        "running",
        "succeeded",
        "succeeded",
    ]


def test_timed_mode_finishes_jobs_after_a_delay(fake_hotdata, api, loaded):
    fake_hotdata.set_job_mode("timed", step_seconds=0.05)
    job = create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    jobs = hotdata.JobsApi(api)
    deadline = time.monotonic() + 5
    while jobs.get_job(job.id).status.value != "succeeded":
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_immediate_mode_with_async_after_ms_answers_inline(fake_hotdata, api, loaded):
    fake_hotdata.set_job_mode("immediate")
    created = hotdata.IndexesApi(api).create_index(
        loaded.default_connection_id,
        "public",
        "cards",
        m.CreateIndexRequest(
            index_name="b", index_type="bm25", columns=["text"], var_async=True, async_after_ms=1000
        ),
    )
    assert isinstance(created, m.IndexInfoResponse) and created.status.value == "ready"


def test_injected_job_failure_carries_its_message(fake_hotdata, api, loaded):
    fake_hotdata.inject_job_fault("create_index", message="out of memory building index")
    job = create_index(api, loaded, name="b", index_type="bm25", columns=["text"])
    record = finish(fake_hotdata, api, job.id)
    assert record.status.value == "failed"
    assert record.error_message == "out of memory building index"
    assert record.result is None
    listed = hotdata.IndexesApi(api).list_indexes(loaded.default_connection_id, "public", "cards")
    assert listed.indexes == []


def test_injected_partial_success_on_a_load(fake_hotdata, api, loaded):
    fake_hotdata.inject_job_fault(
        "managed_load", status="partially_succeeded", message="3 rows rejected"
    )
    job = load(api, loaded, cards_table(n=10), var_async=True)
    record = finish(fake_hotdata, api, job.id)
    assert record.status.value == "partially_succeeded"
    assert record.error_message == "3 rows rejected"
    assert record.completed_at is not None


# -- HTTP faults -----------------------------------------------------------------------------


def test_injected_409_carries_retry_after_and_the_sdk_load_retry_honours_it(
    fake_hotdata, api, loaded
):
    fault = fake_hotdata.inject_fault(
        "POST",
        "/v1/databases/*/loads",
        status=409,
        code="RESOURCE_LOCKED",
        retry_after=0.01,
        times=2,
    )
    request = m.LoadManagedTableRequest(mode="replace", data="name,text\na,b\n")
    generated = hotdata.api.databases_api.DatabasesApi(api)
    with pytest.raises(hotdata.ApiException) as caught:
        generated.load_database_table(loaded.id, "public", "cards", request)
    assert caught.value.status == 409 and caught.value.headers["Retry-After"] == "0.01"
    receipt = hotdata.DatabasesApi(api).load_database_table(loaded.id, "public", "cards", request)
    assert receipt.row_count == 1
    assert fault.hits == 2


def test_injected_429_is_retried_by_the_sdk_query_client(fake_hotdata, api, loaded):
    fault = fake_hotdata.inject_fault("POST", "/v1/query", status=429, retry_after=0.01, times=2)
    queries = hotdata.QueryApi(api, retry=RetryPolicy(max_retries=3))
    assert queries.query(m.QueryRequest(sql="SELECT 1 AS one"), x_database_id=loaded.id).rows == [
        [1]
    ]
    assert fault.hits == 2
    fake_hotdata.inject_fault("POST", "/v1/query", status=429, retry_after=0.01, times=5)
    with pytest.raises(hotdata.ApiException) as caught:
        hotdata.QueryApi(api, retry=RetryPolicy(max_retries=1)).query(
            m.QueryRequest(sql="SELECT 1"), x_database_id=loaded.id
        )
    assert caught.value.status == 429


def test_injected_500_carries_its_message(fake_hotdata, api):
    fake_hotdata.inject_fault(
        "POST", "/v1/databases", status=500, message="catalog store unavailable"
    )
    with pytest.raises(hotdata.ApiException) as caught:
        create_database(api)
    assert caught.value.status == 500
    assert error_body(caught.value) == {
        "error": {"code": "INTERNAL", "message": "catalog store unavailable"}
    }
    assert hotdata.DatabasesApi(api).list_databases().databases == []


def _databases(api):
    return hotdata.DatabasesApi(api).list_databases().databases


def test_dropped_connection_after_a_create_with_sdk_default_retries_creates_twice(
    fake_hotdata, api
):
    # The SDK resends a POST whose connection closed before any reply.  When the server had
    # already acted, that second send is a second database: the hazard a client must avoid.
    fake_hotdata.inject_fault("POST", "/v1/databases", drop="after")
    create_database(api)
    assert len(_databases(api)) == 2


def test_dropped_connection_after_a_create_without_retries(fake_hotdata):
    with api_client(fake_hotdata, retries=False) as api:
        fake_hotdata.inject_fault("POST", "/v1/databases", drop="after")
        with pytest.raises((ProtocolError, MaxRetryError, hotdata.ApiException, OSError)):
            create_database(api)
        # The create happened; re-reading server state finds it.
        assert [d.name for d in _databases(api)] == ["cards"]


def test_dropped_connection_before_a_create_applies_nothing(fake_hotdata):
    with api_client(fake_hotdata, retries=False) as api:
        fake_hotdata.inject_fault("POST", "/v1/databases", drop="before")
        with pytest.raises((ProtocolError, MaxRetryError, hotdata.ApiException, OSError)):
            create_database(api)
        assert _databases(api) == []


def test_dropped_connection_on_a_load(fake_hotdata, loaded):
    with api_client(fake_hotdata, retries=False) as api:
        fake_hotdata.inject_fault("POST", "/v1/databases/*/loads", drop="after")
        with pytest.raises((ProtocolError, MaxRetryError, hotdata.ApiException, OSError)):
            load(api, loaded, cards_table(n=5))
        assert _count(api, loaded) == 5  # applied once, reply lost
        fake_hotdata.inject_fault("POST", "/v1/databases/*/loads", drop="before")
        with pytest.raises((ProtocolError, MaxRetryError, hotdata.ApiException, OSError)):
            load(api, loaded, cards_table(n=7))
        assert _count(api, loaded) == 5  # never applied
    assert (
        "POST",
        f"/v1/databases/{loaded.id}/schemas/public/tables/cards/loads",
    ) in fake_hotdata.requests


def test_fault_only_hits_matching_requests_and_expires(fake_hotdata, api):
    fake_hotdata.inject_fault("GET", "/v1/jobs/*", status=503)
    create_database(api)  # a POST elsewhere is untouched
    with pytest.raises(hotdata.ApiException) as caught:
        hotdata.JobsApi(api).get_job("job_x")
    assert caught.value.status == 503
    with pytest.raises(hotdata.ApiException) as caught:
        hotdata.JobsApi(api).get_job("job_x")
    assert caught.value.status == 404  # the fault was used up
