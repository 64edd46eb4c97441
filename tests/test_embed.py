"""normalise(), the embedder spec, and the local embedder (revision, recipe, real model)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from producer.config import ConfigError, EmbedderConfig
from producer.embedders import (
    EmbedderSpec,
    EmbedError,
    check_spec,
    embed_query,
    embed_texts,
    identity,
    local,
    normalise,
)

# ----------------------------------------------------------------- normalise


def test_normalised_pair_dot_is_their_cosine():
    a, b = np.array([3.0, 4.0, 0.0]), np.array([1.0, 2.0, 2.0])
    na, nb = normalise(np.stack([a, b]))
    cosine = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    assert abs(float(na @ nb) - cosine) < 1e-7
    assert na.dtype == np.float32


def test_non_unit_vector_becomes_unit():
    v = normalise([2.0, 0.0, 0.0, 0.0])
    assert v.tolist() == [1.0, 0.0, 0.0, 0.0]
    big = normalise(np.random.default_rng(0).standard_normal((5, 384)) * 1e3)
    assert np.allclose(np.linalg.norm(big.astype(np.float64), axis=1), 1, atol=1e-6)


def test_truncated_prefix_is_renormalised():
    full = normalise(np.random.default_rng(1).standard_normal(1536))
    prefix = full[:256]
    assert abs(np.linalg.norm(prefix) - 1) > 0.1
    fixed = normalise(prefix)
    assert abs(np.linalg.norm(fixed.astype(np.float64)) - 1) < 1e-6
    assert np.allclose(fixed / fixed[0], prefix / prefix[0], atol=1e-5)  # same direction


def test_zero_and_non_finite_refused():
    with pytest.raises(EmbedError, match="vector 1: every component is zero"):
        normalise([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(EmbedError, match="card `x`: every component is zero"):
        normalise([[0.0, 0.0]], labels=["card `x`"])
    with pytest.raises(EmbedError, match="not a finite number"):
        normalise([float("nan"), 1.0])


class Fake:
    provider = "local"
    model_id = "fake"
    revision = "r"

    def __init__(self, d: int | None, width: int) -> None:
        self.dimensions = d
        self.width = width

    def embed(self, texts, on_batch=None):
        return np.ones((len(texts), self.width))


def test_embed_texts_checks_width():
    with pytest.raises(EmbedError, match="5 dimensions where 4 were expected"):
        embed_texts(Fake(4, 5), ["a"])
    with pytest.raises(EmbedError, match="accepts 1..8192"):
        embed_texts(Fake(None, 8193), ["a"])
    v = embed_query(Fake(4, 4), "q")
    assert v.shape == (4,) and np.allclose(v, 0.5)


# ----------------------------------------------------------------- the spec


def test_flags_override_config_field_by_field():
    cfg = EmbedderConfig(
        provider="http",
        model="m",
        revision="r1",
        endpoint="http://e",
        api_key_env="K",
        dimensions=8,
    )
    s = EmbedderSpec.merge(cfg, revision="r2", dimensions=None, model=None)
    assert (s.provider, s.model, s.revision, s.endpoint, s.api_key_env, s.dimensions) == (
        "http",
        "m",
        "r2",
        "http://e",
        "K",
        8,
    )
    assert EmbedderSpec.merge(None).provider == "local"
    with pytest.raises(ConfigError, match="not embedder fields: api_key"):
        EmbedderSpec.merge(None, api_key="x")


# ----------------------------------------------------------------- local, no model run


@pytest.fixture
def model_copy(tmp_path):
    """A copy of the packaged model directory (weights linked, small files copied)."""
    src = local.default_model_dir()
    dst = tmp_path / "minilm"
    dst.mkdir()
    for p in src.iterdir():
        if p.name == "model.safetensors":
            os.symlink(p, dst / p.name)
        elif p.is_file():
            shutil.copy2(p, dst / p.name)
    return dst


def test_revision_is_honest_sha256_and_tracks_files_and_recipe(model_copy):
    packaged = local.local_revision()
    assert packaged.startswith("sha256:") and len(packaged) == 7 + 64
    assert local.revision_for(model_copy) == packaged  # same files, same recipe
    other_recipe = dict(local.RECIPE, pooling="cls")
    assert local.revision_for(model_copy, other_recipe) != packaged
    assert local.revision_for(model_copy, dict(local.RECIPE, max_tokens=128)) != packaged
    assert local.revision_for(model_copy, dict(local.RECIPE, normalise="none")) != packaged
    vocab = model_copy / "vocab.txt"
    vocab.write_bytes(vocab.read_bytes() + b"extra-token\n")
    assert local.revision_for(model_copy) != packaged
    # README and other non-model files do not count
    copy2 = model_copy.parent / "again"
    shutil.copytree(model_copy, copy2, symlinks=True)
    (copy2 / "README.md").write_text("edited")
    assert local.revision_for(copy2) == local.revision_for(model_copy)


def test_tokenizer_json_change_changes_the_revision(model_copy):
    before = local.revision_for(model_copy)
    tok = model_copy / "tokenizer.json"
    tok.write_bytes(tok.read_bytes() + b" ")
    assert local.revision_for(model_copy) != before


def test_identity_needs_no_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['transformers'] = None\n"
        "from producer.embedders import EmbedderSpec, identity\n"
        "print(identity(EmbedderSpec()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    model_id, revision, dims = eval(out.stdout)  # noqa: S307 - our own repr
    assert (model_id, dims) == (local.DEFAULT_MODEL_ID, 384)
    assert revision == local.local_revision()


def test_local_spec_refusals(model_copy):
    assert identity(EmbedderSpec(model=str(model_copy)))[:1] == ("minilm",)
    with pytest.raises(EmbedError, match="needs `--revision`"):
        check_spec(EmbedderSpec(model="org/some-model"))
    check_spec(EmbedderSpec(model="org/some-model", revision="abc123"))
    with pytest.raises(EmbedError, match="its revision is computed from them"):
        check_spec(EmbedderSpec(model=str(model_copy), revision="1110a243"))
    check_spec(EmbedderSpec(model=str(model_copy), revision=local.local_revision(model_copy)))
    with pytest.raises(EmbedError, match="computes 384 dimensions where `dimensions = 256`"):
        check_spec(EmbedderSpec(dimensions=256))
    with pytest.raises(EmbedError, match="not a model directory"):
        local.revision_for(model_copy.parent)


def test_batches_are_a_fixed_function_of_the_texts():
    lengths = [5, 3, 5, 9, 3, 1]
    assert local.batch_order(lengths, 2) == [[5, 1], [4, 0], [2, 3]]
    assert local.batch_order(lengths, 16) == [[5, 1, 4, 0, 2, 3]]


def test_batches_of_one_width_share_an_encoder_call():
    # batches of 2: [2, 0] is 4 wide with padding, [1, 3] 4 wide without,
    # [4, 5], [6, 7] and [8] 9 wide without
    lengths = [4, 4, 3, 4, 9, 9, 9, 9, 9]
    batches = local.batch_order(lengths, 2)
    assert local.encoder_runs(batches, lengths, max_tokens=100) == [
        [[2, 0]], [[1, 3]], [[4, 5], [6, 7], [8]]
    ]
    # the cap counts rows x width; a batch over it still runs, alone
    assert local.encoder_runs(batches, lengths, max_tokens=36) == [
        [[2, 0]], [[1, 3]], [[4, 5], [6, 7]], [[8]]
    ]
    assert local.encoder_runs(batches, lengths, max_tokens=0) == [[b] for b in batches]


def test_offline_switches_are_set_before_transformers_is_imported():
    code = (
        "import sys\n"
        "from producer.embedders import EmbedderSpec, EmbedError, open_embedder\n"
        "assert 'transformers' not in sys.modules\n"
        "e = open_embedder(EmbedderSpec(model='someone/absent-model', revision='0' * 40,"
        " offline=True))\n"
        "try:\n"
        "    e.load()\n"
        "except EmbedError as exc:\n"
        "    print('refused:', exc)\n"
        "import huggingface_hub.constants as c\n"
        "print('offline', c.HF_HUB_OFFLINE)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in local.OFFLINE_VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "refused: cannot load the model `someone/absent-model` (--offline" in out.stdout
    assert "offline True" in out.stdout
    assert "Traceback" not in out.stdout


# ----------------------------------------------------------------- the real model (one load)


@pytest.fixture(scope="module")
def minilm():
    return local.packaged_embedder()


def test_real_model_unit_vectors_and_paraphrase_geometry(minilm):
    texts = [
        "night hunting birds",
        "owls are nocturnal predators that hunt after dark",
        "herons wade in shallow water",
    ]
    v = embed_texts(minilm, texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v.astype(np.float64), axis=1), 1, atol=1e-6)
    assert abs(float(v[0] @ v[1]) - 0.7008) < 1e-3
    assert abs(float(v[0] @ v[2]) - 0.4740) < 1e-3


def test_live_query_equals_the_vector_a_build_stores(minilm):
    corpus = [f"card {i} " + "word " * (i * 3) for i in range(20)] + ["night hunting birds"]
    built = embed_texts(minilm, corpus)  # batched with 20 others of various lengths
    live = local.embed_local_query("night hunting birds")
    assert np.abs(live - built[-1]).max() < 1e-5


def test_real_model_matches_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(local.default_model_dir()), device="cpu")
    texts = ["birds swimming underwater catching fish", "a " * 400]  # second is truncated at 256
    ours = embed_texts(minilm, texts)
    theirs = model.encode(texts, normalize_embeddings=True)
    assert model.max_seq_length == local.MAX_TOKENS
    assert np.abs(ours - theirs).max() < 1e-5


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch on ``n`` threads for the while: the seam these tests set.

    Whether a matrix product gives the same bits on one thread as on two is the
    CPU's kernels' business (on CPUs with AVX-512/AMX it does not: up to 1.6e-7
    apart), so bit-for-bit comparisons pin the thread count; across thread counts
    the rebuild tolerance is what holds.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def batchwise_vectors(minilm, texts: list[str]) -> np.ndarray:
    """The vectors as the embedder made them one batch per encoder call, each batch
    tokenised on its own, on one torch thread (as each side-by-side call runs): the
    reference the shared encoder calls must equal."""
    with torch_threads(1):
        return _batchwise_vectors(minilm, texts)


def _batchwise_vectors(minilm, texts: list[str]) -> np.ndarray:
    import torch

    prefixes = minilm.prefixes(texts)
    tok = minilm._tokenizer
    lengths = [len(tok(p, truncation=True, max_length=local.MAX_TOKENS)["input_ids"])
               for p in prefixes]
    out = np.empty((len(texts), 384), dtype=np.float32)
    for idx in local.batch_order(lengths):
        enc = tok([prefixes[i] for i in idx], padding=True, truncation=True,
                  max_length=local.MAX_TOKENS, return_tensors="pt")
        with torch.inference_mode():
            hidden = minilm._model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            out[idx] = torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()
    return normalise(out)


def test_shared_encoder_calls_change_no_vector_bit(minilm):
    words = ["owl", "night", "wing", "quiet", "egg", "reed"]  # one token each
    long = [" ".join(words[(i + j) % 6] for j in range(300 + i)) for i in range(33)]
    same = [" ".join(words[(i * j) % 6] for j in range(40)) for i in range(32)]
    mixed = [" ".join(words[: 1 + i % 6]) * (1 + i % 5) for i in range(16)]
    texts = long + same + mixed  # truncated at 256, 42 tokens each, of many lengths
    lengths = minilm.token_lengths(texts)
    runs = local.encoder_runs(local.batch_order(lengths), lengths)
    assert [[len(batch) for batch in run] for run in runs] == [[16], [16, 16], [16, 16], [1]]
    assert np.array_equal(embed_texts(minilm, texts), batchwise_vectors(minilm, texts))


def test_encoder_workers_one_per_thread_and_run():
    assert local.encoder_workers(runs=5, threads=2) == 2
    assert local.encoder_workers(runs=1, threads=2) == 1  # a query keeps every core
    assert local.encoder_workers(runs=5, threads=1) == 1
    assert local.encoder_workers(runs=0, threads=2) == 1


def test_encoder_calls_side_by_side_change_no_vector_bit(minilm, monkeypatch):
    import torch

    words = ["owl", "night", "wing", "quiet", "egg", "reed"]
    long = [" ".join(words[(i * j) % 6] for j in range(300 + i)) for i in range(70)]
    short = [" ".join(words[: 1 + i % 6]) * (1 + i % 7) for i in range(40)]
    texts = long + short
    lengths = minilm.token_lengths(texts)
    runs = local.encoder_runs(local.batch_order(lengths), lengths)
    assert len(runs) >= 4  # several runs, so two go through the encoder at once
    monkeypatch.setattr(minilm, "threads", 2)  # two calls at once even on one CPU
    threads = torch.get_num_threads()
    side_by_side = embed_texts(minilm, texts, on_batch=(seen := []).append)
    assert torch.get_num_threads() == threads  # restored for the rest of the process
    assert seen == sorted(seen) and seen[-1] == len(texts)  # progress in order, on this thread
    monkeypatch.setattr(local, "encoder_workers", lambda runs, threads: 1)
    with torch_threads(1):  # the thread count each side-by-side call runs on
        one_at_a_time = embed_texts(minilm, texts)
    assert np.array_equal(side_by_side, one_at_a_time)
    assert np.array_equal(side_by_side, batchwise_vectors(minilm, texts))
    with torch_threads(2):  # one call on two threads: bits are the CPU's business
        two_threads = embed_texts(minilm, texts)
    assert np.abs(side_by_side - two_threads).max() <= local.TOLERANCES["float32"].rebuild
