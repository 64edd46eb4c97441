"""bfloat16, opt-in: the recipe, the revision, the refusal, the reader, the tolerances."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hqltui.core.session import Session
from producer.build import BuildOptions, build
from producer.config import ConfigError, EmbedderConfig, load_producer_config
from producer.embedders import EmbedderSpec, EmbedError, check_spec, identity
from producer.embedders import local as local_mod
from producer.embedders.local import (
    BF16_REFUSED,
    CPU_BF16_ENV,
    RECIPE,
    TOLERANCES,
    default_model_dir,
    local_revision,
    recipe_for,
    revision_for,
)
from producer.index_format import unpack
from producer.index_reader import read_index
from tests.conftest import force_cpu_bf16
from tests.helpers.vaults import write_cards

REPO = Path(__file__).resolve().parent.parent
BIRDS_INDEX = REPO / "fixtures" / "birds" / ".hql" / "index.sqlite"
STAMP = "2026-01-01T00:00:00+00:00"
QUERY = "owls hunting at night"


def test_the_float32_recipe_is_unchanged_and_names_no_precision():
    assert recipe_for("float32") is RECIPE
    assert json.dumps(RECIPE, sort_keys=True, separators=(",", ":")) == (
        '{"max_tokens":256,"normalise":"l2","pooling":"mean"}'
    )
    assert recipe_for("bfloat16") == {**RECIPE, "precision": "bfloat16"}
    assert local_revision() == revision_for(default_model_dir())
    assert local_revision(precision="bfloat16") == revision_for(
        default_model_dir(), recipe_for("bfloat16")
    )
    assert local_revision(precision="bfloat16") != local_revision()


def test_the_committed_birds_index_keeps_its_revision():
    assert read_index(BIRDS_INDEX).model.revision == local_revision()


def test_precision_in_the_table_and_its_refusals(tmp_path):
    (tmp_path / "hql.toml").write_text('[semantics.embedder]\nprecision = "bfloat16"\n')
    assert load_producer_config(tmp_path).embedder.precision == "bfloat16"
    (tmp_path / "hql.toml").write_text('[semantics.embedder]\nprecision = "int4"\n')
    error = load_producer_config(tmp_path).errors["semantics.embedder"]
    assert error.endswith("unknown precision `int4`; accepted: float32, bfloat16, int8")
    (tmp_path / "hql.toml").write_text('[semantics.embedder]\nruntime = "tensorrt"\n')
    error = load_producer_config(tmp_path).errors["semantics.embedder"]
    assert error.endswith("unknown runtime `tensorrt`; accepted: auto, torch, onnxruntime")
    with pytest.raises(ConfigError, match="`precision` applies to the `local` provider only"):
        EmbedderConfig(
            provider="http", endpoint="http://x", model="m", revision="r", precision="bfloat16"
        ).check()
    with pytest.raises(EmbedError, match="needs a model read from files"):
        identity(EmbedderSpec(model="someone/model", revision="0" * 40, precision="bfloat16"))


def test_cpu_detection_reads_the_flags(tmp_path, monkeypatch, cpu_bf16):
    monkeypatch.delenv(CPU_BF16_ENV, raising=False)
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n")
    plain = tmp_path / "plain"
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n")
    assert local_mod._cpuinfo_has_bf16(str(x86))
    assert local_mod._cpuinfo_has_bf16(str(arm))
    assert not local_mod._cpuinfo_has_bf16(str(plain))
    assert not local_mod._cpuinfo_has_bf16(str(tmp_path / "absent"))
    cpu_bf16(False)
    assert not local_mod.native_bf16()
    cpu_bf16(True)
    assert local_mod.native_bf16()


def write_vault(root: Path) -> Path:
    texts = {
        "owl": "Owls hunt small mammals in the dark, guided by hearing.",
        "heron": "Herons stand still in shallow water and spear fish.",
        "swift": "Swifts eat, drink and even sleep while flying. " * 30,
        "wren": "A tiny brown bird with a loud song.",
    }
    write_cards(root, {name: f"---\ntitle: {name.title()}\n---\n# {name.title()}\n\n{body}\n"
                       for name, body in texts.items()})
    (root / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n')
    return root


def test_bfloat16_refused_in_one_line_where_the_cpu_lacks_it(tmp_path, cpu_bf16):
    vault = write_vault(tmp_path / "v")
    cpu_bf16(False)  # here and in the child process, whatever the host's CPU
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "producer",
            "build",
            "--vault",
            str(vault),
            "--precision",
            "bfloat16",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 1
    assert out.stderr.splitlines() == [f"hql-semantics: {BF16_REFUSED}"]
    assert not (vault / ".hql" / "index.sqlite").exists()
    with pytest.raises(EmbedError, match="native bf16"):
        check_spec(EmbedderSpec(precision="bfloat16"), {})


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The same vault built in float32 and in bfloat16 (the CPU seam says bf16 is native)."""
    mp = pytest.MonkeyPatch()
    force_cpu_bf16(mp, True)
    base = tmp_path_factory.mktemp("precision")
    vault = write_vault(base / "v")
    f32, bf16 = base / "f32.sqlite", vault / ".hql" / "index.sqlite"
    build(BuildOptions(vault=str(vault), out=str(f32), built_at=STAMP, queries=[QUERY]))
    build(BuildOptions(vault=str(vault), precision="bfloat16", built_at=STAMP, queries=[QUERY]))
    yield vault, read_index(f32), read_index(bf16), mp
    mp.undo()
    local_mod._cpuinfo_has_bf16.cache_clear()


