"""Every refusal of the semantic reader, each on an index broken on purpose."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hqltui.core.index_reader import SemanticIndex, open_index
from hqltui.core.ranking import Refusal
from hqltui.core.session import Session
from producer.config import load_producer_config
from producer.vault import load_vault
from tests.helpers.indexed_vaults import (
    THREE_CARDS,
    THREE_VECTORS,
    doctor,
    three_card_vault,
    unit,
    write_test_index,
    write_vault,
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return three_card_vault(tmp_path / "birds", {"q": unit([1, 0, 0, 0])})


def opened(root: Path) -> SemanticIndex | Refusal:
    return open_index(load_vault(root), load_producer_config(root))


def refusal(root: Path) -> Refusal:
    result = opened(root)
    assert isinstance(result, Refusal), result
    return result


def test_a_good_index_opens(vault: Path) -> None:
    ix = opened(vault)
    assert isinstance(ix, SemanticIndex)
    assert ix.matrix.shape == (3, 4) and ix.matrix.dtype == np.float32
    assert ix.matrix.flags["C_CONTIGUOUS"]
    assert ix.fresh_count == 3 and not ix.stale_names and not ix.missing_names
    assert ix.path == f"{vault.as_posix()}/.hql/index.sqlite"


def test_no_index_configured_names_the_table_and_the_build(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS, index=None)
    r = refusal(root)
    assert "[semantics] index" in r.message and "hql-semantics build" in r.message
    assert r.fix.startswith("hql-semantics build --vault")


@pytest.mark.parametrize("named", ["../outside.sqlite", "/absolute/index.sqlite", "a/../../x.sqlite"])
def test_a_path_outside_the_vault(tmp_path: Path, named: str) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS, index=named)
    assert "outside the vault" in refusal(root).message


def test_a_path_escaping_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = write_vault(tmp_path / "v", THREE_CARDS, index="link/index.sqlite")
    os.symlink(elsewhere, root / "link")
    assert "outside the vault" in refusal(root).message


def test_a_missing_file(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS)
    r = refusal(root)
    assert "cannot be read" in r.message and "hql-semantics build" in r.fix


def test_a_garbage_file(vault: Path) -> None:
    (vault / ".hql/index.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    assert "cannot be read" in refusal(vault).message


def test_no_metadata(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DROP TABLE index_meta")
    assert refusal(vault).message.startswith("the index has no readable metadata")


def test_empty_metadata(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DELETE FROM index_meta")
    assert refusal(vault).message.startswith("the index has no readable metadata")


def test_schema_2(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE index_meta SET schema_version = 2")
    assert refusal(vault).message.startswith("unknown index schema: 2")


def test_another_vault(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE index_meta SET vault = 'fixtures/mammals'")
    r = refusal(vault)
    assert "fixtures/mammals" in r.message and "rebuild" in r.message


def test_the_same_vault_recorded_by_a_relative_path(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE index_meta SET vault = 'fixtures/birds'")
    assert isinstance(opened(vault), SemanticIndex)


def test_no_model_row(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DELETE FROM model")
    assert refusal(vault).message.startswith("the index names no model")


def test_no_model_table(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DROP TABLE model")
    assert refusal(vault).message.startswith("the index names no model")


@pytest.mark.parametrize("dims", [0, 9000, -1])
def test_dimensions_out_of_range(vault: Path, dims: int) -> None:
    doctor(vault / ".hql/index.sqlite", f"UPDATE model SET dimensions = {dims}")
    r = refusal(vault)
    assert f"declares {dims} dimensions" in r.message and "8192" in r.message


def test_not_normalized(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE model SET normalized = 0")
    assert "not normalized" in refusal(vault).message


def test_metric_l2(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE model SET metric = 'l2'")
    r = refusal(vault)
    assert "`l2`" in r.message and "`cosine`" in r.message


def test_a_truncated_card_blob(vault: Path) -> None:
    doctor(
        vault / ".hql/index.sqlite",
        "UPDATE card SET embedding = substr(embedding, 1, 10) WHERE name = 'beta'",
    )
    r = refusal(vault)
    assert r.message == "`beta` has a 10-byte vector where 16 bytes were declared"


def test_an_orphan_blob_of_the_wrong_length_is_refused_too(vault: Path) -> None:
    doctor(
        vault / ".hql/index.sqlite",
        "INSERT INTO card VALUES ('ghost', 'ghost.hmd', 'x', zeroblob(3))",
    )
    assert "`ghost` has a 3-byte vector" in refusal(vault).message


def test_a_query_blob_of_the_wrong_length(vault: Path, tmp_path: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE query SET embedding = zeroblob(12)")
    session = Session.load(vault, cache_dir=tmp_path / "cache")
    ranking = session.rank("q", "semantic")
    assert ranking.refusal is not None
    assert ranking.refusal.message == "the stored vector for `q` is 12 bytes, not 16"
    assert not ranking.hits


def test_stale_absent_and_orphan_cards(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS)
    write_test_index(
        root,
        {"alpha": THREE_VECTORS["alpha"], "beta": THREE_VECTORS["beta"], "delta": unit([0, 1, 0, 0])},
        hashes={"beta": "0" * 64},
    )
    ix = opened(root)
    assert isinstance(ix, SemanticIndex)
    assert ix.stale_names == ("beta",)
    assert ix.missing_names == ("gamma",)
    assert ix.orphan_names == ("delta",)
    kinds = [(w.kind, w.cards) for w in ix.warnings()]
    assert kinds == [("stale", ("beta",)), ("absent", ("gamma",)), ("orphan", ("delta",))]
    assert "`gamma` is absent from the index" in ix.warnings()[1].message
    assert [ix.status(i) for i in range(3)] == ["fresh", "stale", "missing"]


def test_no_card_table(vault: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DROP TABLE card")
    assert refusal(vault).message.startswith("the index has no readable cards")


def test_no_query_table_means_no_stored_vectors(vault: Path, tmp_path: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "DROP TABLE query")
    ranking = Session.load(vault, cache_dir=tmp_path / "cache").rank("q", "semantic")
    assert ranking.refusal is not None
    assert 'hql-semantics build --query "q"' in ranking.refusal.message
