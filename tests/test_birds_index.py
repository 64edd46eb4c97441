"""The committed birds index: verified clean, reproducible, and semantically sound."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from producer.index_format import unpack
from producer.index_reader import read_index
from scripts.build_birds_index import BUILT_AT, command

REPO = Path(__file__).resolve().parent.parent
VAULT = REPO / "fixtures" / "birds"
INDEX = VAULT / ".hql" / "index.sqlite"
QUERIES = tomllib.loads((VAULT / "queries.toml").read_text(encoding="utf-8"))["query"]
GROUPS = [q for q in QUERIES if q.get("kind") == "paraphrase"]


def producer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "producer", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_verify_is_clean():
    result = producer(
        "verify", "--vault", "fixtures/birds", "--index", str(INDEX.relative_to(REPO))
    )
    assert result.returncode == 0, result.stderr
    assert "clean, 58 cards" in result.stdout


def test_inspect_names_model_revision_and_counts():
    contents = read_index(INDEX)
    assert contents.model.id == "sentence-transformers/all-MiniLM-L6-v2"
    assert contents.model.revision.startswith("sha256:")
    assert (contents.model.dimensions, contents.model.metric, contents.model.normalized) == (
        384,
        "cosine",
        1,
    )
    assert contents.meta.vault == "fixtures/birds" and contents.meta.built_at == BUILT_AT
    assert len(contents.cards) == 58
    assert sorted(q.text for q in contents.queries) == sorted(q["text"] for q in QUERIES)


def _rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


@pytest.fixture(scope="module")
def two_fresh_builds(tmp_path_factory):
    outs = []
    for i in range(2):
        out = tmp_path_factory.mktemp(f"fresh{i}") / "index.sqlite"
        args = command()
        args[args.index("--out") + 1] = str(out)
        result = producer(*args[1:])
        assert result.returncode == 0, result.stderr
        outs.append(out)
    return outs


def test_two_fresh_builds_are_byte_identical(two_fresh_builds):
    first, second = two_fresh_builds
    assert first.read_bytes() == second.read_bytes()


def test_a_fresh_build_equals_the_committed_index(two_fresh_builds):
    fresh = two_fresh_builds[0]
    for table in ("model", "index_meta"):
        assert _rows(fresh, table) == _rows(INDEX, table)
    for table in ("card", "query"):
        new, old = _rows(fresh, table), _rows(INDEX, table)
        assert [r[:-1] for r in new] == [r[:-1] for r in old]  # names, paths, hashes exactly
        for a, b in zip(new, old, strict=True):  # vectors within 1e-6 (CPU features differ)
            assert np.max(np.abs(unpack(a[-1]) - unpack(b[-1]))) <= 1e-6, a[0]


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_top3_by_stored_vector_cosine_is_the_group(group):
    contents = read_index(INDEX)
    query = next(q for q in contents.queries if q.text == group["text"])
    q = unpack(query.embedding).astype(np.float64)
    scored = sorted((-float(unpack(c.embedding) @ q), c.name) for c in contents.cards)
    top3 = [name for _, name in scored[:3]]
    assert set(top3) <= set(group["relevant"]), top3
