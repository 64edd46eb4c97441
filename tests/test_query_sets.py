"""The real-corpus query sets (benchmarks/queries/): their shape and the paraphrase rule.

These run on the committed files alone (no man pages needed): `hql-tui eval`
reads every set; each frozen set has at least 30 paraphrase and 30 keyword
queries, each held-out set at least 24 of each; each query names 1-3 relevant
cards, whose titles the side file records; a paraphrase query shares no token
with any of its relevant pages' titles; and a held-out set shares no relevant
page and no query with the frozen set of its corpus, so a choice made on the
frozen set is checked on pages it never saw.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hqltui.commands.evaluate import read_queries
from hqltui.core.lexical import tokens

QUERIES = Path(__file__).resolve().parent.parent / "benchmarks" / "queries"
FROZEN = ["man1", "man23"]
HELD_OUT = [f"{name}.heldout" for name in FROZEN]
SETS = FROZEN + HELD_OUT
# The least number of queries of each kind a set holds.
LEAST_OF_EACH_KIND = {**dict.fromkeys(FROZEN, 30), **dict.fromkeys(HELD_OUT, 24)}


def _titles(name: str) -> dict[str, str]:
    return tomllib.loads((QUERIES / f"{name}.titles.toml").read_text(encoding="utf-8"))["titles"]


@pytest.mark.parametrize("name", SETS)
def test_counts_kinds_and_relevant_sets(name: str) -> None:
    queries = read_queries(QUERIES / f"{name}.toml")
    kinds = [q.kind for q in queries]
    assert set(kinds) == {"paraphrase", "keyword"}
    least = LEAST_OF_EACH_KIND[name]
    assert kinds.count("paraphrase") >= least and kinds.count("keyword") >= least
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


@pytest.mark.parametrize("frozen", FROZEN)
def test_held_out_set_shares_no_page_and_no_query_with_its_frozen_set(frozen: str) -> None:
    held_out = read_queries(QUERIES / f"{frozen}.heldout.toml")
    seen = read_queries(QUERIES / f"{frozen}.toml")
    seen_pages = {r for q in seen for r in q.relevant}
    seen_texts = {q.text for q in seen}
    for q in held_out:
        assert q.text not in seen_texts, f"{q.text!r} is a query of {frozen}.toml"
        shared = set(q.relevant) & seen_pages
        assert not shared, f"{q.text!r} names {sorted(shared)}, relevant in {frozen}.toml"
