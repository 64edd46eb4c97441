"""The build pipeline: incremental reuse, up to date, determinism, queries, verify, inspect."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from producer import build as build_mod
from producer.build import BuildError, BuildOptions, build, same_vault, vault_identity
from producer.embedders import EmbedError
from producer.embedders.local import DEFAULT_MODEL_ID, local_revision, packaged_embedder
from producer.index_format import (
    CardRow,
    IndexContents,
    MetaRow,
    ModelRow,
    StoreError,
    pack,
    unpack,
)
from producer.index_reader import read_index
from producer.index_writer import leftovers, write_index
from producer.vault import load_vault
from producer.verify import format_inspect, inspect, verify
from tests.helpers.builds import HTTP, STAMP, Counting, make_vault, run


@pytest.fixture
def vault(tmp_path):
    return make_vault(tmp_path / "v")


def blobs(out: Path) -> dict[str, bytes]:
    return {c.name: c.embedding for c in read_index(out).cards}


def test_editing_one_card_embeds_exactly_one_text(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    first = Counting()
    r = run(vault, out, first, built_at=STAMP)
    assert (r.embedded, r.reused, r.up_to_date) == (5, 0, False)
    assert len(first.texts) == 5
    before = blobs(out)
    (vault / "card2.md").write_text("---\ntitle: Card 2\n---\n# Card 2\n\nEdited.\n")
    second = Counting()
    r = run(vault, out, second)
    assert len(second.texts) == 1 and "Edited." in second.texts[0]
    assert (r.embedded, r.reused, r.removed) == (1, 4, 0)
    after = blobs(out)
    assert after["card2"] != before["card2"]
    assert {k: v for k, v in after.items() if k != "card2"} == {
        k: v for k, v in before.items() if k != "card2"
    }
    start = next(e for e in r.events if e["event"] == "start")
    assert (start["cards"], start["to_embed"], start["reused"]) == (5, 1, 4)


def test_unchanged_vault_is_up_to_date_without_torch_and_untouched(vault, tmp_path, monkeypatch):
    out = tmp_path / "i.sqlite"
    v = load_vault(vault)
    rng = np.random.default_rng(0)

    def unit():
        x = rng.standard_normal(384)
        return pack(x / np.linalg.norm(x))

    write_index(
        out,
        IndexContents(
            ModelRow(DEFAULT_MODEL_ID, local_revision(), 384),
            MetaRow(vault=vault_identity(str(vault)), built_at=STAMP),
            [CardRow(c.name, c.path, c.content_hash, unit()) for c in v.cards],
        ),
    )
    before = (out.read_bytes(), out.stat().st_mtime_ns)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)

    def no_model(spec):
        raise AssertionError("the model must not be loaded")

    events: list[dict] = []
    r = build(
        BuildOptions(vault=str(vault), out=str(out)), events.append, embedder_factory=no_model
    )
    assert r.up_to_date and r.reused == 5 and r.embedded == 0
    assert events[-1]["event"] == "final" and events[-1]["up_to_date"] is True
    assert (out.read_bytes(), out.stat().st_mtime_ns) == before
    assert not Path(f"{out}.lock").exists() and leftovers(out) == []


def test_fresh_full_builds_are_byte_identical(vault, tmp_path):
    a, b = tmp_path / "a" / "i.sqlite", tmp_path / "b" / "i.sqlite"
    run(vault, a, built_at=STAMP, full=True, queries=["q two", "q one"])
    run(vault, b, built_at=STAMP, full=True, queries=["q one", "q two"])
    assert a.read_bytes() == b.read_bytes()


def test_full_reembeds_everything(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, built_at=STAMP, queries=["q"])
    c = Counting()
    r = run(vault, out, c, full=True)
    assert len(c.texts) == 6 and r.embedded == 5 and r.queries_embedded == 1


def test_queries_are_reused_like_cards_and_kept(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, queries=["alpha"])
    c = Counting()
    r = run(vault, out, c, queries=["beta", "alpha"])
    assert c.texts == ["beta"] and r.queries == 2 and r.queries_embedded == 1
    assert [q.text for q in read_index(out).queries] == ["alpha", "beta"]
    c = Counting()
    assert run(vault, out, c, queries=["alpha"]).up_to_date and c.texts == []
    r = run(vault, out, Counting(), queries=["beta"], drop_queries=True)
    assert [q.text for q in read_index(out).queries] == ["beta"] and not r.up_to_date


def test_removed_card_and_new_stamp_rewrite_without_embedding(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, built_at=STAMP)
    (vault / "card4.md").unlink()
    c = Counting()
    r = run(vault, out, c)
    assert c.texts == [] and r.removed == 1 and not r.up_to_date
    assert sorted(blobs(out)) == ["card0", "card1", "card2", "card3"]
    c = Counting()
    r = run(vault, out, c, built_at="2026-02-02T00:00:00+00:00")
    assert c.texts == [] and not r.up_to_date
    assert read_index(out).meta.built_at == "2026-02-02T00:00:00+00:00"
    assert run(vault, out, Counting(), built_at="2026-02-02T00:00:00+00:00").up_to_date


def test_another_model_or_revision_reembeds(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out)
    c = Counting(revision="r2")
    r = run(vault, out, c, revision="r2")
    assert r.embedded == 5 and len(c.texts) == 5
    assert read_index(out).model.revision == "r2"


def test_flags_override_the_vault_table_field_by_field(vault, tmp_path):
    (vault / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n'
        '[semantics.embedder]\nprovider = "http"\nmodel = "fake-embed"\nrevision = "r1"\n'
        'endpoint = "http://127.0.0.1:9/v1/embeddings"\n'
    )
    c = Counting(revision="r9")
    r = build(
        BuildOptions(vault=str(vault), revision="r9"), embedder_factory=lambda s: c, environ={}
    )
    assert r.out == vault / ".hql" / "index.sqlite"
    model = read_index(r.out).model
    assert (model.id, model.revision) == ("fake-embed", "r9")


def test_unset_key_variable_refused_before_any_card_is_read(vault, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a card was read")

    monkeypatch.setattr(build_mod, "digest_vault", boom)
    opts = BuildOptions(
        vault=str(vault), out=str(tmp_path / "i.sqlite"), api_key_env="NOPE_KEY", **HTTP
    )
    with pytest.raises(EmbedError, match=r"\$NOPE_KEY is unset or empty"):
        build(opts, environ={})
    with pytest.raises(EmbedError, match="--offline refuses the network"):
        build(BuildOptions(vault=str(vault), out=str(tmp_path / "i.sqlite"), offline=True, **HTTP))


def test_a_bad_vector_from_the_embedder_leaves_the_index_alone(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, built_at=STAMP)
    before = out.read_bytes()
    (vault / "card1.md").write_text("changed\n")

    class Zero(Counting):
        def embed(self, texts, on_batch=None):
            return np.zeros((len(texts), 8))

    with pytest.raises(EmbedError, match="card `card1`: every component is zero"):
        run(vault, out, Zero())
    assert out.read_bytes() == before and leftovers(out) == []


def test_empty_vault_and_missing_vault(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BuildError, match="no documents"):
        run(tmp_path / "empty", tmp_path / "i.sqlite")
    with pytest.raises(BuildError, match="absent: does not exist"):
        run(tmp_path / "absent", tmp_path / "i.sqlite")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BuildError, match="file: not a directory"):
        run(tmp_path / "file", tmp_path / "i.sqlite")


def test_vault_identity():
    assert vault_identity("fixtures/birds") == "fixtures/birds"
    assert vault_identity("fixtures/birds/") == "fixtures/birds"
    assert vault_identity("./fixtures/birds") == "birds"
    assert vault_identity("fixtures/../fixtures/birds") == "birds"
    assert vault_identity(str(Path("fixtures/birds").resolve())) == "birds"
    assert vault_identity(".") == Path.cwd().name
    assert same_vault("fixtures/birds", "/elsewhere/birds")
    assert not same_vault("fixtures/birds", "/elsewhere/owls")


# ----------------------------------------------------------------- verify and inspect


def test_verify_lists_every_problem(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, queries=["q"])
    assert verify(vault, out).clean
    (vault / "card0.md").write_text("changed\n")  # stale
    (vault / "card9.md").write_text("new\n")  # absent
    (vault / "card1.md").unlink()  # orphan
    conn = sqlite3.connect(out)
    conn.execute("UPDATE card SET embedding = ? WHERE name = 'card2'", (b"\0" * 12,))
    conn.execute("UPDATE card SET embedding = ? WHERE name = 'card3'", (pack([0.5] * 8),))
    conn.execute("UPDATE model SET metric = 'dot', normalized = 0")
    conn.execute("UPDATE index_meta SET vault = 'elsewhere/owls'")
    conn.commit()
    conn.close()
    report = verify(vault, out)
    kinds = [p.kind for p in report.problems]
    assert kinds == [
        "foreign_vault",
        "stale",
        "absent",
        "orphan",
        "metric",
        "not_normalized",
        "blob_length",
        "not_unit",
    ]
    messages = [p.message for p in report.problems]
    # the reader's wording, from the one validator (producer/index_checks.py)
    assert "`card2` has a 12-byte vector where 32 bytes were declared" in messages
    assert "`card3` has a stored vector that is not finite and unit length" in messages
    # and the reader's wording of stale, absent and orphan cards
    assert "`card9` is absent from the index, so left out of the semantic ranking" in messages
    assert "`card1` is in the index and no longer in the vault" in messages
    assert ("`card0` is stale (changed since the index was built); its semantic score "
            "describes the old text") in messages
    assert report.to_json()["clean"] is False


def test_verify_unknown_schema_and_absent_index(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out)
    conn = sqlite3.connect(out)
    conn.execute("UPDATE index_meta SET schema_version = 7")
    conn.commit()
    conn.close()
    (problem,) = verify(vault, out).problems
    assert problem.message == "unknown index schema: 7, and this tool knows 1"
    (problem,) = verify(vault, tmp_path / "none.sqlite").problems
    assert problem.kind == "absent_index"
    garbage = tmp_path / "g.sqlite"
    garbage.write_bytes(b"garbage" * 1000)
    with pytest.raises(StoreError):
        verify(vault, garbage)


def test_inspect(vault, tmp_path):
    out = tmp_path / "i.sqlite"
    run(vault, out, built_at=STAMP, queries=["b q", "a q"])
    info = inspect(out)
    assert info == {
        "schema": 1,
        "vault": vault_identity(str(vault)),
        "built_at": STAMP,
        "tool": "hql-semantics 0.1.0",
        "model": "fake-embed",
        "revision": "r1",
        "dimensions": 8,
        "metric": "cosine",
        "normalized": True,
        "cards": 5,
        "queries": ["a q", "b q"],
    }
    text = format_inspect(info).splitlines()
    assert text[0] == "schema        1"
    assert text[8] == "normalized    true"
    assert text[-2:] == ["              a q", "              b q"]


# ----------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def minilm():
    return packaged_embedder()


def test_real_model_full_builds_identical_and_incremental_within_1e6(tmp_path, minilm):
    src = make_vault(tmp_path / "birds", n=12)
    for i in range(12):  # more realistic, varied lengths
        (src / f"card{i}.md").write_text(
            f"---\ntitle: Bird {i}\ntags: [owl, night]\n---\n# Bird {i}\n\n"
            + "This bird hunts quietly after dark among old trees. " * (i + 1)
        )

    def real(**kw):
        return build(
            BuildOptions(vault=str(src), built_at=STAMP, queries=["night hunting birds"], **kw),
            embedder_factory=lambda spec: minilm,
        )

    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    real(out=str(a), full=True)
    real(out=str(b), full=True)
    assert a.read_bytes() == b.read_bytes()
    (src / "card3.md").write_text("---\ntitle: Bird 3\n---\n# Bird 3\n\nA heron in a marsh.\n")
    inc = real(out=str(a))
    assert inc.embedded == 1
    real(out=str(b), full=True)
    ia, ib = read_index(a), read_index(b)
    assert [c.name for c in ia.cards] == [c.name for c in ib.cards]
    assert [(c.path, c.content_hash) for c in ia.cards] == [
        (c.path, c.content_hash) for c in ib.cards
    ]
    assert ia.model == ib.model and ia.meta == ib.meta
    for ca, cb in zip(ia.cards, ib.cards, strict=True):
        assert np.abs(unpack(ca.embedding, 384) - unpack(cb.embedding, 384)).max() < 1e-6
    assert verify(src, a).clean
