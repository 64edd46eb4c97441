"""The semantic arm through a Session: query-vector sources, staleness, coverage."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pytest

from hqltui.core.session import Session
from tests.helpers.indexed_vaults import (
    THREE_CARDS,
    THREE_VECTORS,
    doctor,
    three_card_vault,
    unit,
    write_test_index,
    write_vault,
)


def load(root: Path, tmp_path: Path) -> Session:
    return Session.load(root, cache_dir=tmp_path / "cache")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return three_card_vault(tmp_path / "v", {"first": unit([1, 0.1, 0, 0])})


def test_a_stored_query_ranks_by_cosine(vault: Path, tmp_path: Path) -> None:
    ranking = load(vault, tmp_path).rank("first", "semantic")
    assert ranking.ok
    assert ranking.names() == ["alpha", "beta"]  # gamma is orthogonal: no evidence
    q = unit([1, 0.1, 0, 0]).astype(np.float64)
    assert ranking.hits[0].score == pytest.approx(float(THREE_VECTORS["alpha"].astype(np.float64) @ q))
    r = ranking.retrieval
    assert r is not None
    assert (r.model, r.revision, r.metric, r.approximate) == ("test/model", "rev-1", "cosine", False)
    assert r.query_vector_source == "index"
    assert r.index.endswith("/.hql/index.sqlite")


def test_an_unknown_query_refuses_naming_the_build_command(vault: Path, tmp_path: Path) -> None:
    ranking = load(vault, tmp_path).rank('owls "at" night', "semantic")
    assert ranking.refusal is not None and not ranking.hits
    assert 'hql-semantics build --query "owls \\"at\\" night"' in ranking.refusal.message
    assert ranking.refusal.fix.startswith("hql-semantics build --vault")
    assert '--query "owls \\"at\\" night"' in ranking.refusal.fix


def test_no_lexical_fallback_when_semantic_refuses(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS, index=None)
    answer = load(root, tmp_path).query("first card")
    assert answer.lexical.hits
    assert answer.semantic.refusal is not None and not answer.semantic.hits
    assert answer.hybrid.refusal == answer.semantic.refusal and not answer.hybrid.hits


def test_stale_cards_are_ranked_and_warned_absent_ones_counted(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", THREE_CARDS)
    write_test_index(
        root,
        {"alpha": THREE_VECTORS["alpha"], "beta": THREE_VECTORS["beta"], "ghost": unit([1, 0, 0, 1])},
        {"first": unit([1, 0.1, 0, 0])},
    )
    (root / "beta.hmd").write_text("# beta\n\nedited since the build\n", encoding="utf-8")
    (root / "gamma.hmd").unlink()
    (root / "delta.hmd").write_text("# delta\n\nnew card\n", encoding="utf-8")
    session = load(root, tmp_path)
    ranking = session.rank("first", "semantic")
    assert ranking.names() == ["alpha", "beta"]
    stale = [w for w in ranking.warnings if w.kind == "stale"]
    absent = [w for w in ranking.warnings if w.kind == "absent"]
    orphan = [w for w in ranking.warnings if w.kind == "orphan"]
    assert [w.cards for w in stale] == [("beta",)] and "`beta`" in stale[0].message
    assert len(absent) == 1 and absent[0].message.startswith("`delta` is absent from the index")
    assert absent[0].cards == ("delta",)
    assert len(orphan) == 1 and orphan[0].cards == ("ghost",)
    assert session.card_status("alpha") == "fresh"
    assert session.card_status("beta") == "stale"
    assert session.card_status("delta") == "missing"
    summary = session.index_summary()
    assert (summary.fresh, summary.stale, summary.missing, summary.orphan) == (1, 1, 1, 1)
    assert summary.model == "test/model" and summary.state == "ok"
    hybrid = session.query("first").hybrid
    assert [w.kind for w in hybrid.warnings] == ["stale", "absent", "orphan"]


def test_negative_cosines_are_no_evidence(vault: Path, tmp_path: Path) -> None:
    write_test_index(vault, THREE_VECTORS, {"away": unit([-1, -1, -1, -1])})
    ranking = load(vault, tmp_path).rank("away", "semantic")
    assert ranking.ok and ranking.hits == () and ranking.total == 0


# ------------------------------------------------------------------ live vectors


def test_a_doctored_revision_makes_live_embedding_refuse(tmp_path: Path) -> None:
    from producer.embedders.local import DEFAULT_MODEL_ID

    root = write_vault(tmp_path / "v", THREE_CARDS)
    vecs = {k: unit(np.resize(v, 384) + 0.01) for k, v in THREE_VECTORS.items()}
    write_test_index(root, vecs, model=DEFAULT_MODEL_ID, revision="sha256:" + "0" * 64)
    ranking = load(root, tmp_path).rank("first card", "semantic")
    assert ranking.refusal is not None
    assert "revision" in ranking.refusal.message
    assert 'hql-semantics build --query "first card"' in ranking.refusal.message


class _Embeddings(BaseHTTPRequestHandler):
    calls: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(body)
        data = [{"index": i, "embedding": [1.0, 0.1, 0.0, 0.0]} for i, _ in enumerate(body["input"])]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    _Embeddings.calls = []
    server = HTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1/embeddings"
    server.shutdown()
    server.server_close()


def _http_vault(tmp_path: Path, endpoint: str, revision: str = "rev-1") -> Path:
    toml = (
        '[semantics.embedder]\nprovider = "http"\nmodel = "test/model"\n'
        f'revision = "{revision}"\nendpoint = "{endpoint}"\napi_key_env = "TEST_EMBED_KEY"\n'
    )
    return three_card_vault(tmp_path / "v", extra_toml=toml)


def test_http_live_embedding_only_on_request(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "secret-value")
    session = load(_http_vault(tmp_path, endpoint), tmp_path)
    quiet = session.rank("first", "semantic")
    assert quiet.refusal is not None and quiet.refusal.fix == "live"
    assert _Embeddings.calls == []  # nothing left the machine
    asked = session.rank("first", "semantic", live=True)
    assert asked.ok and asked.names() == ["alpha", "beta"]
    assert asked.retrieval is not None and asked.retrieval.query_vector_source == "live:http"
    assert asked.retrieval.model == "test/model" and asked.retrieval.revision == "rev-1"
    assert _Embeddings.calls == [{"input": ["first"], "model": "test/model"}]


def test_http_live_embedding_needs_the_key_and_the_same_revision(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_EMBED_KEY", raising=False)
    session = load(_http_vault(tmp_path, endpoint), tmp_path)
    r = session.rank("first", "semantic", live=True)
    assert r.refusal is not None and "$TEST_EMBED_KEY" in r.refusal.message
    monkeypatch.setenv("TEST_EMBED_KEY", "k")
    session = load(_http_vault(tmp_path / "b", endpoint, revision="rev-2"), tmp_path)
    r = session.rank("first", "semantic", live=True)
    assert r.refusal is not None and "hql-semantics build --query" in r.refusal.message
    assert _Embeddings.calls == []


def test_the_embedder_table_never_changes_provenance(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "k")
    root = _http_vault(tmp_path, endpoint, revision="rev-9")
    write_test_index(root, THREE_VECTORS, {"first": unit([1, 0.1, 0, 0])})
    r = load(root, tmp_path).rank("first", "semantic")
    assert r.retrieval is not None and r.retrieval.revision == "rev-1"
    assert r.retrieval.query_vector_source == "index"


def test_a_query_blob_refusal_names_the_length(vault: Path, tmp_path: Path) -> None:
    doctor(vault / ".hql/index.sqlite", "UPDATE query SET embedding = zeroblob(4)")
    r = load(vault, tmp_path).rank("first", "semantic")
    assert r.refusal is not None and "4 bytes, not 16" in r.refusal.message
