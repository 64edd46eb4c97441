"""ONNX Runtime runs the same recipe as torch: same vectors, same revision, no torch
for a live query once this machine's graph exists (docs/runtime.md).

The graph is exported once for this module into the suite's temporary cache
(``XDG_CACHE_HOME``, set by conftest.py), from the packaged model's files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from producer.build import BuildOptions, build
from producer.embedders import EmbedderSpec, EmbedError, embed_texts, onnx_graph, open_embedder
from producer.embedders.local import (
    DEFAULT_MODEL_ID,
    LocalEmbedder,
    default_model_dir,
    local_revision,
)
from producer.embedders.probe_texts import PROBE_TEXTS
from producer.index_format import unpack
from producer.index_reader import read_index

REPO = Path(__file__).resolve().parents[1]
BIRDS = REPO / "fixtures" / "birds"
NOT_STORED = "a bird that hunts at dusk over reed beds"


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> Iterator[onnx_graph.GraphRecord]:
    """This module's own cache (and so its own graph): other tests run without one."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        record, _ = onnx_graph.prepare_graph(default_model_dir())
        assert record.passed, record.reason
        yield record


def embedder(runtime: str, prepare: bool = True) -> LocalEmbedder:
    d = default_model_dir()
    return LocalEmbedder(d, DEFAULT_MODEL_ID, local_revision(d), 384,
                         runtime=runtime, prepare=prepare)


def test_the_graph_is_cached_outside_the_vault_with_its_check(graph):
    assert graph.graph.is_file()
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "hql-tui" / "onnx"
    assert graph.graph.parent.parent == cache
    assert graph.max_abs is not None and graph.max_abs <= 1e-6
    assert graph.auto in ("torch", "onnxruntime") and set(graph.texts_per_s) == {
        "torch", "onnxruntime"}
    assert onnx_graph.read_record(default_model_dir()) == graph  # read back, not remade
    stored = json.loads((graph.directory / onnx_graph.RECORD_FILE).read_text())
    assert stored["passed"] is True and stored["onnxruntime"] and stored["exporter"]


def test_onnxruntime_vectors_equal_torchs_within_the_rebuild_tolerance(graph):
    texts = [*PROBE_TEXTS, "night hunting birds", "owls " * 300]
    ort, torch_ = embedder("onnxruntime"), embedder("torch")
    a, b = embed_texts(ort, texts), embed_texts(torch_, texts)
    assert (ort.runtime_used, torch_.runtime_used) == ("onnxruntime", "torch")
    assert np.abs(a - b).max() <= 1e-6


def test_the_revision_does_not_change_with_the_runtime(graph):
    stored = read_index(BIRDS / ".hql" / "index.sqlite").model.revision
    assert stored == local_revision()
    spec = EmbedderSpec(runtime="onnxruntime")
    assert open_embedder(spec).revision == open_embedder(EmbedderSpec(runtime="torch")).revision
    assert open_embedder(spec).revision == stored


def test_a_live_vector_from_either_runtime_matches_the_stored_one(graph):
    contents = read_index(BIRDS / ".hql" / "index.sqlite")
    query = contents.queries[0]
    stored = unpack(query.embedding)
    for runtime in ("onnxruntime", "torch"):
        live = embed_texts(embedder(runtime, prepare=False), [query.text])[0]
        assert np.abs(live - stored).max() <= 1e-5, runtime


def test_full_builds_through_each_runtime_agree(graph, tmp_path):
    vectors = {}
    for runtime in ("torch", "onnxruntime"):
        root = tmp_path / runtime
        shutil.copytree(BIRDS, root, ignore=shutil.ignore_patterns(".hql"))
        events = []
        build(BuildOptions(vault=str(root), offline=True, full=True, runtime=runtime,
                           built_at="2026-01-01T00:00:00+00:00"), events.append)
        final = events[-1]
        assert final["event"] == "final" and final["runtime"] == runtime
        contents = read_index(root / ".hql" / "index.sqlite")
        assert contents.model.revision == local_revision()
        vectors[runtime] = {c.name: unpack(c.embedding) for c in contents.cards}
    assert sorted(vectors["torch"]) == sorted(vectors["onnxruntime"])
    worst = max(np.abs(vectors["torch"][n] - vectors["onnxruntime"][n]).max()
                for n in vectors["torch"])
    assert worst <= 1e-6


