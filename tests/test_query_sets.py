"""The frozen real-corpus query sets (benchmarks/queries/): their shape and the paraphrase rule.

These run on the committed files alone (no man pages needed): `hql-tui eval`
reads every set; each has at least 30 paraphrase and 30 keyword queries; each
query names 1-3 relevant cards, whose titles the side file records; and a
paraphrase query shares no token with any of its relevant pages' titles.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hqltui.commands.evaluate import read_queries
from hqltui.core.lexical import tokens

QUERIES = Path(__file__).resolve().parent.parent / "benchmarks" / "queries"
SETS = ["man1", "man23"]


def _titles(name: str) -> dict[str, str]:
    return tomllib.loads((QUERIES / f"{name}.titles.toml").read_text(encoding="utf-8"))["titles"]


@pytest.mark.parametrize("name", SETS)
def test_counts_kinds_and_relevant_sets(name: str) -> None:
    queries = read_queries(QUERIES / f"{name}.toml")
    kinds = [q.kind for q in queries]
    assert set(kinds) == {"paraphrase", "keyword"}
    assert kinds.count("paraphrase") >= 30 and kinds.count("keyword") >= 30
    texts = [q.text for q in queries]
    assert len(set(texts)) == len(texts), "a query is written twice"
    titles = _titles(name)
    for q in queries:
        assert 1 <= len(q.relevant) <= 3, q.text
        assert len(set(q.relevant)) == len(q.relevant), q.text
        assert all(r in titles for r in q.relevant), q.text
    assert set(titles) == {r for q in queries for r in q.relevant}, "titles of unused cards"


@pytest.mark.parametrize("name", SETS)
def test_paraphrases_share_no_token_with_their_titles(name: str) -> None:
    titles = _titles(name)
    for q in read_queries(QUERIES / f"{name}.toml"):
        if q.kind != "paraphrase":
            continue
        words = set(tokens(q.text))
        assert words, q.text
        for card in q.relevant:
            shared = words & set(tokens(titles[card]))
            assert not shared, f"{q.text!r} shares {sorted(shared)} with {card}: {titles[card]!r}"


@pytest.mark.parametrize("name", SETS)
def test_keyword_queries_have_words(name: str) -> None:
    for q in read_queries(QUERIES / f"{name}.toml"):
        if q.kind == "keyword":
            assert tokens(q.text), q.text
