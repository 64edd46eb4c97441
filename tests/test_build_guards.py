"""A build never silently rebuilds an index from scratch, and never drops a stored
query without a line naming it (issue: bad input, round two)."""

from __future__ import annotations

import sqlite3

import pytest

from producer.build import BuildError
from producer.index_reader import read_index
from tests.helpers.builds import Counting, make_vault, run
from tests.helpers.indexed_vaults import locked


@pytest.fixture
def vault(tmp_path):
    return make_vault(tmp_path / "v")


def _built(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, queries=["alpha", "beta"])
    return out


def test_a_locked_index_is_refused_after_the_wait_naming_the_holder(vault, tmp_path):
    out = _built(vault, tmp_path)
    before = out.read_bytes()
    with locked(out) as holder:
        c = Counting()
        with pytest.raises(BuildError) as caught:
            run(vault, out, c, full=True)
        message = str(caught.value)
        assert "is locked by another process (database is locked; waited 5 s" in message
        assert f"pid {holder.pid} (" in message
        assert c.texts == [] and caught.value.fix
    assert out.read_bytes() == before


@pytest.mark.parametrize("full", [False, True])
def test_a_newer_schema_is_refused_even_with_full(vault, tmp_path, full):
    out = _built(vault, tmp_path)
    with sqlite3.connect(out) as conn:
        conn.execute("UPDATE index_meta SET schema_version = 2")
    before = out.read_bytes()
    with pytest.raises(BuildError, match="written by a newer hql-semantics.*even with --full"):
        run(vault, out, full=full)
    assert out.read_bytes() == before


def test_a_file_that_is_not_sqlite_is_never_overwritten_and_the_fix_moves_it_aside(
    vault, tmp_path
):
    out = tmp_path / "i.sqlite"
    out.write_text("my precious notes\n")
    with pytest.raises(BuildError, match="not an SQLite index; refusing to overwrite it, even"
                       ) as caught:
        run(vault, out, full=True)
    assert f"mv {out} {out}.unreadable-" in caught.value.fix
    assert out.read_text() == "my precious notes\n"


def _break_model_table(out):
    with sqlite3.connect(out) as conn:
        conn.execute("DROP TABLE model")


def test_an_unreadable_index_is_refused_without_full_naming_its_queries(vault, tmp_path):
    out = _built(vault, tmp_path)
    _break_model_table(out)
    before = out.read_bytes()
    with pytest.raises(BuildError) as caught:
        run(vault, out)
    assert "refusing to rebuild it from scratch (its stored queries: 'alpha', 'beta')" in str(
        caught.value
    )
    assert "--full" in caught.value.fix
    assert out.read_bytes() == before


def test_full_rebuilds_an_unreadable_index_printing_and_keeping_its_queries(vault, tmp_path):
    out = _built(vault, tmp_path)
    _break_model_table(out)
    result = run(vault, out, full=True)
    warnings = [e["message"] for e in result.events if e["event"] == "warning"]
    assert any("rebuilding it from scratch (--full); stored queries kept: 'alpha', 'beta'" in w
               for w in warnings)
    assert [q.text for q in read_index(out).queries] == ["alpha", "beta"]


def test_drop_queries_names_what_it_drops(vault, tmp_path):
    out = _built(vault, tmp_path)
    result = run(vault, out, queries=["beta"], drop_queries=True)
    warnings = [e["message"] for e in result.events if e["event"] == "warning"]
    assert warnings == ["--drop-queries: dropping 1 stored query: 'alpha'"]


def test_a_name_with_two_rows_is_embedded_afresh(vault, tmp_path):
    out = _built(vault, tmp_path)
    with sqlite3.connect(out) as conn:
        conn.executescript(
            "CREATE TABLE c2 AS SELECT * FROM card; DROP TABLE card; "
            "ALTER TABLE c2 RENAME TO card; INSERT INTO card SELECT * FROM card "
            "WHERE name = 'card0';"
        )
    c = Counting()
    result = run(vault, out, c)
    assert result.embedded == 1 and len(c.texts) == 1 and c.texts[0].startswith("Card 0")
    assert [card.name for card in read_index(out).cards].count("card0") == 1
