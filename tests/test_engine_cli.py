"""`hql-tui engine ...` against the fake Hotdata server: exit codes, output, no tracebacks."""

from __future__ import annotations

import json

import pytest

from hqltui.cli import main as cli_main
from tests.helpers.engine_vaults import birds_queries

pytest_plugins = ["tests.helpers.engine_fixtures"]


def engine(*args: str) -> int:
    return cli_main(["engine", *args])


def test_sync_build_verify_search_exit_zero_and_print(engine_cli_vault, capsys):
    assert engine("sync", str(engine_cli_vault)) == 0
    out, err = capsys.readouterr()
    assert out.startswith("synced default.public.cards") and "rows written" in err
    assert engine("build", str(engine_cli_vault)) == 0
    assert "created" in capsys.readouterr().out
    assert engine("build", str(engine_cli_vault)) == 0
    assert capsys.readouterr().out.startswith("up to date")
    assert engine("verify", str(engine_cli_vault), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["clean"] and report["counts"] == {"stale": 0, "missing": 0, "orphan": 0}
    query = birds_queries()[0]
    assert engine("search", str(engine_cli_vault), query, "--json", "--limit", "5") == 0
    answer = json.loads(capsys.readouterr().out)
    assert set(answer) == {"query", "bm25", "semantic", "hybrid", "statements"}
    assert answer["semantic"]["retrieval"]["approximate"] is True
    assert len(answer["hybrid"]["hits"]) == 5 and "arms" in answer["hybrid"]["hits"][0]
    assert engine("search", str(engine_cli_vault), query, "--mode", "semantic", "--exact") == 0
    assert "engine semantic (exact;" in capsys.readouterr().out


def test_verify_lists_every_problem_and_exits_one(engine_cli_vault, capsys):
    assert engine("sync", str(engine_cli_vault), "--quiet") == 0
    card = engine_cli_vault / "barn-owl.hmd"
    card.write_text(card.read_text() + "\nEdited.\n")
    (engine_cli_vault / "dodo-member-of-raphinae.hmd").unlink()
    capsys.readouterr()
    assert engine("verify", str(engine_cli_vault)) == 1
    out = capsys.readouterr().out
    for kind in ("engine-stale", "engine-orphan", "index-missing"):
        assert kind in out
    assert "barn-owl" in out and "dodo-member-of-raphinae" in out


def test_refusals_exit_one_with_one_clear_line_and_no_secret(engine_cli_vault, capsys, monkeypatch):
    monkeypatch.delenv("HOTDATA_WORKSPACE")
    assert engine("sync", str(engine_cli_vault)) == 1
    err = capsys.readouterr().err
    assert "HOTDATA_WORKSPACE is not set" in err and "Traceback" not in err
    monkeypatch.setenv("HOTDATA_WORKSPACE", "ws")
    monkeypatch.delenv("HOTDATA_API_KEY")
    assert engine("build", str(engine_cli_vault), "--json") == 1
    out = capsys.readouterr().out
    assert json.loads(out)["outcome"] == "refused"


def test_literal_key_refused_without_echo(tmp_path, capsys):
    key = "pretend" + "_key_zzz"  # not a credential: a value that must never echo
    (tmp_path / "hql.toml").write_text(f'[engine]\ndatabase = "db"\napi_key = "{key}"\n')
    assert engine("verify", str(tmp_path)) == 1
    captured = capsys.readouterr()
    assert "api_key_env" in captured.err and key not in captured.err + captured.out


def test_engine_failure_exits_one_with_the_engines_message(engine_cli_vault, capsys, fake_hotdata):
    assert engine("sync", str(engine_cli_vault), "--quiet") == 0
    fake_hotdata.inject_job_fault("create_index", message="no space left on index volume")
    assert engine("build", str(engine_cli_vault)) == 1
    err = capsys.readouterr().err
    assert "no space left on index volume" in err and "Traceback" not in err


def test_usage_errors_exit_two(capsys):
    assert engine() == 2
    assert engine("frobnicate", "x") == 2
    assert engine("search", "x") == 2
    assert engine("search", "x", "q", "--limit", "0") == 2
    assert "usage" in capsys.readouterr().err


def test_missing_vault_is_a_refusal(tmp_path, capsys):
    assert engine("verify", str(tmp_path / "nope")) == 1
    assert "nope: does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "   "])
def test_a_blank_search_is_a_usage_error_in_one_line(tmp_path, capsys, text):
    assert engine("search", str(tmp_path), text) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "hql-tui engine search: error: the query is blank; give the text to rank"]
