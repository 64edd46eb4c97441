"""The MCP `status` tool's engine part against the fake Hotdata server: one call's
answer (the table's indexes), or why there is none, worded as the engine commands."""

from __future__ import annotations

from hqltui.cli import main as cli_main
from hqltui.core import agent
from hqltui.core.session import Session
from tests.helpers.vaults import copy_vault

pytest_plugins = ["tests.helpers.engine_fixtures"]


def test_status_lists_the_engine_indexes_after_a_build(engine_cli_vault, tmp_path) -> None:
    assert cli_main(["engine", "sync", str(engine_cli_vault)]) == 0
    assert cli_main(["engine", "build", str(engine_cli_vault)]) == 0
    found = agent.engine_status(Session.load(engine_cli_vault, cache_dir=tmp_path / "cache"))
    assert found is not None and found["state"] == "ok"
    assert sorted(i["type"] for i in found["indexes"]) == ["bm25", "vector"]
    assert all(i["status"] == "ready" for i in found["indexes"])


def test_status_says_why_the_engine_cannot_answer(engine_cli_vault, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HOTDATA_WORKSPACE")
    found = agent.engine_status(Session.load(engine_cli_vault, cache_dir=tmp_path / "cache"))
    assert found is not None and found["state"] == "refused"
    assert "HOTDATA_WORKSPACE" in found["message"] and "export HOTDATA_WORKSPACE" in found["fix"]


def test_no_engine_table_no_engine_status(tmp_path) -> None:
    root = tmp_path / "plain"
    copy_vault("birds", root)
    assert agent.engine_status(Session.load(root, cache_dir=tmp_path / "cache")) is None