def test_a_bfloat16_build_records_its_revision_and_stays_within_its_tolerance(builds):
    _, f32, bf16, _ = builds
    assert f32.model.revision == local_revision()
    assert bf16.model.revision == local_revision(precision="bfloat16")
    tol = TOLERANCES["bfloat16"]
    for a, b in zip(f32.cards + f32.queries, bf16.cards + bf16.queries, strict=True):
        va, vb = unpack(a.embedding, 384).astype(np.float64), unpack(b.embedding, 384)
        assert np.abs(va - vb).max() <= tol.rebuild
        assert float(va @ vb) >= tol.cosine
    assert [c.content_hash for c in f32.cards] == [c.content_hash for c in bf16.cards]


def test_an_unchanged_bfloat16_vault_is_up_to_date_and_a_float32_build_reembeds(builds):
    vault, *_ = builds
    again = build(BuildOptions(vault=str(vault), precision="bfloat16"))
    assert again.up_to_date
    # The precision is part of the revision: the float32 build does not reuse bf16 vectors.
    out = vault.parent / "other.sqlite"
    build(BuildOptions(vault=str(vault), precision="bfloat16", out=str(out), built_at=STAMP))
    changed = build(BuildOptions(vault=str(vault), out=str(out)))
    assert changed.embedded == 4 and changed.revision == local_revision()


def test_the_app_embeds_live_in_the_index_precision(builds, tmp_path):
    vault, _, bf16, mp = builds
    stored = unpack(next(q.embedding for q in bf16.queries if q.text == QUERY), 384)
    session = Session.load(vault, cache_dir=tmp_path / "cache")
    from hqltui.core.semantic import query_vector

    live = query_vector(session.index, session.vault, session.config, QUERY, stored=False)
    assert live.source == "live:local", live.refusal
    tol = TOLERANCES["bfloat16"]
    assert np.abs(live.vector - stored).max() <= tol.live
    assert float(live.vector.astype(np.float64) @ stored) >= tol.cosine

    force_cpu_bf16(mp, False)
    try:
        ranking = Session.load(vault, cache_dir=tmp_path / "cache2").rank(
            "owls in the dark", "semantic"
        )
    finally:
        force_cpu_bf16(mp, True)
    assert ranking.refusal is not None
    assert "the index was embedded in bfloat16; bfloat16 needs a CPU with native bf16" in (
        ranking.refusal.message
    )
