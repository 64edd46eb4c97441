"""Messages that lead somewhere (issue: bad input, round two): each names what is wrong
and how to fix it, once, in the user's words; ``--json`` refusals are JSON on stdout."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hqltui.core.config import load_app_config
from hqltui.core.index_reader import open_index
from hqltui.core.ranking import Refusal
from hqltui.core.session import Session
from producer.vault import load_vault

REPO = Path(__file__).resolve().parent.parent
BIRDS = REPO / "fixtures" / "birds"


def run(*args: str, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, **kw)


def test_an_index_that_is_a_directory_says_so(birds: Path) -> None:
    index = birds / ".hql" / "index.sqlite"
    index.unlink()
    index.mkdir()
    refusal = open_index(load_vault(birds), load_app_config(birds))
    assert isinstance(refusal, Refusal)
    assert refusal.message.endswith("/.hql/index.sqlite` is a directory, not an index file")
    listing = run("-m", "hqltui.cli", str(birds), "--list").stdout
    assert "(a directory, not an index file" in listing
    verify = run("-m", "producer", "verify", "--vault", str(birds))
    assert verify.stderr.strip().endswith("index.sqlite: is a directory, not an index file")


def test_an_absolute_index_path_says_absolute_paths_are_refused(tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text('[semantics]\nindex = "/var/i.sqlite"\n')
    message = load_app_config(tmp_path).errors["semantics"]
    assert "is an absolute path, and absolute paths are refused" in message


@pytest.mark.parametrize("command", [("--list",), ("query", "owl")])
def test_a_vault_that_does_not_exist_says_so(tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = str(tmp_path / "nowhere")
    args = (missing, *command) if command[0] == "--list" else (command[0], missing, *command[1:])
    result = run("-m", "hqltui.cli", *args)
    assert result.returncode == 1 and "nowhere: does not exist" in result.stderr


def test_a_malformed_hql_toml_is_reported_once_and_the_fix_names_the_table(birds: Path) -> None:
    (birds / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n[search]\nlimit =\n')
    listing = run("-m", "hqltui.cli", str(birds), "--list").stdout
    assert listing.count("is not valid TOML") == 1
    assert "fix line 4, in the [search] table" in listing
    session = Session.load(birds, cache_dir=birds.parent / "cache")
    assert sum("is not valid TOML" in w.message for w in session.warnings) == 1
    assert session.index_refusal is not None
    assert session.index_refusal.fix == "fix line 4, in the [search] table of hql.toml"


@pytest.mark.parametrize("command", [("query", "owl"), ("eval", "queries.toml")])
def test_a_malformed_hql_toml_refusal_gives_its_fix_once(birds: Path,
                                                        command: tuple[str, ...]) -> None:
    (birds / "hql.toml").write_text("[search\nlimit = 3\n")
    args = (command[0], str(birds), *(str(birds / a) if a.endswith(".toml") else a
                                      for a in command[1:]))
    result = run("-m", "hqltui.cli", *args)
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert line.count("fix line 1") == 1 and line.count("; fix: ") == 1
    assert line.endswith("; fix: fix line 1, in the [search] table of hql.toml")
    built = run("-m", "producer", "build", "--vault", str(birds))
    assert built.stderr.count("fix line 1") == 1


def test_built_at_must_be_iso_8601(tmp_path: Path) -> None:
    result = run("-m", "producer", "build", "--vault", str(BIRDS), "--out",
                 str(tmp_path / "i.sqlite"), "--built-at", "yesterday")
    assert result.returncode == 2
    assert "'yesterday' is not an ISO-8601 time" in result.stderr


def _no_writes() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_a_write_the_disk_refuses_names_the_file(birds: Path, tmp_path: Path) -> None:
    # RLIMIT_FSIZE 0 makes the kernel refuse every write, as a full disk does
    # (EFBIG instead of ENOSPC, through the same code path).
    result = subprocess.run(
        [sys.executable, "-m", "producer", "build", "--vault", str(birds), "--out",
         str(tmp_path / "i.sqlite"), "--offline"],
        capture_output=True, text=True, timeout=120, cwd=REPO, preexec_fn=_no_writes,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert result.returncode == 1
    assert f"{tmp_path / 'i.sqlite.lock'}: cannot write the build lock (File too large)" in (
        result.stderr
    )


def test_verify_prints_no_python_type_names(birds: Path) -> None:
    import sqlite3

    index = birds / ".hql" / "index.sqlite"
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE card SET embedding = 42 WHERE name = 'alcidae'")
    result = run("-m", "producer", "verify", "--vault", str(birds))
    assert "`alcidae` holds no vector blob (found an integer)" in result.stderr
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE index_meta SET schema_version = 'two'")
    result = run("-m", "producer", "verify", "--vault", str(birds))
    assert "unknown index schema: 'two', and this tool knows 1" in result.stderr
    assert not re.search(r"\b(None|int|str|float|bytes|NoneType)\b", result.stderr)


def test_zero_weights_on_both_arms_say_why_hybrid_is_empty(birds: Path) -> None:
    with (birds / "hql.toml").open("a") as fh:
        fh.write("[search]\nweights = {lexical = 0, semantic = 0}\n")
    session = Session.load(birds, cache_dir=birds.parent / "cache")
    hybrid = session.query("Tyto alba").hybrid
    assert not hybrid.hits
    assert any("hybrid is empty because every arm's weight is 0" in w.message
               for w in hybrid.warnings)


def test_json_refusals_are_an_error_object_on_stdout(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    for args in (("-m", "hqltui.cli", "query", missing, "owl", "--json"),
                 ("-m", "producer", "verify", "--vault", missing, "--json"),
                 ("-m", "producer", "inspect", "--index", missing, "--json")):
        result = run(*args)
        assert result.returncode == 1, args
        error = json.loads(result.stdout)["error"]
        assert set(error) == {"message", "fix"} and "nowhere" in error["message"], args


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return "number" if isinstance(value, int | float) and not isinstance(value, bool) else (
        type(value).__name__)


def test_the_documented_json_example_is_what_query_prints() -> None:
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = readme[readme.index("## `hql-tui query VAULT TEXT"):]
    command = re.search(r"`(hql-tui query [^`]+ --json)`", section).group(1)  # type: ignore[union-attr]
    example = json.loads(section[section.index("```json") + 7 : section.index("\n```\n")])
    argv = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)][1:]
    printed = json.loads(run("-m", "hqltui.cli", *argv).stdout)
    assert _shape(example) == _shape(printed)
    assert example["query"] == printed["query"] and example["limit"] == printed["limit"]
