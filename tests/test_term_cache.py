"""The term-count cache: a warm load reads it, an edited vault never does.

Each test plants or damages the cache files itself (one per analyser: hashbag's
tokens, bm25's terms) and looks at what the arms score, so it shows which counts
a session really used (real files, real sessions, no timing).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hqltui.core import term_cache
from hqltui.core.bm25_analyser import BM25_TERMS
from hqltui.core.lexical import BM25, HASHBAG_TOKENS, Hashbag, TermCounts, token_bytes, tokens
from hqltui.core.session import Session
from producer.parse_cache import cache_file
from tests.helpers.vaults import write_cards

CARDS = {
    "owl": "# Barn owl\n\nThe barn owl hunts voles at night over meadows.\n",
    "heron": "# Grey heron\n\nA heron stands in shallow water, waiting for fish.\n",
    "wren": "# Wren\n\nA tiny brown bird with a loud song; the wren nests in hedges.\n",
}


def vault(tmp_path: Path) -> Path:
    return write_cards(tmp_path / "vault", CARDS)


def scores(session: Session, text: str) -> dict[str, list[float]]:
    return {arm: session.scores(text, arm).tolist() for arm in ("bm25", "hashbag")}


def fresh_scores(session: Session, text: str) -> dict[str, list[float]]:
    """What the arms score for ``text`` with counts made from the session's texts now."""
    texts = [c.text for c in session.vault.cards]
    counts = TermCounts(texts, HASHBAG_TOKENS)
    return {"bm25": BM25(TermCounts(texts, BM25_TERMS)).scores(text).tolist(),
            "hashbag": Hashbag(counts).exact(text, np.arange(counts.size)).tolist()}


ANALYSERS = (HASHBAG_TOKENS, BM25_TERMS)


def plant(session: Session, cache: Path, texts: list[str]) -> None:
    """Write counts made from ``texts`` under the key of the session's own snapshot, for
    both analysers."""
    hashes = [c.content_hash for c in session.vault.cards]
    for analyser in ANALYSERS:
        term_cache.save(term_cache.terms_file(session.root, cache, analyser),
                        term_cache.snapshot_key(hashes, analyser), TermCounts(texts, analyser))


def test_the_first_lexical_ranking_writes_the_cache_beside_the_parse_cache(
    tmp_path: Path,
) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    session = Session.load(root, cache_dir=cache)
    file = term_cache.terms_file(root, cache, BM25_TERMS)
    hashbag_file = term_cache.terms_file(root, cache)
    assert not file.exists()  # the counts are made when an arm first needs them
    session.rank("owl", "bm25")
    assert file.exists()
    assert not hashbag_file.exists()  # hashbag's counts stay lazy
    assert file.parent == cache_file(root, "parse", cache).parent
    assert file != cache_file(root, "parse", cache)
    session.rank("owl", "hashbag")
    assert hashbag_file.exists() and hashbag_file != file


