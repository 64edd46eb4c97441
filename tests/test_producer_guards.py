"""The producer never destroys what is not an index, and never shows a traceback."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.helpers.vaults import copy_vault

REPO = Path(__file__).resolve().parent.parent
BIRDS = REPO / "fixtures" / "birds"


def producer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "producer", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_build_refuses_to_overwrite_a_file_that_is_not_an_index(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my precious notes\n")
    result = producer("build", "--vault", "fixtures/mini", "--out", str(notes), "--offline")
    assert result.returncode == 1
    assert "is not an SQLite index; refusing to overwrite it" in result.stderr
    assert notes.read_text() == "my precious notes\n"
    assert "Traceback" not in result.stderr


def test_a_vector_that_is_not_a_blob_is_one_clear_line(tmp_path):
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    index = vault / ".hql" / "index.sqlite"
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE card SET embedding = 42 WHERE name = 'alcidae'")
    for args in (("verify", "--vault", str(vault), "--index", str(index)),
                 ("inspect", "--index", str(index))):
        result = producer(*args)
        assert result.returncode == 1, result.stdout
        assert "`alcidae` holds no vector blob (found an integer)" in result.stderr
        assert "Traceback" not in result.stderr
