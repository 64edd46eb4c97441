"""The answering passage's offsets in every output: `query --json` (semantic and hybrid),
`eval --per-query --json`, and the MCP `search` tool, whose snippet quotes that passage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hqltui.cli import main
from hqltui.core import agent
from hqltui.core.session import Session
from producer.embedders.local import packaged_embedder
from producer.vault import load_vault
from tests.helpers.passage_vaults import passage_vault

QUERY = "file descriptor limit"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return passage_vault(tmp_path_factory.mktemp("out") / "v", packaged_embedder(), [QUERY])


def test_query_json_carries_the_passage_in_semantic_and_hybrid(built: Path, capsys) -> None:
    assert main(["query", str(built), QUERY, "--mode", "all", "--json"]) == 0
    arms = json.loads(capsys.readouterr().out)["arms"]
    text = load_vault(built).by_name["shell"].text
    for arm in ("semantic", "hybrid"):
        shell = next(h for h in arms[arm]["hits"] if h["card"] == "shell")
        passage = shell["passage"]
        assert passage["ordinal"] >= 1 and "ulimit" in text[passage["start"]:passage["end"]]
    assert all("passage" not in h for h in arms["bm25"]["hits"])  # lexical has none


def test_eval_per_query_json_carries_each_top_cards_passage(built: Path, tmp_path: Path,
                                                            capsys) -> None:
    queries = tmp_path / "q.toml"
    queries.write_text(f'[[query]]\ntext = "{QUERY}"\nrelevant = ["shell"]\n'
                       'kind = "keyword"\n', encoding="utf-8")
    assert main(["eval", str(built), str(queries), "--per-query", "--json"]) == 0
    (detail,) = json.loads(capsys.readouterr().out)["per_query"]
    text = load_vault(built).by_name["shell"].text
    for arm in ("semantic", "hybrid"):
        row = detail["arms"][arm]
        assert len(row["passages"]) == len(row["top"])
        first = row["first_relevant_passage"]
        assert row["passages"][row["top"].index("shell")] == first
        assert "ulimit" in text[first["start"]:first["end"]]
    assert "passages" not in detail["arms"]["bm25"]
    assert "passages" not in detail["arms"]["semantic[cards]"]  # card vectors: no passage


def test_mcp_search_carries_the_offsets_and_quotes_the_passage(built: Path,
                                                               tmp_path: Path) -> None:
    session = Session.load(built, cache_dir=tmp_path / "cache")
    found = agent.search(session, "v", QUERY, mode="semantic", limit=3)
    shell = next(h for h in found["arms"]["semantic"]["hits"] if h["name"] == "shell")
    passage = shell["passage"]
    assert passage["ordinal"] >= 1
    assert "file descriptors" in shell["snippet"]  # from the passage, near the query's word
    assert "ulimit" in shell["snippet"]
    text = session.card("shell").text
    assert shell["snippet"] == agent.snippet(text[passage["start"]:passage["end"]], QUERY)
    # A stale card's offsets describe its old text: its snippet comes from today's body.
    card = built / "shell.hmd"
    old = card.read_text(encoding="utf-8")
    try:
        card.write_text(old.replace("The common shell", "Our usual shell"), encoding="utf-8")
        stale = Session.load(built, cache_dir=tmp_path / "cache2")
        hit = next(h for h in agent.search(stale, "v", QUERY, mode="semantic")["arms"]
                   ["semantic"]["hits"] if h["name"] == "shell")
        assert hit["snippet"] == agent.snippet(stale.card("shell").body, QUERY)
    finally:
        card.write_text(old, encoding="utf-8")
