"""`hql-tui related` and `hql-tui suggest-links`: JSON shape, text, exit codes, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hqltui.cli import main
from tests.helpers.indexed_vaults import unit, write_test_index, write_vault

BIRDS = Path(__file__).resolve().parent.parent / "fixtures" / "birds"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def test_related_json_lists_neighbours_in_rank_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["related", str(BIRDS), "barn-owl", "--limit", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["card"] == "barn-owl" and data["refusal"] is None
    neighbours = data["neighbours"]
    assert [n["rank"] for n in neighbours] == [1, 2, 3, 4]
    assert [n["card"] for n in neighbours[:2]] == ["eurasian-eagle-owl", "tawny-owl"]
    assert {n["card"] for n in neighbours if n["linked"]} == {"barn-owl-member-of-tytonidae",
                                                               "tytonidae"}
    assert data["provenance"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert data["provenance"]["revision"].startswith("sha256:")


def test_related_text_marks_linked_cards(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["related", str(BIRDS), "barn-owl", "--limit", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("related to barn-owl  [sentence-transformers/all-MiniLM-L6-v2")
    assert [line.split()[1] for line in lines[1:] if line.endswith("linked")] == [
        "barn-owl-member-of-tytonidae", "tytonidae"]


def test_unknown_card_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["related", str(BIRDS), "dodo"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"hql-tui related: `dodo` is not a card of {BIRDS}; fix: list the cards: "
        f"hql-tui {BIRDS} --list"]


def test_a_card_without_a_vector_refuses_with_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_vault(tmp_path / "v", {"a": "owl", "b": "heron"})
    write_test_index(root, {"a": unit([1, 0])})
    assert main(["related", str(root), "b", "--json"]) == 1
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["message"] == "`b` has no vector in the index, so nothing can be said to be near it"
    assert "hql-semantics build" in error["fix"]
    assert "Traceback" not in captured.err


def test_suggest_links_json_is_read_only_link_texts(capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.stat().st_mtime_ns for p in BIRDS.glob("*.hmd")}
    assert main(["suggest-links", str(BIRDS), "--limit", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pairs = data["suggestions"]
    assert len(pairs) == 3 and data["complete"]
    assert all(p["link"] == f"[[{p['target']}]]" for p in pairs)
    assert [p["score"] for p in pairs] == sorted((p["score"] for p in pairs), reverse=True)
    assert {p: p.stat().st_mtime_ns for p in BIRDS.glob("*.hmd")} == before


def test_suggest_links_without_an_index_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_vault(tmp_path / "v", {"a": "owl"}, index=None)
    assert main(["suggest-links", str(root)]) == 1
    assert "[semantics] index" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["related", str(BIRDS)]) == 2
    assert main(["suggest-links", str(BIRDS), "--limit", "0"]) == 2
