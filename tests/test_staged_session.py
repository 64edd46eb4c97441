"""The staged start: cards, then the index, then each lexical arm on first need, once.

Real vaults, real index files, real structures; what is checked is what a caller
can see (what exists after each step, what each query built, the summary and
warnings of each stage), never a time.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from hqltui.core import arms
from hqltui.core.lexical import BM25
from hqltui.core.session import Session
from tests.helpers.indexed_vaults import owl_vault


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = owl_vault(tmp_path / "birds")
    # An edit after the build: the index's stale warning is what shows it was read.
    card = root / "grey-heron.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nand wading\n", encoding="utf-8")
    return root


def test_a_load_builds_no_lexical_structure_and_a_hybrid_query_builds_only_its_arm(
    vault: Path,
) -> None:
    session = Session.load(vault)
    assert session.lexical.built() == {}
    assert not session.ready("bm25")
    answer = session.query("owl")  # hybrid over the default lexical arm, bm25
    assert answer.lexical_arm == "bm25" and answer.hybrid.ok
    assert list(session.lexical.built()) == ["bm25"]  # never hashbag's matrix
    assert session.ready("bm25") and not session.ready("hashbag")
    assert session.rank("owl", "hashbag").ok
    assert list(session.lexical.built()) == ["hashbag", "bm25"]


def test_the_cards_stage_shows_cards_without_waiting_for_the_index(vault: Path) -> None:
    session = Session.load(vault, open_index=False)
    assert session.index_pending
    assert session.names == ("barn-owl", "grey-heron", "tawny-owl")
    summary = session.index_summary()
    assert summary.state == "opening" and summary.path == ".hql/index.sqlite"
    assert not [w for w in session.warnings if w.kind == "stale"]  # not read yet
    session.open_index()
    assert not session.index_pending
    summary = session.index_summary()
    assert (summary.state, summary.fresh, summary.stale) == ("ok", 2, 1)
    assert [w.kind for w in session.warnings if w.kind == "stale"] == ["stale"]
    assert session.card_statuses() == {
        "barn-owl": "fresh", "grey-heron": "stale", "tawny-owl": "fresh"}


def test_a_query_on_the_cards_stage_opens_the_index_itself(vault: Path) -> None:
    session = Session.load(vault, open_index=False)
    answer = session.query("owl")
    assert answer.semantic.ok and set(answer.semantic.names()[:2]) == {"barn-owl", "tawny-owl"}
    assert not session.index_pending


def test_prepare_says_each_step_once_and_then_nothing(vault: Path) -> None:
    session = Session.load(vault, open_index=False)
    steps: list[str] = []
    assert session.prepare(progress=steps.append) is None
    assert steps == ["opening the index", "counting terms", "building bm25"]
    assert session.ready()
    steps.clear()
    session.prepare(progress=steps.append)
    session.prepare("hashbag", progress=steps.append)
    assert steps == ["counting terms", "building hashbag"]  # hashbag counts its own tokens
    steps.clear()
    session.prepare("hashbag", progress=steps.append)
    assert steps == []
    with pytest.raises(ValueError, match="unknown lexical arm `semantic`"):
        session.prepare("semantic")


def test_an_arm_asked_for_by_two_threads_at_once_is_built_once(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[BM25] = []
    gate = threading.Barrier(2)

    def counting(counts: object) -> BM25:
        built = BM25(counts)  # type: ignore[arg-type]
        made.append(built)
        return built

    monkeypatch.setitem(arms.ARMS, "bm25", replace(arms.ARMS["bm25"], build=counting))
    session = Session.load(vault)
    got: list[object] = []

    def ask() -> None:
        gate.wait()
        got.append(session.lexical["bm25"])

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and got == [made[0], made[0]]


def test_prepare_gives_the_refusal_of_an_arm_that_cannot_be_built(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(counts: object) -> BM25:
        raise ValueError("postings out of order")

    monkeypatch.setitem(arms.ARMS, "bm25", replace(arms.ARMS["bm25"], build=broken))
    session = Session.load(vault)
    refusal = session.prepare()
    assert refusal is not None
    assert refusal.message == "bm25 cannot be built: ValueError: postings out of order"
    assert session.query("owl").semantic.ok  # the other arms still answer
    assert session.rank("owl", "hashbag").ok
    assert [w.message for w in session.warnings if w.kind == "arm"] == [
        "bm25 cannot be built: ValueError: postings out of order; the other arms still answer"
    ]
