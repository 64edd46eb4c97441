"""The reader checks every vector it serves, once, at load (issue: bad input, round two):
a card or query vector that is not finite and unit length, or a name with two rows,
is never scored, and the warning says which and how to fix it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hqltui.core.session import Session
from producer.index_format import pack
from producer.verify import verify
from tests.helpers.indexed_vaults import (
    THREE_VECTORS,
    doctor,
    locked,
    three_card_vault,
    unit,
)

QUERY = "first card"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return three_card_vault(tmp_path / "birds", {QUERY: unit([1, 0, 0, 0])})


def _session(root: Path, tmp_path: Path) -> Session:
    return Session.load(root, cache_dir=tmp_path / "cache")


def _set_vector(root: Path, name: str, vector: np.ndarray) -> None:
    doctor(root / ".hql/index.sqlite", f"UPDATE card SET embedding = ? WHERE name = '{name}'",
           params=(pack(vector),))


def _cards(ranking) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.card for h in ranking.hits]


@pytest.mark.parametrize(
    "vector", [THREE_VECTORS["alpha"] * 2, np.array([np.nan, 0, 0, 0], dtype=np.float32)],
    ids=["scaled-by-2", "nan"],
)
def test_a_bad_card_vector_leaves_the_card_out_of_semantic_and_hybrid_with_a_warning(
    vault: Path, tmp_path: Path, vector: np.ndarray
) -> None:
    _set_vector(vault, "alpha", vector)
    session = _session(vault, tmp_path)
    answer = session.query(QUERY)
    assert "alpha" not in _cards(answer.semantic)
    assert all(h.score <= 1.0 + 1e-6 for h in answer.semantic.hits)
    assert "alpha" not in _cards(answer.hybrid)
    assert "alpha" in _cards(answer.lexical)  # lexical does not depend on the index
    messages = [w.message for w in answer.semantic.warnings if "alpha" in w.cards]
    assert messages == [
        "`alpha` has a stored vector that is not finite and unit length, so it is left out "
        "of semantic and hybrid (rebuild: hql-semantics build)"
    ]
    assert not any("absent" in w.message for w in answer.semantic.warnings)


def test_both_rows_of_a_duplicated_name_are_left_out_warned_and_verify_lists_it(
    vault: Path, tmp_path: Path
) -> None:
    index = vault / ".hql/index.sqlite"
    doctor(index, "CREATE TABLE c2 AS SELECT * FROM card", "DROP TABLE card",
           "ALTER TABLE c2 RENAME TO card")
    doctor(index, "INSERT INTO card VALUES ('alpha', 'alpha.hmd', "
           "(SELECT content_hash FROM card WHERE name = 'alpha'), ?)",
           params=(pack(unit([0, 0, 1, 1])),))
    session = _session(vault, tmp_path)
    answer = session.query(QUERY)
    assert "alpha" not in _cards(answer.semantic) and "alpha" not in _cards(answer.hybrid)
    assert any(
        w.message.startswith("`alpha` has more than one row in the index, so both are left out")
        for w in answer.semantic.warnings
    )
    report = verify(vault, index)
    assert not report.clean
    assert [p.message for p in report.problems if p.kind == "duplicate"] == [
        "`alpha` has more than one row in the index"
    ]


def test_a_bad_stored_query_vector_is_not_used(vault: Path, tmp_path: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE query SET embedding = ?",
           params=(pack(np.array([0.5, 0, 0, 0], dtype=np.float32)),))
    session = _session(vault, tmp_path)
    ranking = session.rank(QUERY, "semantic")
    assert ranking.refusal is not None and not ranking.hits
    assert 'hql-semantics build --query "first card"' in ranking.refusal.message
    assert any("the stored vector for the query `first card` is not finite and unit length"
               in w.message for w in session.warnings)


def test_a_locked_index_is_refused_after_the_wait_naming_the_lock(vault: Path) -> None:
    from hqltui.core.index_reader import open_index
    from hqltui.core.ranking import Refusal
    from producer.config import load_producer_config
    from producer.vault import load_vault

    with locked(vault / ".hql/index.sqlite") as holder:
        refusal = open_index(load_vault(vault), load_producer_config(vault))
    assert isinstance(refusal, Refusal)
    assert "is locked by another process (database is locked; waited 5 s" in refusal.message
    assert f"pid {holder.pid} (" in refusal.message
    assert refusal.fix == "try again once that process has finished or closed the index"


UNTYPED_MODEL = ("CREATE TABLE m2 (id, revision, dimensions, metric, normalized)",
                 "INSERT INTO m2 SELECT * FROM model", "DROP TABLE model",
                 "ALTER TABLE m2 RENAME TO model")


@pytest.mark.parametrize(("edit", "named"), [
    ("UPDATE model SET revision = NULL", "'test/model' at revision NULL"),
    ("UPDATE model SET id = 7", "7 at revision 'rev-1'"),
    ("UPDATE model SET revision = ''", "'test/model' at revision ''"),
], ids=["null-revision", "number-id", "empty-revision"])
def test_a_model_row_without_a_text_id_and_revision_refuses_semantic(
    vault: Path, tmp_path: Path, edit: str, named: str
) -> None:
    """Every semantic score names its model and pinned revision: an index that names
    none is refused, not scored under `None`."""
    index = vault / ".hql/index.sqlite"
    doctor(index, *UNTYPED_MODEL, edit)
    message = f"the index names its model {named}; a score's provenance needs both, as text"
    answer = _session(vault, tmp_path).query(QUERY)
    for ranking in (answer.semantic, answer.hybrid):
        assert ranking.refusal is not None and ranking.refusal.message == message
    assert answer.lexical.ok
    assert message in [p.message for p in verify(vault, index).problems]


def test_inspect_shows_a_null_revision_as_null_not_none(vault: Path) -> None:
    from producer.verify import format_inspect, inspect

    index = vault / ".hql/index.sqlite"
    doctor(index, *UNTYPED_MODEL, "UPDATE model SET revision = NULL, id = 7")
    lines = format_inspect(inspect(index)).splitlines()
    assert "model         7" in lines and "revision      NULL" in lines
    assert "None" not in "\n".join(lines)
