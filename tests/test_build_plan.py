"""The build's plan, checked without embedding anything: what is kept, embedded and
removed, and the batch of every text to embed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from producer.build_options import BuildOptions
from producer.build_plan import Identity, Previous, plan_build
from producer.card_digests import card_parts, digest_vault
from producer.embedders.local import packaged_embedder
from producer.index_format import CardRow, IndexContents, MetaRow, ModelRow, QueryRow, pack
from producer.index_reader import read_index
from producer.index_writer import write_index
from producer.passages import DEFAULT_RECIPE
from tests.helpers.vaults import write_cards

STAMP = "2026-01-01T00:00:00+00:00"
MODEL = Identity("fake-embed", "r1", 4)


def unit(seed: int) -> bytes:
    v = np.random.default_rng(seed).standard_normal(4)
    return pack(v / np.linalg.norm(v))


def make_vault(root: Path, bodies: dict[str, str]) -> Path:
    return write_cards(root, {name: f"---\ntitle: {name}\n---\n{body}\n"
                              for name, body in bodies.items()})


def no_tokenizer():  # noqa: ANN201
    raise AssertionError("the tokenizer was asked for")


def plan(root: Path, previous: Previous | None = None, warnings: list | None = None, **kw):  # noqa: ANN001, ANN201
    identity = kw.pop("identity", MODEL)
    options = BuildOptions(vault=str(root), built_at=STAMP, **kw)
    return plan_build(
        digest_vault(root),
        previous or Previous(None),
        options,
        identity,
        vault_name="v",
        batch_cards=2,
        offsets=no_tokenizer,
        warn=(warnings if warnings is not None else []).append,
    )


def stored_index(root: Path, out: Path, queries: dict[str, bytes] | None = None) -> Previous:
    """An index holding every card of ``root`` as it is now, with a unit vector each."""
    vault = digest_vault(root)
    cards = [CardRow(c.name, c.path, c.content_hash, unit(i)) for i, c in enumerate(vault.cards)]
    write_index(
        out,
        IndexContents(
            model=ModelRow("fake-embed", "r1", 4),
            meta=MetaRow(vault="v", built_at=STAMP),
            cards=cards,
            queries=[QueryRow(t, b) for t, b in sorted((queries or {}).items())],
        ),
    )
    return Previous(read_index(out))


def test_a_first_build_embeds_every_card_in_batches_of_changed_cards(tmp_path):
    root = make_vault(tmp_path / "v", {f"c{i}": f"body {i}" for i in range(5)})
    p = plan(root, queries=["owl", "heron"])
    assert [[c.name for c in b.cards] for b in p.batches] == [["c0", "c1"], ["c2", "c3"], ["c4"], []]
    assert [(t.kind, t.name, t.batch) for t in p.texts] == [
        ("card", "c0", 0), ("card", "c1", 0), ("card", "c2", 1), ("card", "c3", 1),
        ("card", "c4", 2), ("query", "heron", 3), ("query", "owl", 3),
    ]  # fmt: skip
    assert [t.label for t in p.texts[-2:]] == ["query 'heron'", "query 'owl'"]
    assert (p.total, p.cards_to_embed, p.removed, p.up_to_date) == (7, 5, 0, False)
    assert p.start_event() == {
        "event": "start", "cards": 5, "total": 7, "to_embed": 5, "reused": 0,
        "cards_shared": 0, "queries": 2,
    }  # fmt: skip


def test_a_text_shared_by_several_cards_is_planned_once_and_copied(tmp_path):
    """gzip, gunzip and zcat installed as one page: one embedding, two copies, wherever
    their batches fall."""
    root = tmp_path / "v"
    make_vault(root, {"c0": "body 0"})
    for name in ("gunzip", "gzip", "zcat"):
        (root / f"{name}.md").write_text("# gzip\n\nCompress or expand files.\n")
    p = plan(root)
    embedded = [(t.kind, t.name) for t in p.texts]
    copies = [(t.kind, t.batch) for b in p.batches for t in b.copies]
    assert len(embedded) == 2 and len(copies) == 2 and p.copies("card") == 2
    assert [b for _, b in copies] == [1, 1] and p.batches[0].copies == ()
    assert p.start_event()["cards_shared"] == 2 and p.cards_to_embed == 4


def test_unchanged_cards_are_kept_and_do_not_count_towards_a_batch(tmp_path):
    root = make_vault(tmp_path / "v", {f"c{i}": f"body {i}" for i in range(5)})
    previous = stored_index(root, tmp_path / "i.sqlite", {"owl": unit(9)})
    (root / "c1.md").write_text("---\ntitle: c1\n---\nedited\n")
    (root / "c4.md").unlink()
    (root / "c5.md").write_text("---\ntitle: c5\n---\nnew\n")
    p = plan(root, previous)
    assert sorted(p.kept_cards) == ["c0", "c2", "c3"]
    assert p.kept_cards["c0"] == previous.contents.cards[0].embedding
    assert [(t.name, t.batch) for t in p.texts] == [("c1", 0), ("c5", 0)]
    assert [[c.name for c in b.cards] for b in p.batches] == [["c0", "c1", "c2", "c3", "c5"]]
    assert (p.removed, p.queries, p.kept_queries) == (1, ["owl"], {"owl": unit(9)})


def test_nothing_changed_is_up_to_date_and_plans_no_text(tmp_path):
    root = make_vault(tmp_path / "v", {"a": "one", "b": "two"})
    p = plan(root, stored_index(root, tmp_path / "i.sqlite"))
    assert (p.up_to_date, p.total, p.texts) == (True, 0, [])


def test_another_model_or_full_keeps_nothing(tmp_path):
    root = make_vault(tmp_path / "v", {"a": "one", "b": "two"})
    previous = stored_index(root, tmp_path / "i.sqlite", {"owl": unit(9)})
    other = plan(root, previous, identity=Identity("fake-embed", "r2", 4))
    full = plan(root, previous, full=True)
    for p in (other, full):
        assert (p.reusable, p.kept_cards, p.kept_queries, p.up_to_date) == (False, {}, {}, False)
        assert [t.name for t in p.texts] == ["a", "b", "owl"]  # stored queries stay


def test_drop_queries_warns_with_what_it_drops(tmp_path):
    root = make_vault(tmp_path / "v", {"a": "one"})
    previous = stored_index(root, tmp_path / "i.sqlite", {"owl": unit(9), "heron": unit(8)})
    warnings: list[str] = []
    p = plan(root, previous, warnings, queries=["owl"], drop_queries=True)
    assert p.queries == ["owl"] and p.texts == []
    assert warnings == ["--drop-queries: dropping 1 stored query: 'heron'"]


def test_rescued_queries_are_planned_when_the_old_index_is_unreadable(tmp_path):
    root = make_vault(tmp_path / "v", {"a": "one"})
    p = plan(root, Previous(None, ["owl"]), full=True)
    assert [(t.kind, t.name) for t in p.texts] == [("card", "a"), ("query", "owl")]


@pytest.fixture(scope="module")
def minilm():
    return packaged_embedder()


def test_passages_are_planned_with_their_token_counts(tmp_path, minilm):
    long = "\n\n".join(f"## Part {i}\n\n" + "the owl hunts at night " * 60 for i in range(3))
    root = make_vault(tmp_path / "v", {"long": long, "short": "A heron wades."})
    asked: list[bool] = []

    def offsets():  # noqa: ANN202
        asked.append(True)
        return minilm.token_offsets

    options = BuildOptions(vault=str(root), built_at=STAMP, passages=True)
    p = plan_build(digest_vault(root), Previous(None), options, MODEL, vault_name="v",
                   batch_cards=512, offsets=offsets, warn=[].append)  # fmt: skip
    assert asked == [True]
    passages = [t for t in p.texts if t.kind == "passage"]
    cut = p.cuts["long"]
    assert [t.ordinal for t in passages] == list(range(len(cut.spans))) and len(cut.spans) > 1
    assert p.cuts["short"].whole and all(t.name == "long" for t in passages)
    # Each count is the real tokenizer's, on the passage's span of the card's text.
    text = card_parts(root, p.vault.by_name["long"])[0]
    assert passages[0].tokens == DEFAULT_RECIPE.window
    for t in passages:
        a, b = cut.spans[t.ordinal]
        assert t.tokens == len(minilm.token_offsets(text[a:b], 10_000))
    assert p.start_event()["passages_to_embed"] == len(passages)