PROBE = """
import json, sys
from hqltui.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_a_live_query_imports_neither_torch_nor_transformers(graph, tmp_path):
    """What `make run`'s setup leaves: the graph exists; the first birds query the
    index does not hold answers live:local on onnxruntime."""
    env = {**os.environ, "HQL_TUI_HISTORY": str(tmp_path / "history.jsonl"),
           "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "query", str(BIRDS), NOT_STORED, "--mode", "semantic"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )
    assert "query vector: live:local (onnxruntime)" in out.stdout, out.stdout + out.stderr
    loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert "onnxruntime" in loaded and "tokenizers" in loaded
    assert not {"torch", "transformers"} & loaded


def test_a_graph_that_failed_its_check_is_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key = onnx_graph.graph_key(default_model_dir())
    why = "on the probe texts it differs from torch by up to 0.003 per component"
    onnx_graph.write_record(onnx_graph.GraphRecord(key, passed=False, reason=why))
    with pytest.raises(EmbedError, match="differs from torch by up to 0.003"):
        embedder("onnxruntime").load()
    fallback = embedder("auto", prepare=False)
    fallback.load()
    assert fallback.runtime_used == "torch"
    assert fallback.runtime_note is None  # said once, by the build that made the graph


def test_no_graph_yet_a_live_query_runs_on_torch_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    live = embedder("auto", prepare=False)
    live.load()
    assert live.runtime_used == "torch"
    built = embedder("auto", prepare=True)  # a build: `auto` reads the record, never exports
    built.load()
    assert built.runtime_used == "torch"
    assert not (tmp_path / "cache").exists()  # neither made a graph
    with pytest.raises(EmbedError, match="hql-semantics runtime"):
        embedder("onnxruntime", prepare=False).load()


def test_a_model_without_tokenizer_json_stays_on_torch(tmp_path):
    d = tmp_path / "model"
    shutil.copytree(default_model_dir(), d, ignore=shutil.ignore_patterns("tokenizer.json"))
    plain = LocalEmbedder(d, "model", local_revision(d), 384, runtime="auto")
    plain.load()
    assert plain.runtime_used == "torch"
    with pytest.raises(EmbedError, match="tokenizer.json"):
        LocalEmbedder(d, "model", local_revision(d), 384, runtime="onnxruntime").load()


# A meta-path finder that fails importing transformers: the first time only
# ("once"), or every time ("always"), with the error a half-finished import in
# another thread gives.
FAILING_IMPORT = """
import sys
mode = sys.argv[1]
class Fail:
    left = 1 if mode == "once" else 10**6
    def find_spec(self, name, path=None, target=None):
        if name == "transformers" and Fail.left:
            Fail.left -= 1
            raise ImportError("cannot import name 'AutoModel' from partially initialized "
                              "module 'transformers' (most likely due to a circular import)")
        return None
sys.meta_path.insert(0, Fail())
from producer.embedders import EmbedError
from producer.embedders.local import LocalEmbedder
try:
    e = LocalEmbedder.packaged(runtime="torch")
    print("vector", e.embed(["owls"]).shape, e.runtime_used)
