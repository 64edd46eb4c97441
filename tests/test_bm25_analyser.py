"""bm25's analyser (``hqltui.bm25.v2``): what each script becomes, and its laws.

On committed synthetic texts (``tests/multilingual_text.py``) and on whatever
hypothesis draws: analysing is idempotent (every emitted term, analysed again
as a query, is exactly that term) and every term's span maps back into the
original text, to characters that analyse to that term.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hqltui.core.bm25_analyser import query_terms, spans, term_bytes, terms
from hqltui.core.lexical import tokens
from tests.multilingual_text import TEXTS

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)
SCRIPTS = st.sampled_from(
    ["café", "CAFÉ", "cafe\u0301", "Ｆｕｌｌ", "ｶﾞﾗｽ", "ガラス", "北海道の鶴", "丹顶鹤", "й", "Ἀθῆναι",
     "ß", "ﬁ", "½", "㈱", "İ", "ᾳ", "Ørsted", "🦉", "\u0301", "a", "é", " ", ".", "x2", "한국어"])
TEXT = st.one_of(st.text(max_size=40), st.lists(SCRIPTS, max_size=8).map("".join),
                 st.lists(st.one_of(SCRIPTS, st.text(max_size=3)), max_size=8).map("".join))


def test_accents_case_width_and_decomposition_fold_to_one_term() -> None:
    for spelled in ("café", "CAFÉ", "cafe", "Cafe\u0301", "ＣＡＦＥ"):
        assert query_terms(spelled) == ["cafe"], spelled
    assert terms(TEXTS["latin"])[:8] == ["the", "cafe", "in", "zurich", "serves", "naive",
                                         "creme", "brulee"]
    assert {"orsted", "lodz"} <= set(terms(TEXTS["latin"]))
    assert query_terms("Ｆｕｌｌｗｉｄｔｈ") == ["fullwidth"]
    assert query_terms("Straße") == ["strasse"]


def test_greek_loses_its_tonos_and_final_sigma_folds() -> None:
    assert query_terms("Αθήνα") == query_terms("αθηνα") == ["αθηνα"]
    assert query_terms("πελαργός") == ["πελαργοσ"]


def test_marks_of_other_scripts_stay() -> None:
    assert query_terms("й") != query_terms("и")
    assert "йодным" in terms(TEXTS["cyrillic"]) and "иодным" in terms(TEXTS["cyrillic"])
    assert query_terms("ガラス") != query_terms("カラス")
    assert query_terms("ｶﾞﾗｽ") == query_terms("ガラス")  # halfwidth kana: NFKC
    arabic = terms(TEXTS["arabic"])
    assert arabic[:2] == ["طائر", "اللقلق"]


def test_cjk_runs_give_bigrams_and_unigrams_and_queries_bigrams() -> None:
    assert terms("北海道") == ["北", "北海", "海", "海道", "道"]
    assert query_terms("北海道") == ["北海", "海道"]
    assert query_terms("鶴") == ["鶴"]
    japanese = set(terms(TEXTS["japanese"]))
    assert {"北海", "海道", "鶴", "タン", "ョウ"} <= japanese
    assert {"丹顶", "顶鹤"} <= set(terms(TEXTS["chinese"]))
    assert {"두루", "루미"} <= set(terms(TEXTS["korean"]))
    # today's tokeniser keeps a whole run between separators as one token
    assert "北海道" not in japanese and any("北海道" in t for t in tokens(TEXTS["japanese"]))


def test_emoji_are_separators_and_mixed_runs_split_at_cjk() -> None:
    assert terms(TEXTS["emoji"]) == ["owls", "hunt", "at", "night", "and", "sleep", "by", "day"]
    assert query_terms("Python3は") == ["python3", "は"]


def test_the_one_byte_rule_reads_the_original_piece() -> None:
    assert terms("a b 1") == []
    assert terms("ﬀ") == ["ff"]  # one character, three bytes: kept
    assert terms("é") == []  # kept as a piece, but folds to the one-byte `e`


def test_ascii_text_is_tokenised_as_hashbag_tokenises_it() -> None:
    text = "The ls(1) command: --all, -A; 42 files x2 Y"
    assert terms(text) == tokens(text)


@SETTINGS
@given(TEXT)
@example("cafe\u0301 ｶﾞﾗｽ ᾳ ½ ㈱ İstanbul")
def test_every_term_analyses_to_itself(text: str) -> None:
    for term in terms(text) + query_terms(text):
        assert query_terms(term) == [term], (text, term)


@SETTINGS
@given(TEXT)
@example("北海道の鶴 Ｆｕｌｌ cafe\u0301")
def test_spans_map_back_to_the_characters_the_term_came_from(text: str) -> None:
    for query in (False, True):
        found = list(spans(text, query=query))
        assert [t for t, _, _ in found] == (query_terms(text) if query else terms(text))
        for term, start, end in found:
            assert 0 <= start < end <= len(text)
            assert term in terms(text[start:end]), (text, term, text[start:end])


@SETTINGS
@given(TEXT)
def test_the_fast_path_equals_the_analyser(text: str) -> None:
    assert term_bytes(text) == [t.encode("utf-8") for t in terms(text)]


@SETTINGS
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_terms_equal_hashbag_tokens(text: str) -> None:
    assert terms(text) == tokens(text)
