"""Text output never hands a terminal a control sequence from the vault (issue: bad
input, round two): names, paths, titles and messages show control characters as
``\\xNN``; markup is literal; tables keep one row per card; JSON keeps exact strings."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from producer.terminal import shown
from tests.helpers.vaults import EVIL, hostile_vault

REPO = Path(__file__).resolve().parent.parent
MINI = REPO / "fixtures" / "mini"
TITLE = "[bold red]Boom[/] \x1b[2J"  # as the header below writes it


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return hostile_vault(tmp_path / "v")


def test_shown_escapes_controls_and_keeps_everything_else() -> None:
    assert shown("a\x1b[31mb\tc\nd\x7f\x9b é ✓") == "a\\x1b[31mb\\x09c\\x0ad\\x7f\\x9b é ✓"
    assert shown("right\u202eleft") == "right\\u202eleft"


def test_list_escapes_names_titles_paths_and_warnings(vault: Path) -> None:
    result = run("-m", "hqltui.cli", str(vault), "--list")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out and "\t" not in out
    escaped = shown(EVIL)
    row = next(line for line in out.splitlines() if line.startswith(escaped))
    assert shown(TITLE) in row and f"{escaped}.md" in row  # one row: name, title, path
    assert any(line.startswith(f"  broken{escaped}.md: invalid YAML") for line in out.splitlines())


def test_query_text_escapes_and_json_keeps_exact_strings(vault: Path) -> None:
    text = run("-m", "hqltui.cli", "query", str(vault), "body words", "--mode", "bm25")
    assert "\x1b" not in text.stdout and shown(EVIL) in text.stdout
    as_json = run("-m", "hqltui.cli", "query", str(vault), "body words", "--mode", "bm25",
                  "--json")
    data = json.loads(as_json.stdout)
    assert EVIL in [hit["card"] for hit in data["arms"]["bm25"]["hits"]]
    assert any(EVIL in w["message"] for w in data["warnings"])


def test_producer_warnings_and_verify_problems_are_escaped(vault: Path, tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    shutil.copy(REPO / "fixtures" / "birds" / ".hql" / "index.sqlite", index)
    with sqlite3.connect(index) as conn:
        conn.execute("DROP TABLE model")  # unreadable: the build refuses after the vault load
    env = {**os.environ, "HQL_TEST_KEY": "k"}
    result = subprocess.run(
        [sys.executable, "-m", "producer", "build", "--vault", str(vault), "--out", str(index),
         "--provider", "http", "--model", "m", "--revision", "r",
         "--endpoint", "http://127.0.0.1:9/v1/embeddings", "--api-key-env", "HQL_TEST_KEY"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert result.returncode == 1 and "\x1b" not in result.stderr
    assert f"warning: broken{shown(EVIL)}.md: invalid YAML" in result.stderr
    result = run("-m", "producer", "verify", "--vault", str(vault), "--index",
                 str(REPO / "fixtures" / "birds" / ".hql" / "index.sqlite"))
    assert "\x1b" not in result.stderr + result.stdout
    assert f"`{shown(EVIL)}` is absent from the index" in result.stderr