except EmbedError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("mode", ["once", "always"])
def test_a_failed_torch_import_is_retried_and_named(mode):
    out = subprocess.run([sys.executable, "-c", FAILING_IMPORT, mode], capture_output=True,
                         text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    if mode == "once":  # the spurious refusal: the next attempt, under the lock, works
        assert out.stdout.strip() == "vector (1, 384) torch"
    else:
        line = out.stdout.strip()
        assert line.startswith("refused:")
        assert "cannot import name 'AutoModel' from partially initialized module" in line


# ------------------------------------------------------------------------- int8


def test_int8_is_its_own_revision_digesting_the_quantised_graph(graph):
    import hashlib

    assert graph.int8_sha256 == hashlib.sha256(graph.int8_graph.read_bytes()).hexdigest()
    revisions = {p: local_revision(precision=p) for p in ("float32", "bfloat16", "int8")}
    assert len(set(revisions.values())) == 3
    assert revisions["float32"] == read_index(BIRDS / ".hql" / "index.sqlite").model.revision


def test_int8_quantisation_is_deterministic(graph, tmp_path):
    from producer.embedders.onnx_export import quantise

    digest, _ = quantise(graph.graph, tmp_path / "again.onnx")
    assert digest == graph.int8_sha256


def test_int8_vectors_stay_within_the_stated_tolerance(graph):
    from producer.embedders.local import TOLERANCES

    texts = [*PROBE_TEXTS, "night hunting birds", "owls are nocturnal predators"]
    d = default_model_dir()
    int8 = LocalEmbedder(d, DEFAULT_MODEL_ID, local_revision(d, "int8"), 384, precision="int8")
    a = embed_texts(int8, texts)
    b = embed_texts(embedder("torch"), texts)
    assert int8.runtime_used == "onnxruntime"
    bound = TOLERANCES["int8"].cosine
    assert ((a.astype(np.float64) * b).sum(axis=1) >= bound).all()
    assert np.array_equal(a, embed_texts(int8, texts))  # same texts, same batches: same bits
    alone = embed_texts(int8, ["night hunting birds"])[0]  # scaled on its own: close, not equal
    assert float(alone.astype(np.float64) @ a[-2]) >= bound


def test_int8_never_runs_on_torch(graph):
    d = default_model_dir()
    with pytest.raises(EmbedError, match="int8 runs on ONNX Runtime"):
        LocalEmbedder(d, DEFAULT_MODEL_ID, "r", 384, precision="int8", runtime="torch").load()


def test_the_graph_loaded_ahead_serves_the_first_live_query(graph, tmp_path):
    """The MCP server loads the graph beside the vault: the live query's embedder then
    runs on that same session instead of loading its own."""
    from producer.cpus import usable_cpus
    from producer.embedders import onnx_runtime
    from producer.embedders.local import warm_graph

    assert warm_graph() is True
    warmed = onnx_runtime.open_session(graph.graph, usable_cpus())
    live = embedder("auto", prepare=False)
    live.load()
    assert live._encoder._session is warmed


def test_without_a_graph_nothing_is_loaded_ahead(tmp_path, monkeypatch):
    from producer.embedders.local import warm_graph

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert warm_graph() is False


# ------------------------------------------------ a small build's runtime

BUILD_PROBE = """
import json, sys
from producer.cli import main
code = main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def build_events(vault: Path, *args: str, **env: str) -> tuple[list[dict], set[str], str]:
    """A build in a child process: its JSON events, the modules it imported, its stderr."""
    out = subprocess.run(
        [sys.executable, "-c", BUILD_PROBE, "build", "--vault", str(vault), "--offline",
         "--progress", "jsonl", *args],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    modules = set(json.loads(out.stderr.strip().splitlines()[-1]))
    return [json.loads(line) for line in out.stdout.splitlines()], modules, out.stderr


@pytest.fixture
def torch_for_builds(graph):  # type: ignore[no-untyped-def]
    """This machine's record says what a timing at setup says: here, torch for builds
    (what `auto` resolves to on the project's machine), whatever this run's timing chose."""
    onnx_graph.write_record(dataclasses.replace(graph, auto="torch"))
    yield
    onnx_graph.write_record(graph)


def test_a_small_build_runs_on_onnxruntime_and_never_imports_torch(
    graph, torch_for_builds, tmp_path
):
    """The edit an auto-build answers: one card, under `auto`, on the graph that passed,
    whatever `auto` resolved to for large builds; the same index revision."""
    vault = tmp_path / "birds"
    shutil.copytree(BIRDS, vault)
    card = vault / "great-cormorant.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nIt dries its wings.\n",
                    encoding="utf-8")
    events, modules, _ = build_events(vault, "--changed-at-most", "200")
    final = events[-1]
    assert final["event"] == "final" and final["embedded"] == 1
    assert final["runtime"] == "onnxruntime"
    assert read_index(vault / ".hql" / "index.sqlite").model.revision == local_revision()
    assert "onnxruntime" in modules
    assert not {"torch", "transformers"} & modules


def test_the_plan_decides_the_runtime_and_a_full_build_keeps_autos(graph, monkeypatch):
    from producer.embedders.local import SMALL_BUILD_TEXTS, choose_runtime, small_build

    assert small_build(1, False) and small_build(SMALL_BUILD_TEXTS, False)
    assert not small_build(SMALL_BUILD_TEXTS + 1, False)
    assert not small_build(1, True)  # --full: the reference build
    assert not small_build(0, False)  # nothing to embed loads nothing
    # A machine where the timing at setup chose torch for builds:
    monkeypatch.setattr(onnx_graph, "read_record",
                        lambda _d: dataclasses.replace(graph, auto="torch"))
    d = default_model_dir()
    assert choose_runtime("auto", "float32", d, True, True, small=True)[0] == "onnxruntime"
    assert choose_runtime("auto", "float32", d, True, True, small=False)[0] == "torch"
    assert choose_runtime("torch", "float32", d, True, True, small=True)[0] == "torch"
    assert choose_runtime("auto", "bfloat16", d, True, True, small=True)[0] == "torch"
    failed = dataclasses.replace(graph, passed=False, reason="differs")
    monkeypatch.setattr(onnx_graph, "read_record", lambda _d: failed)
    assert choose_runtime("auto", "float32", d, True, True, small=True)[0] == "torch"


def test_a_full_build_of_a_small_vault_keeps_autos_choice(graph, torch_for_builds, tmp_path):
    vault = tmp_path / "birds"
    shutil.copytree(BIRDS, vault, ignore=shutil.ignore_patterns(".hql"))
    events, _, _ = build_events(vault, "--full", "--built-at", "2026-01-01T00:00:00+00:00")
    assert events[-1]["runtime"] == "torch"


@pytest.mark.parametrize(("first", "then"), [("torch", "auto"), ("auto", "torch")])
def test_a_work_file_is_never_resumed_by_the_other_runtime(
    graph, torch_for_builds, tmp_path, first, then
):
    """A small build interrupted on one runtime leaves its work file; the next build,
    on the other runtime, ignores it in one line and embeds every text itself."""
    from producer.build_checkpoint import work_path_for
    from producer.crash_points import BATCH_CARDS_ENV, CHECKPOINT_ENV, PAUSE_ENV

    vault = tmp_path / "birds"
    shutil.copytree(BIRDS, vault)
    for name in ("great-cormorant", "mallard", "barn-owl"):
        card = vault / f"{name}.hmd"
        card.write_text(card.read_text(encoding="utf-8") + "\nSeen at dusk.\n",
                        encoding="utf-8")
    marker = tmp_path / "paused"
    seams = {BATCH_CARDS_ENV: "1", CHECKPOINT_ENV: "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "producer", "build", "--vault", str(vault), "--offline",
         "--runtime", first, "--progress", "jsonl"],
        cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO), **seams,
             PAUSE_ENV: f"batch-2:{marker}"})
    deadline = time.monotonic() + 240
    try:
        while not marker.exists():  # the build writes it when it reaches the pause
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the build never reached its second batch"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    index = vault / ".hql" / "index.sqlite"
    assert work_path_for(index).exists()
    events, _, _ = build_events(vault, "--runtime", then, **seams)
    warnings = [e["message"] for e in events if e["event"] == "warning"]
    assert any("work file is from another model, revision, recipe, runtime or vault; "
               "ignored" in w for w in warnings), warnings
    final = events[-1]
    assert final["runtime"] == {"torch": "torch", "auto": "onnxruntime"}[then]
    assert final["resumed"] == 0 and final["texts_embedded"] == 3
    assert not work_path_for(index).exists()
