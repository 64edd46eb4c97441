"""The index module: schema 1, packing, atomic writing, the build lock."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from producer import index_format
from producer.index_format import (
    CardRow,
    IndexContents,
    MetaRow,
    ModelRow,
    QueryRow,
    StoreError,
    pack,
    unpack,
)
from producer.index_lock import BuildLock, LockHeld
from producer.index_reader import read_index
from producer.index_writer import leftovers, write_index


def unit(seed: int, d: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(d)
    return (v / np.linalg.norm(v)).astype(np.float32)


def contents(n: int = 3, d: int = 8, built_at: str = "2026-01-01T00:00:00+00:00") -> IndexContents:
    return IndexContents(
        model=ModelRow("m/x", "sha256:abc", d),
        meta=MetaRow(vault="fixtures/v", built_at=built_at),
        cards=[CardRow(f"c{i}", f"c{i}.md", f"{i:064x}", pack(unit(i, d))) for i in range(n)],
        queries=[QueryRow(f"q{i}", pack(unit(100 + i, d))) for i in range(2)],
    )


def test_pack_is_little_endian_float32_and_round_trips():
    assert pack([1.0, -2.0]) == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"
    v = unit(1, 384)
    blob = pack(v)
    assert len(blob) == 384 * 4
    assert np.array_equal(unpack(blob, 384), v)
    with pytest.raises(ValueError, match="1532-byte vector where 1536"):
        unpack(blob[:-4], 384)
    with pytest.raises(ValueError):
        unpack(b"\x00\x00\x00")


def test_constants():
    assert (index_format.SCHEMA_VERSION, index_format.METRIC,
            index_format.MAX_DIMENSIONS) == (1, "cosine", 8192)
    assert index_format.TOOL_VERSION == "hql-semantics 0.1.0"


def test_the_four_tables_exactly(tmp_path):
    out = tmp_path / "i.sqlite"
    write_index(out, contents())
    conn = sqlite3.connect(out)
    tables = {
        name: [(c[1], c[2], c[3], c[5]) for c in conn.execute(f"PRAGMA table_info({name})")]
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    conn.close()
    assert tables == {
        "model": [
            ("id", "TEXT", 0, 1),
            ("revision", "TEXT", 1, 0),
            ("dimensions", "INTEGER", 1, 0),
            ("metric", "TEXT", 1, 0),
            ("normalized", "INTEGER", 1, 0),
        ],
        "index_meta": [
            ("schema_version", "INTEGER", 1, 0),
            ("vault", "TEXT", 1, 0),
            ("built_at", "TEXT", 1, 0),
            ("tool_version", "TEXT", 1, 0),
        ],
        "card": [
            ("name", "TEXT", 0, 1),
            ("path", "TEXT", 1, 0),
            ("content_hash", "TEXT", 1, 0),
            ("embedding", "BLOB", 1, 0),
        ],
        "query": [("text", "TEXT", 0, 1), ("embedding", "BLOB", 1, 0)],
    }


def test_round_trip(tmp_path):
    out = tmp_path / "i.sqlite"
    c = contents()
    write_index(out, c)
    back = read_index(out)
    assert back.model == c.model
    assert back.meta == c.meta
    assert back.cards == c.cards
    assert back.queries == c.queries


def test_same_inputs_same_bytes_whatever_the_order(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    c = contents(50)
    write_index(a, c)
    shuffled = contents(50)
    shuffled.cards.reverse()
    shuffled.queries.reverse()
    write_index(b, shuffled)
    assert a.read_bytes() == b.read_bytes()


def test_refuses_bad_vectors_and_keeps_the_previous_file(tmp_path):
    out = tmp_path / "i.sqlite"
    write_index(out, contents())
    before = out.read_bytes()
    bad = contents()
    bad.cards[1] = CardRow("c1", "c1.md", "0" * 64, pack(unit(1) * 2))
    with pytest.raises(StoreError, match="`c1` has a stored vector that is not finite and unit length"):
        write_index(out, bad)
    short = contents()
    short.queries[0] = QueryRow("q0", pack(unit(1, 7)))
    with pytest.raises(StoreError, match="the stored vector for the query `q0` is 28 bytes where 32 bytes were declared"):
        write_index(out, short)
    assert out.read_bytes() == before
    assert leftovers(out) == []


def test_read_refusals(tmp_path):
    garbage = tmp_path / "g.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="cannot be read as an index|no readable metadata"):
        read_index(garbage)
    with pytest.raises(StoreError, match="no such index file"):
        read_index(tmp_path / "absent.sqlite")
    out = tmp_path / "i.sqlite"
    write_index(out, contents())
    conn = sqlite3.connect(out)
    conn.execute("UPDATE index_meta SET schema_version = 2")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="unknown index schema: 2"):
        read_index(out)


def test_leftovers_of_a_build_are_recognised_and_removed(tmp_path):
    out = tmp_path / "index.sqlite"
    write_index(out, contents())
    stale = [tmp_path / ".index.sqlite.tmp-99999", tmp_path / ".index.sqlite.tmp-99999-journal"]
    for p in stale:
        p.write_bytes(b"x")
    other = tmp_path / "notes.md"
    other.write_text("keep")
    assert leftovers(out) == sorted(stale)
    with BuildLock(out, command="test"):
        assert leftovers(out) == []
    assert other.exists() and out.exists()


def test_lock_refuses_a_second_holder_naming_the_first(tmp_path):
    out = tmp_path / "index.sqlite"
    with BuildLock(out, command="hql-semantics build --vault v"):
        holder = (tmp_path / "index.sqlite.lock").read_text()
        assert holder == f"pid {os.getpid()}: hql-semantics build --vault v\n"
        with pytest.raises(LockHeld) as err:
            BuildLock(out, command="second").acquire()
        assert f"pid {os.getpid()}: hql-semantics build --vault v" in str(err.value)
        assert "another build of" in str(err.value)
    assert not (tmp_path / "index.sqlite.lock").exists()
    with BuildLock(out, command="third"):
        pass


def test_the_os_releases_the_lock_of_a_killed_holder(tmp_path):
    out = tmp_path / "index.sqlite"
    code = (
        "import sys, time\n"
        "from producer.index_lock import BuildLock\n"
        f"BuildLock({str(out)!r}, command='holder').acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(LockHeld, match=f"pid {proc.pid}: holder"):
            BuildLock(out, command="me").acquire()
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while True:
        try:
            with BuildLock(out, command="me"):
                break
        except LockHeld:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
