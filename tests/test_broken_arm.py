"""A broken arm refuses alone; it never takes the session down.

Each test puts a real defect into one step one arm runs (``tests/broken_arms.py``)
and checks what a user sees: that arm refuses by name in one line, the other
arms answer, hybrid shows the refusal of an arm it fuses, no traceback.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from hqltui.cli import main
from hqltui.core.session import Session
from producer.vault import load_vault
from tests.broken_arms import (
    break_the_tokeniser_on,
    bring_back_the_bucket_overflow,
    drop_the_postings_order_tail,
    lose_a_float_reading_the_index,
)
from tests.helpers.indexed_vaults import (
    owl_vault,
)
from tests.synthetic_text import COLLIDED

OWLS = {"barn-owl", "tawny-owl"}
OVERFLOW = "hashbag cannot be built: IndexError: index 36 is out of bounds for axis 0 with size 4"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    # Twelve words sharing one hashbag bucket, three times each (man-page shape).
    return owl_vault(tmp_path / "birds", {"synopsis": COLLIDED})


def texts(root: Path) -> list[str]:
    return [card.text for card in load_vault(root).cards]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ the core


def test_an_arm_that_cannot_be_built_refuses_alone(vault: Path, monkeypatch) -> None:
    bring_back_the_bucket_overflow(monkeypatch, texts(vault))
    session = Session.load(vault)  # loads: the session is not taken down
    hashbag = session.rank("owl", "hashbag")
    assert hashbag.refusal is not None and hashbag.refusal.message == OVERFLOW
    assert hashbag.retrieval is not None and hashbag.retrieval.arm == "hashbag"
    assert set(session.rank("owl", "bm25").names()[:2]) == OWLS
    assert set(session.rank("owl", "semantic").names()[:2]) == OWLS
    answer = session.query("owl")  # default lexical arm: bm25, unharmed
    assert answer.lexical.ok and answer.semantic.ok and answer.hybrid.ok
    fused = session.query("owl", lexical="hashbag")
    assert fused.semantic.ok
    assert fused.lexical.refusal == hashbag.refusal
    assert fused.hybrid.refusal == hashbag.refusal  # never quietly semantic alone
    assert [w.message for w in session.warnings if w.kind == "arm"] == [
        f"{OVERFLOW}; the other arms still answer"
    ]
    assert session.scores("owl", "hashbag") == hashbag.refusal


def test_an_arm_whose_scoring_raises_refuses_alone(vault: Path) -> None:
    session = Session.load(vault)
    bm25 = session.lexical["bm25"]
    bm25.post_weight = bm25.post_weight[:0]  # postings and weights no longer line up
    answer = session.query("owl")
    refusal = answer.lexical.refusal
    assert refusal is not None
    assert refusal.message.startswith("bm25 failed on this query: ValueError: ")
    assert "\n" not in refusal.message and refusal.fix == ""
    assert answer.hybrid.refusal == refusal
    assert set(answer.semantic.names()[:2]) == OWLS
    assert set(session.rank("owl", "hashbag").names()[:2]) == OWLS
    # The next query meets the same broken arm, and the same single refusal.
    assert session.rank("heron", "bm25").refusal is not None


def test_a_semantic_arm_whose_scoring_raises_refuses_alone(vault: Path) -> None:
    session = Session.load(vault)
    assert session.index is not None
    session.index = replace(session.index, matrix=session.index.matrix[:, :2])  # wrong width
    answer = session.query("owl")
    refusal = answer.semantic.refusal
    assert refusal is not None
    assert refusal.message.startswith("semantic failed on this query: ValueError: ")
    assert answer.hybrid.refusal == refusal
    assert set(answer.lexical.names()[:2]) == OWLS


def test_when_the_term_counts_fail_both_lexical_arms_refuse_and_semantic_answers(
    vault: Path, monkeypatch
) -> None:
    break_the_tokeniser_on(monkeypatch, "voles")
    session = Session.load(vault)
    want = "cannot be built: MemoryError: cannot allocate the token list"
    for arm in ("hashbag", "bm25"):
        refusal = session.rank("owl", arm).refusal
        assert refusal is not None and refusal.message == f"{arm} {want}"
    answer = session.query("owl")
    assert set(answer.semantic.names()[:2]) == OWLS
    assert answer.hybrid.refusal is not None
    assert answer.hybrid.refusal.message == f"bm25 {want}"


def test_a_broken_postings_build_refuses_bm25_only(vault: Path, monkeypatch) -> None:
    drop_the_postings_order_tail(monkeypatch)
    session = Session.load(vault)
    refusal = session.rank("owl", "bm25").refusal
    assert refusal is not None and refusal.message.startswith("bm25 cannot be built: ValueError")
    assert set(session.rank("owl", "hashbag").names()[:2]) == OWLS


def test_an_index_that_cannot_be_opened_refuses_semantic_alone(vault: Path, monkeypatch) -> None:
    lose_a_float_reading_the_index(monkeypatch)
    session = Session.load(vault)
    answer = session.query("owl")
    refusal = answer.semantic.refusal
    assert refusal is not None
    assert refusal.message.startswith("semantic cannot be opened: ValueError: cannot reshape")
    assert answer.hybrid.refusal == refusal
    assert set(answer.lexical.names()[:2]) == OWLS
    assert session.index_summary().state == "refused"
    assert f"semantic search is off: {refusal.message}" in [w.message for w in session.warnings]


# ------------------------------------------------------------------ the CLI


def test_query_all_prints_the_refusal_by_name_and_the_other_arms(
    vault: Path, capsys, monkeypatch
) -> None:
    bring_back_the_bucket_overflow(monkeypatch, texts(vault))
    code, out, err = run(capsys, "query", str(vault), "owl", "--mode", "all")
    assert code == 1  # an arm refused; the others still printed
    assert "Traceback" not in out + err and err == ""
    blocks = {block.split("\n", 1)[0].split("  ")[0]: block for block in out.split("\n\n")}
    assert blocks["hashbag"].splitlines()[1:] == [f"  refused: {OVERFLOW}"]
    for arm in ("bm25", "semantic", "hybrid (bm25 + semantic)"):
        assert "\n    1  " in blocks[arm] and "refused" not in blocks[arm], arm
    assert f"[arm] {OVERFLOW}; the other arms still answer" in out


def test_query_json_carries_the_refusal(vault: Path, capsys, monkeypatch) -> None:
    bring_back_the_bucket_overflow(monkeypatch, texts(vault))
    code, out, _ = run(capsys, "query", str(vault), "owl", "--json")
    assert code == 1
    arms = json.loads(out)["arms"]
    assert arms["hashbag"]["refusal"] == {"message": OVERFLOW, "fix": ""}
    assert arms["hashbag"]["hits"] == []
    assert all(arms[a]["refusal"] is None and arms[a]["hits"] for a in ("bm25", "semantic"))
    assert arms["hybrid"]["refusal"] is None  # it fuses bm25, the default


def test_query_hybrid_shows_a_broken_lexical_arm_it_fuses(vault: Path, capsys, monkeypatch) -> None:
    (vault / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n[search]\nlexical = "hashbag"\n',
        encoding="utf-8",
    )
    bring_back_the_bucket_overflow(monkeypatch, texts(vault))
    code, out, _ = run(capsys, "query", str(vault), "owl", "--mode", "hybrid")
    assert code == 1
    assert out.splitlines()[2].startswith("hybrid (hashbag + semantic)")
    assert f"  refused: {OVERFLOW}" in out.splitlines()


def test_eval_counts_the_broken_arm_and_scores_the_others(
    vault: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    queries = tmp_path / "q.toml"
    queries.write_text('[[query]]\ntext = "owl"\nrelevant = ["barn-owl", "tawny-owl"]\n', encoding="utf-8")
    bring_back_the_bucket_overflow(monkeypatch, texts(vault))
    code, out, err = run(capsys, "eval", str(vault), str(queries), "--json")
    assert code == 1 and "Traceback" not in err
    overall = json.loads(out)["overall"]
    assert overall["hashbag"]["refused"] == 1 and overall["hybrid:lexical=hashbag"]["refused"] == 1
    for arm in ("bm25", "semantic", "hybrid"):
        assert overall[arm]["refused"] == 0 and overall[arm]["hit@1"] == 1.0
