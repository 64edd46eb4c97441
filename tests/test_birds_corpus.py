"""The birds fixture as a corpus: its shape and its paraphrase rules.

Semantic rankings are asserted against the committed index elsewhere; here we
check what needs no model: the card count, the relation cards and links, and
that every paraphrase group and its decoys obey the tokeniser rule, with the
hashbag arm's top 3 outside each group.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hqltui.core.lexical import hashbag_score, tokens
from producer.vault import Vault, load_vault

BIRDS = Path(__file__).resolve().parents[1] / "fixtures" / "birds"
QUERIES = tomllib.loads((BIRDS / "queries.toml").read_text(encoding="utf-8"))["query"]
GROUPS = [q for q in QUERIES if q["kind"] == "paraphrase"]
KEYWORDS = [q for q in QUERIES if q["kind"] == "keyword"]

# Words a query must not carry: they rank by accident, not by evidence.
FUNCTION_WORDS = {
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "in", "into",
    "is", "it", "its", "of", "on", "or", "that", "the", "their", "this", "to", "was",
    "what", "when", "where", "which", "who", "with",
}


@pytest.fixture(scope="module")
def vault() -> Vault:
    return load_vault(BIRDS)


@pytest.fixture(scope="module")
def texts(vault: Vault) -> dict[str, str]:
    return {card.name: card.text for card in vault.cards}


def _hashbag_top(query: str, texts: dict[str, str], n: int) -> list[str]:
    scored = [(hashbag_score(query, text), name) for name, text in texts.items()]
    kept = sorted((s for s in scored if s[0] > 0.0), key=lambda s: (-s[0], s[1]))
    return [name for _, name in kept[:n]]


def test_is_an_hmd_vault_with_an_index_configured() -> None:
    assert (BIRDS / ".hmd" / "config.toml").is_file()
    config = tomllib.loads((BIRDS / "hql.toml").read_text(encoding="utf-8"))
    assert config["semantics"]["index"] == ".hql/index.sqlite"


def test_at_least_48_cards_with_unique_kebab_case_names(vault: Vault) -> None:
    names = [card.name for card in vault.cards]
    assert len(names) >= 48
    assert len(set(names)) == len(names)
    for card in vault.cards:
        assert card.name == Path(card.path).stem
        assert card.name == card.name.lower() and " " not in card.name and "_" not in card.name


def test_every_card_has_a_title_and_a_heading(vault: Vault) -> None:
    for card in vault.cards:
        assert isinstance(card.header.get("title"), str), card.name
        assert card.body.startswith(f"# {card.title}\n"), card.name


def test_the_only_loader_warning_is_the_broken_relation(vault: Vault) -> None:
    assert vault.is_hmd
    assert len(vault.warnings) == 1
    assert vault.warnings[0].startswith("dodo-member-of-raphinae:")
    assert "do not resolve" in vault.warnings[0]


def test_relation_cards_resolve_except_the_broken_one(vault: Vault) -> None:
    declared = {
        card.name: card.metadata["knowledge"]["relation"]
        for card in vault.cards
        if isinstance(card.metadata.get("knowledge"), dict)
        and card.metadata["knowledge"].get("type") == "Relation"
    }
    resolved = {r.card for r in vault.relations}
    assert len(resolved) >= 4
    assert set(declared) - resolved == {"dodo-member-of-raphinae"}
    for relation in vault.relations:
        assert relation.source in vault.by_name and relation.target in vault.by_name
    broken = declared["dodo-member-of-raphinae"]
    assert broken["source"] not in vault.by_name and broken["target"] not in vault.by_name


def test_links_include_one_forward_link_to_a_missing_card(vault: Vault) -> None:
    assert vault.unresolved() == [("alcidae", "great-auk")]
    assert len([c for c in vault.cards if c.links]) >= 10
    assert "barn-owl" in vault.backlinks("tytonidae")


def test_some_cards_carry_a_status(vault: Vault) -> None:
    statuses = [card.metadata.get("status") for card in vault.cards]
    assert {"todo", "done"} <= set(statuses)
    assert statuses.count(None) > 0


def test_queries_name_existing_cards(vault: Vault) -> None:
    assert len(GROUPS) >= 3 and len(KEYWORDS) >= 3
    for query in QUERIES:
        for name in [*query["relevant"], *query.get("decoys", [])]:
            assert name in vault.by_name, (query["text"], name)


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_paraphrase_query_carries_no_function_words(group: dict) -> None:
    assert not set(tokens(group["text"])) & FUNCTION_WORDS
    assert len(tokens(group["text"])) == len(group["text"].split())


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_group_shape(group: dict) -> None:
    assert 3 <= len(group["relevant"]) <= 5
    assert 2 <= len(group["decoys"]) <= 3
    assert not set(group["relevant"]) & set(group["decoys"])


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_no_group_card_writes_a_query_token(group: dict, texts: dict[str, str]) -> None:
    query = set(tokens(group["text"]))
    for name in group["relevant"]:
        assert not query & set(tokens(texts[name])), name


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_every_decoy_writes_every_query_token(group: dict, texts: dict[str, str]) -> None:
    query = set(tokens(group["text"]))
    for name in group["decoys"]:
        assert query <= set(tokens(texts[name])), name


@pytest.mark.parametrize("group", GROUPS, ids=[g["text"] for g in GROUPS])
def test_hashbag_top3_holds_no_group_card(group: dict, texts: dict[str, str]) -> None:
    top = _hashbag_top(group["text"], texts, 3)
    assert len(top) == 3
    assert not set(top) & set(group["relevant"]), top


@pytest.mark.parametrize("query", KEYWORDS, ids=[q["text"] for q in KEYWORDS])
def test_keyword_answers_write_every_query_token(query: dict, texts: dict[str, str]) -> None:
    wanted = set(tokens(query["text"]))
    assert wanted
    for name in query["relevant"]:
        assert wanted <= set(tokens(texts[name])), name


def test_rare_keywords_occur_only_in_their_answer(texts: dict[str, str]) -> None:
    for word, answer in (("kleptoparasitism", "great-skua"), ("lamellae", "greater-flamingo")):
        holders = [name for name, text in texts.items() if word in tokens(text)]
        assert holders == [answer]
