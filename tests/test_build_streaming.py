"""The streaming build: card digests instead of texts, chunked embedding, whole-text hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from producer import build as build_mod
from producer.card_digests import DigestCache, digest_vault
from producer.index_reader import read_index
from producer.vault import load_vault
from tests.helpers.builds import STAMP, Counting, make_vault, run

REPO = Path(__file__).resolve().parent.parent
BIRDS = REPO / "fixtures" / "birds"


def digests_of_load_vault(root: Path) -> tuple[list[tuple[str, str, str]], list[str]]:
    vault = load_vault(root)
    return [(c.name, c.path, c.content_hash) for c in vault.cards], vault.warnings


def rows(digest) -> list[tuple[str, str, str]]:
    return [(c.name, c.path, c.content_hash) for c in digest.cards]


def messy_vault(root: Path) -> Path:
    make_vault(root, n=3)
    (root / "untitled.md").write_text("no title and no heading: the name is the title\n")
    (root / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (root / "rel.md").write_text(
        "---\ntitle: Rel\nmetadata:\n  knowledge:\n    type: Relation\n"
        "    relation: {source: card0, target: nowhere}\n---\nbody\n"
    )
    return root


@pytest.mark.parametrize("which", ["birds", "messy"])
def test_digests_equal_what_load_vault_reads(which, tmp_path):
    root = BIRDS if which == "birds" else messy_vault(tmp_path / "v")
    cards, warnings = digests_of_load_vault(root)
    cold = digest_vault(root)
    assert (rows(cold), cold.warnings) == (cards, warnings)
    cache_dir = tmp_path / "cache"
    digest_vault(root, DigestCache(root, cache_dir))
    warm = digest_vault(root, DigestCache(root, cache_dir))  # every entry from the cache
    assert (rows(warm), warm.warnings) == (cards, warnings)
    if which == "messy":
        assert any("broken.md" in w and "document skipped" in w for w in warnings)
        assert any(w.startswith("rel: declares knowledge.type: Relation") for w in warnings)


def test_a_cached_untitled_card_is_rehashed_when_its_name_changes(tmp_path):
    root = messy_vault(tmp_path / "v")
    (root / "a").mkdir()
    (root / "untitled.md").rename(root / "a" / "untitled.md")
    cache_dir = tmp_path / "cache"
    before = digest_vault(root, DigestCache(root, cache_dir)).by_name["untitled"]
    (root / "b").mkdir()
    (root / "b" / "untitled.md").write_text("another card of the same stem\n")
    # Both are now named by their paths, and the title (= the name) is in the text.
    warm = digest_vault(root, DigestCache(root, cache_dir))
    assert rows(warm) == digests_of_load_vault(root)[0]
    assert warm.by_name["a/untitled"].content_hash != before.content_hash


def test_the_hash_covers_the_whole_text_and_the_embedder_gets_it(tmp_path):
    root = make_vault(tmp_path / "v", n=2)
    body = "word " * 400_000  # 2 MB: far beyond 256 tokens
    (root / "long.md").write_text(f"---\ntitle: Long\n---\n{body}\n")
    counting = Counting()
    out = tmp_path / "i.sqlite"
    run(root, out, counting, built_at=STAMP)
    text = load_vault(root).by_name["long"].text
    assert text in counting.texts  # cut to its token prefix inside the local embedder only
    stored = {c.name: c.content_hash for c in read_index(out).cards}
    assert stored["long"] == hashlib.sha256(text.encode()).hexdigest()


def test_chunks_change_nothing_in_the_file(tmp_path, monkeypatch):
    root = messy_vault(tmp_path / "v")
    whole, chunked = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    run(root, whole, built_at=STAMP)
    monkeypatch.setattr(build_mod, "CHUNK", 2)
    counting = Counting()
    events = run(root, chunked, counting, built_at=STAMP).events
    assert whole.read_bytes() == chunked.read_bytes()
    done = [e["done"] for e in events if e["event"] == "progress"]
    assert done == [2, 4, 5]  # progress counts every chunk's texts once, in order
    # An incremental build of one edited card reuses the rest, also chunked.
    (root / "card1.md").write_text("---\ntitle: Card 1\n---\nedited\n")
    again = Counting()
    result = run(root, chunked, again, built_at=STAMP)
    assert (result.embedded, result.reused) == (1, 4) and len(again.texts) == 1
