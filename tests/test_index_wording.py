"""An index problem reads the same wherever it is shown: the app's refusal and
``hql-semantics verify`` word the same fault in the same words."""

from __future__ import annotations

from pathlib import Path

from hqltui.core.index_reader import open_index
from hqltui.core.ranking import Refusal
from producer.config import load_producer_config
from producer.vault import load_vault
from producer.verify import verify
from tests.helpers.indexed_vaults import doctor, unit, write_test_index, write_vault


def test_an_index_built_for_another_vault_is_worded_once(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "birds", {"alpha": "first card", "beta": "second card"})
    index = write_test_index(root, {"alpha": unit([1, 0]), "beta": unit([0, 1])}, {})
    doctor(root / ".hql/index.sqlite", "UPDATE index_meta SET vault = 'fixtures/mammals'")
    refused = open_index(load_vault(root), load_producer_config(root))
    assert isinstance(refused, Refusal)
    reported = [p for p in verify(root, index).problems
                if p.kind == "foreign_vault"]
    expected = ("the index was built for `fixtures/mammals` and this vault is `birds`: "
                "rebuild it for this vault")
    assert refused.message == expected
    assert [p.message for p in reported] == [expected]
