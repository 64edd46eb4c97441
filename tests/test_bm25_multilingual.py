"""bm25 finds notes in any language (issue: accents, Unicode forms, width, CJK), through a
real session on a vault of the committed synthetic texts, and says so in its provenance.
hashbag, which must split text as ``hql`` does, still does not: the two arms differ
exactly where bm25's analyser folds or bigrams."""

from __future__ import annotations

import pytest

from hqltui.core.session import Session
from tests.helpers.indexed_vaults import write_vault
from tests.multilingual_text import TEXTS

CARDS = {**TEXTS, "crows": "東京のカラスはゴミ袋を破る。"}
FOUND = {  # query -> the card bm25 must rank first (or with `nfd`, which says café too)
    "cafe": "latin", "naive": "latin", "zurich": "latin", "ORSTED": "latin",
    "Cafe\u0301": "latin", "Ｆｕｌｌｗｉｄｔｈ": "fullwidth", "ascii": "fullwidth",
    "resume": "nfd", "北海道": "japanese", "鶴": "japanese", "丹顶鹤": "chinese",
    "湿原": "japanese", "두루미": "korean", "πελαργος αθηνα": "greek",
}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = write_vault(tmp_path_factory.mktemp("multilingual") / "vault", CARDS, index=None)
    return Session.load(root)


@pytest.mark.parametrize("query", FOUND)
def test_bm25_finds_the_card_whatever_the_spelling(session: Session, query: str) -> None:
    top = session.rank(query, "bm25", limit=3).names()
    if query.lower().startswith("cafe"):
        assert set(top[:2]) == {"latin", "nfd"}, top
    else:
        assert top[:1] == [FOUND[query]], top


@pytest.mark.parametrize("query", ["cafe", "naive", "ascii", "北海道", "鶴", "丹顶鹤"])
def test_hashbag_keeps_hql_tokens_and_misses_them(session: Session, query: str) -> None:
    assert FOUND[query] not in session.rank(query, "hashbag", limit=3).names()


def test_kana_and_cyrillic_marks_are_not_folded(session: Session) -> None:
    # ガラス (glass) and カラス (crow) share the bigram ラス, and differ in the other
    assert session.rank("カラス", "bm25", limit=3).names()[:1] == ["crows"]
    assert session.rank("ガラス", "bm25", limit=3).names()[:1] == ["japanese"]
    assert session.rank("иодным", "bm25", limit=3).names() == ["cyrillic"]


def test_provenance_names_the_new_analyser(session: Session) -> None:
    retrieval = session.rank("cafe", "bm25").retrieval
    assert retrieval is not None and retrieval.model == "hqltui.bm25.v2"
    assert session.rank("cafe", "hashbag").retrieval.model == "hql.hashbag.v1"  # type: ignore[union-attr]


def test_the_fusion_signals_count_the_fused_arms_terms(session: Session) -> None:
    assert session.doc_freq is not None
    assert session.doc_freq.of("北海道 CAFÉ") == {"北海": 1, "海道": 1, "cafe": 2}


def test_the_name_and_ident_signals_split_as_the_fused_arm_does() -> None:
    from hqltui.core.bm25_analyser import query_terms
    from hqltui.core.fusion import QueryStats, identifier, name_share

    assert name_share("cafe", "café.1", query_terms) == 1.0
    assert name_share("cafe", "café.1") == 0.0  # hashbag's tokens: another word
    holds = {(0, "北海"), (0, "海道")}
    stats = QueryStats("北海道_x", 100, {"北海": 1, "海道": 1}, lambda p, t: (p, t) in holds,
                       query_terms)
    assert identifier(stats, 0, 1) == 1.0