def test_a_warm_load_scores_exactly_as_a_cold_one(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    cold = Session.load(root, cache_dir=cache)
    warm = Session.load(root, cache_dir=cache)
    for text in ("owl hunts", "heron fish water", "wren wren song"):
        assert scores(warm, text) == scores(cold, text) == fresh_scores(cold, text)


def test_a_matching_cache_is_what_the_arms_score_from(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    session = Session.load(root, cache_dir=cache)
    # Counts of other texts, planted under this snapshot's key: a load that reads the
    # cache scores them (which is how the tests below know a cache was NOT read).
    plant(session, cache, ["nothing here", "zebra zebra", "zebra"])
    warm = Session.load(root, cache_dir=cache)
    assert warm.scores("zebra", "bm25").tolist()[0] == 0.0
    assert warm.scores("zebra", "bm25").tolist()[1] > 0.0
    assert warm.scores("owl", "bm25").tolist() == [0.0, 0.0, 0.0]


def test_an_edited_card_never_scores_from_the_stale_cache(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    session = Session.load(root, cache_dir=cache)
    plant(session, cache, ["zebra", "zebra zebra", "nothing here"])
    card = root / "wren.md"
    card.write_text(CARDS["wren"].replace("hedges", "zebra stripes"), encoding="utf-8")
    stat = card.stat()
    os.utime(card, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    edited = Session.load(root, cache_dir=cache)
    for text in ("zebra", "owl hunts", "wren hedges"):
        assert scores(edited, text) == fresh_scores(edited, text)
    assert edited.scores("zebra", "bm25").tolist()[2] > 0.0  # the edit is what scores
    # and the cache now holds the edited snapshot's counts
    assert scores(Session.load(root, cache_dir=cache), "zebra") == scores(edited, "zebra")


def test_an_added_or_removed_card_never_scores_from_the_stale_cache(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    session = Session.load(root, cache_dir=cache)
    plant(session, cache, ["zebra", "zebra zebra", "nothing here"])
    (root / "heron.md").unlink()
    removed = Session.load(root, cache_dir=cache)
    assert removed.names == ("owl", "wren")
    assert scores(removed, "owl wren") == fresh_scores(removed, "owl wren")
    plant(removed, cache, ["zebra", "zebra"])
    (root / "kite.md").write_text("# Kite\n\nA red kite circles.\n", encoding="utf-8")
    added = Session.load(root, cache_dir=cache)
    assert scores(added, "kite owl zebra") == fresh_scores(added, "kite owl zebra")


def test_a_garbage_cache_file_only_costs_tokenising(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    cold = Session.load(root, cache_dir=cache)
    for analyser in ANALYSERS:
        term_cache.terms_file(root, cache, analyser).write_bytes(b"not a pickle at all")
    broken = Session.load(root, cache_dir=cache)
    assert scores(broken, "owl heron") == scores(cold, "owl heron")
    assert not [w for w in broken.warnings if w.kind == "arm"]


def test_a_cache_whose_arrays_do_not_fit_is_not_used(tmp_path: Path) -> None:
    root, cache = vault(tmp_path), tmp_path / "cache"
    cold = Session.load(root, cache_dir=cache)
    from producer.parse_cache import save_entries

    for analyser in ANALYSERS:
        file = term_cache.terms_file(root, cache, analyser)
        key = term_cache.snapshot_key([c.content_hash for c in cold.vault.cards], analyser)
        save_entries(file, term_cache.FORMAT, {  # a term id beyond the vocabulary
            "key": key, "vocab": [b"owl"], "terms": np.array([0, 5]), "tf": np.array([1, 1]),
            "ptr": np.array([0, 1, 2, 2]),
        })
    assert scores(Session.load(root, cache_dir=cache), "owl") == scores(cold, "owl")


def test_counts_read_back_from_a_cache_equal_the_counts_made() -> None:
    texts = ["owl owl heron", "", "naïve café wren", "a b c", "किताब owl", "北海道の鶴"]
    for analyser in ANALYSERS:
        made = TermCounts(texts, analyser)
        vocab = sorted(made.vocab, key=made.vocab.__getitem__)
        back = TermCounts.from_arrays({t: i for i, t in enumerate(vocab)},
                                      made.terms.astype(np.int32), made.tf.astype(np.int32),
                                      made.ptr, analyser)
        assert back.vocab == made.vocab and back.analyser is analyser
        for name in ("terms", "tf", "ptr", "docs", "doc_len"):
            assert getattr(back, name).tobytes() == getattr(made, name).tobytes(), name
        assert back.terms.dtype == np.int64


def test_each_analyser_has_its_own_key_and_file(tmp_path: Path) -> None:
    hashes = ["a1", "b2"]
    assert term_cache.snapshot_key(hashes) != term_cache.snapshot_key(hashes, BM25_TERMS)
    assert term_cache.terms_file(tmp_path) != term_cache.terms_file(tmp_path, None, BM25_TERMS)


# Mostly ASCII with the non-ASCII cases that matter: accents, combining marks, the
# Kelvin sign, dotted capital I, final sigma, typographic quotes, replacement chars.
PIECES = st.sampled_from([
    "owl", "OWL", "Owl", "a", "B", "x2", "42", " ", "\n", "-", "_", "'", "’", "“", "”", "\ufffd",
    "é", "É", "e\u0301", "naïve", "\u212a", "İ", "ΣΊΣΥΦΟΣ", "σ", "Σ", "ß", "ǅ", "ि", "किताब",
    "\u0307", "½", "Ⅻ", "٣", "\u200b", "\u00a0", "ﬁ",
])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=40).map("".join))
def test_the_fast_tokeniser_is_the_rule_on_any_text(text: str) -> None:
    assert token_bytes(text) == [t.encode("utf-8") for t in tokens(text)]
