"""The MCP `status` tool's engine part against the fake Hotdata server: one call's
answer (the table's indexes), or why there is none, worded as the engine commands."""

from __future__ import annotations

import shutil

import pytest

from hqltui.cli import main as cli_main
from hqltui.core import agent
from hqltui.core.session import Session
from tests.helpers.engine_vaults import BIRDS, add_engine, birds_queries, fresh_index

pytest_plugins = ["tests.fake_hotdata.fixtures"]


@pytest.fixture
def vault(tmp_path, fake_hotdata, monkeypatch):
    from tests.fake_hotdata.testing import api_client, create_database

    fake_hotdata.set_job_mode("immediate")
    with api_client(fake_hotdata) as api:
        db = create_database(api)
    root = tmp_path / "birds"
    shutil.copytree(BIRDS, root)
    fresh_index(root, birds_queries())
    add_engine(root, db.id)
    monkeypatch.setenv("HOTDATA_API_KEY", fake_hotdata.api_key)
    monkeypatch.setenv("HOTDATA_WORKSPACE", fake_hotdata.workspace_id)
    monkeypatch.setenv("HOTDATA_API_URL", fake_hotdata.url)
    return root


def test_status_lists_the_engine_indexes_after_a_build(vault, tmp_path) -> None:
    assert cli_main(["engine", "sync", str(vault)]) == 0
    assert cli_main(["engine", "build", str(vault)]) == 0
    found = agent.engine_status(Session.load(vault, cache_dir=tmp_path / "cache"))
    assert found is not None and found["state"] == "ok"
    assert sorted(i["type"] for i in found["indexes"]) == ["bm25", "vector"]
    assert all(i["status"] == "ready" for i in found["indexes"])


def test_status_says_why_the_engine_cannot_answer(vault, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HOTDATA_WORKSPACE")
    found = agent.engine_status(Session.load(vault, cache_dir=tmp_path / "cache"))
    assert found is not None and found["state"] == "refused"
    assert "HOTDATA_WORKSPACE" in found["message"] and "export HOTDATA_WORKSPACE" in found["fix"]


def test_no_engine_table_no_engine_status(tmp_path) -> None:
    root = tmp_path / "plain"
    shutil.copytree(BIRDS, root)
    assert agent.engine_status(Session.load(root, cache_dir=tmp_path / "cache")) is None
