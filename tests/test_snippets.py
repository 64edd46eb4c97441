"""The snippet rule (``hqltui.core.snippets``): where it starts, how it is cut, what it
quotes of a passage."""

from __future__ import annotations

from hqltui.core.ranking import Passage
from hqltui.core.snippets import answered_text, snippet
from producer.vault import Card


def card(title: str, body: str) -> Card:
    text = f"{title}\n\n{body}"
    return Card(name=title, path=f"{title}.hmd", title=title, header={}, body=body, text=text,
                content_hash="0" * 64, links=())


def test_it_starts_at_the_longest_query_word_as_a_whole_token() -> None:
    text = "Runs on boot. The kestrels hover; a kestrel on a calendar timer."
    assert snippet(text, "kestrel on calendar", 200, 0) == "…calendar timer."
    assert snippet(text, "kestrel", 200, 0) == "…kestrel on a calendar timer."  # not "kestrels"
    assert snippet(text, "absent words", 200, 0) == text
    assert snippet("A  b\n\n c\td", "x", 20) == "A b c d"  # whitespace collapsed


def test_a_start_inside_a_word_moves_to_the_next_one() -> None:
    text = "alpha bravo charlie delta echo"
    assert snippet(text, "echo", 200, 7) == "…delta echo"  # 7 before "echo" is inside "charlie"
    assert snippet("İstanbul and the kestrel", "kestrel", 200, 0) == "…kestrel"  # ı̇: 2 chars


def test_the_answered_text_is_the_passage_from_the_body_on_and_never_a_stale_one() -> None:
    shell = card("shell", "The shell reads commands.\n\nThe ulimit builtin sets limits.")
    at = shell.text.index("The ulimit")
    assert answered_text(shell, Passage(1, at, len(shell.text)), False) == \
        "The ulimit builtin sets limits."
    assert answered_text(shell, Passage(0, 0, 12), False) == shell.text[7:12]  # title dropped
    assert answered_text(shell, Passage(1, at, len(shell.text)), True) is None  # stale
    assert answered_text(shell, Passage(None, 0, 30), False) is None  # its card vector
    assert answered_text(shell, Passage(1, at, 10**6), False) is None  # outside the text


def test_bm25_snippets_find_folded_and_cjk_terms_at_their_original_characters() -> None:
    from hqltui.core.bm25_analyser import BM25_TERMS
    from hqltui.core.lexical import HASHBAG_TOKENS
    from hqltui.core.snippets import marked_spans
    from tests.multilingual_text import TEXTS

    latin = TEXTS["latin"]
    assert snippet(latin, "zurich", 200, 0, BM25_TERMS) == "…Zürich serves a naïve crème brûlée;" \
        " Ørsted and Łódź sit on the map."
    assert snippet(latin, "zurich", 200, 0, HASHBAG_TOKENS) == latin  # hashbag: no match
    japanese = TEXTS["japanese"]
    assert snippet(japanese, "北海道", 200, 0, BM25_TERMS).startswith("…北海道の湿原")
    nfd = TEXTS["nfd"]
    spans = marked_spans(nfd, {"cafe", "resume"}, BM25_TERMS)
    assert [nfd[a:b] for a, b in spans] == ["Cafe\u0301", "re\u0301sume\u0301"]
    wide = TEXTS["fullwidth"]
    assert [wide[a:b] for a, b in marked_spans(wide, {"fullwidth"}, BM25_TERMS)] == [
        "Ｆｕｌｌｗｉｄｔｈ"]
    bigrams = marked_spans(japanese, {"北海", "海道"}, BM25_TERMS)
    assert [japanese[a:b] for a, b in bigrams] == ["北海", "海道"]
