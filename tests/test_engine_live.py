"""The engine scenario against a real Hotdata workspace -- opt-in.

Runs only when HOTDATA_API_KEY and HOTDATA_WORKSPACE are set (and HOTDATA_API_URL if
not the SDK default). It creates a throwaway database (expiring in 24 h), runs sync,
build, verify and search on a copy of fixtures/birds, checks the hybrid SQL against
the client-side RRF over the engine's own arms, and deletes the database.
"""

from __future__ import annotations

import os

import pytest

from hqltui.core.engine import (
    LocalCards,
    Options,
    build,
    client_fusion,
    search,
    settings_or_refuse,
    sync,
    verify,
)
from hqltui.core.semantic import embed_local
from tests.helpers.engine_vaults import birds_queries, copy_engine_birds

LIVE = bool(os.environ.get("HOTDATA_API_KEY")) and bool(os.environ.get("HOTDATA_WORKSPACE"))

pytestmark = pytest.mark.skipif(
    not LIVE, reason="live Hotdata test: set HOTDATA_API_KEY and HOTDATA_WORKSPACE to run it"
)


@pytest.fixture
def live_database():
    import hotdata
    from hotdata import models as m

    config = hotdata.Configuration(
        api_key=os.environ["HOTDATA_API_KEY"], workspace_id=os.environ["HOTDATA_WORKSPACE"],
        host=os.environ.get("HOTDATA_API_URL") or None,
    )
    with hotdata.ApiClient(config) as api:
        dbs = hotdata.api.databases_api.DatabasesApi(api)
        created = dbs.create_database(m.CreateDatabaseRequest(
            name="hql-tui-live-test", expires_at="24h",
            schemas=[m.DatabaseDefaultSchemaDecl(name="public", tables=[
                m.DatabaseDefaultTableDecl(name="cards", key=["name"])])],
        ))
        try:
            yield created.id
        finally:
            dbs.delete_database(created.id)


def test_live_sync_build_verify_search(tmp_path, live_database):
    root = copy_engine_birds(tmp_path / "birds", live_database)
    local = LocalCards.load(root, embed=embed_local)
    settings = settings_or_refuse(local)
    options = Options(poll_interval=2.0)
    sync(local, settings, options)
    build(settings, options)
    assert build(settings, options).up_to_date
    report = verify(local, settings, options)
    assert report.clean, report.problems
    s = local.config.search
    for text in birds_queries():
        answer = search(local, settings, text, limit=s.window, options=options)
        mine = client_fusion(answer.bm25, answer.semantic, k=s.rrf_k,
                             weights={"bm25": s.weights.lexical, "semantic": s.weights.semantic},
                             window=s.window, limit=s.window)
        assert answer.hybrid.names() == mine.names(), text
