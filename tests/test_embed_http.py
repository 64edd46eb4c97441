"""The http embedder against a loopback server: request shape and every refusal."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from producer.embedders import EmbedderSpec, EmbedError, check_spec, embed_texts, open_embedder

KEY = "sk-test-0123456789-secret"


class Endpoint:
    """A tiny OpenAI-shaped server; ``reply(body) -> (status, payload)`` is swappable."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply = self.ok
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, payload = outer.reply(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                if status in (301, 302, 307):
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/embeddings"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @staticmethod
    def vector(text: str, d: int = 4) -> list[float]:
        rng = np.random.default_rng(abs(hash(text)) % (2**32))
        return [float(x) * 3 for x in rng.standard_normal(d)]  # deliberately not unit length

    def ok(self, body: dict) -> tuple[int, dict]:
        rows = [
            {"index": i, "embedding": self.vector(t), "object": "embedding"}
            for i, t in enumerate(body["input"])
        ]
        return 200, {"data": rows[::-1], "model": body["model"]}  # arrival order reversed

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    e = Endpoint()
    yield e
    e.close()


def spec(ep: Endpoint, **kw: object) -> EmbedderSpec:
    base = dict(provider="http", model="text-embedding-x", revision="2024-01-25", endpoint=ep.url)
    base.update(kw)
    return EmbedderSpec(**base)  # type: ignore[arg-type]


def test_request_shape_without_a_key(endpoint):
    emb = open_embedder(spec(endpoint), environ={})
    vecs = embed_texts(emb, ["alpha", "beta"])
    (req,) = endpoint.requests
    assert req["path"] == "/v1/embeddings"
    assert req["body"] == {"input": ["alpha", "beta"], "model": "text-embedding-x"}
    assert req["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in req["headers"]
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-6)


def test_bearer_only_with_a_key_and_the_key_never_shown(endpoint):
    emb = open_embedder(spec(endpoint, api_key_env="EMBED_KEY"), environ={"EMBED_KEY": KEY})
    embed_texts(emb, ["alpha"])
    assert endpoint.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(emb)
    # A server that echoes the key back in an error must not get it printed.
    endpoint.reply = lambda body: (401, {"error": {"message": f"bad key {KEY}"}})
    with pytest.raises(EmbedError) as err:
        embed_texts(emb, ["alpha"])
    assert KEY not in str(err.value)
    assert "HTTP 401" in str(err.value) and "[key]" in str(err.value)


def test_rows_are_ordered_by_index_not_arrival(endpoint):
    emb = open_embedder(spec(endpoint), environ={})
    vecs = embed_texts(emb, ["a", "b", "c"])
    for text, v in zip(["a", "b", "c"], vecs, strict=True):
        want = np.asarray(Endpoint.vector(text))
        assert np.allclose(v, want / np.linalg.norm(want), atol=1e-6)


def test_batches_of_sixteen(endpoint):
    emb = open_embedder(spec(endpoint), environ={})
    seen: list[int] = []
    out = embed_texts(emb, [f"t{i}" for i in range(35)], on_batch=seen.append)
    assert [len(r["body"]["input"]) for r in endpoint.requests] == [16, 16, 3]
    assert seen == [16, 32, 35]
    assert out.shape == (35, 4)


def test_short_response_refused(endpoint):
    endpoint.reply = lambda body: (200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
    emb = open_embedder(spec(endpoint), environ={})
    with pytest.raises(EmbedError, match="1 vectors for 2 inputs"):
        embed_texts(emb, ["a", "b"])


def test_width_change_refused(endpoint):
    endpoint.reply = lambda body: (
        200,
        {"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]},
    )
    emb = open_embedder(spec(endpoint), environ={})
    with pytest.raises(EmbedError, match="vector 1: 1 dimensions where 2 were expected"):
        embed_texts(emb, ["a", "b"])


def test_width_change_across_batches_refused(endpoint):
    calls = {"n": 0}

    def reply(body):
        calls["n"] += 1
        d = 4 if calls["n"] == 1 else 5
        return 200, {
            "data": [{"index": i, "embedding": [0.5] * d} for i in range(len(body["input"]))]
        }

    endpoint.reply = reply
    emb = open_embedder(spec(endpoint), environ={})
    with pytest.raises(EmbedError, match="vector 16: 5 dimensions where 4 were expected"):
        embed_texts(emb, [f"t{i}" for i in range(20)])


def test_declared_dimensions_checked(endpoint):
    emb = open_embedder(spec(endpoint, dimensions=3), environ={})
    with pytest.raises(EmbedError, match="vector 0: 4 dimensions where 3 were expected"):
        embed_texts(emb, ["a"])


def test_too_wide_and_not_numbers_and_error_payloads(endpoint):
    emb = open_embedder(spec(endpoint), environ={})
    endpoint.reply = lambda body: (200, {"data": [{"index": 0, "embedding": [0.1] * 8193}]})
    with pytest.raises(EmbedError, match="8193 dimensions, and the reader accepts at most 8192"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (200, {"data": [{"index": 0, "embedding": [0.1, True]}]})
    with pytest.raises(EmbedError, match="holds True, which is not a number"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (200, {"data": [{"index": 0}]})
    with pytest.raises(EmbedError, match="no `embedding` list"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (200, {"error": {"message": "model overloaded"}})
    with pytest.raises(EmbedError, match="model overloaded"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (200, b"<html>")
    with pytest.raises(EmbedError, match="the response is not JSON"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (500, {"error": {"message": "boom"}})
    with pytest.raises(EmbedError, match="HTTP 500 .*boom"):
        embed_texts(emb, ["a"])
    endpoint.reply = lambda body: (200, {"data": [{"index": 0, "embedding": [0.0, 0.0]}]})
    with pytest.raises(EmbedError, match="every component is zero"):
        embed_texts(emb, ["a"])


def test_redirect_refused(endpoint):
    endpoint.reply = lambda body: (307, {})
    emb = open_embedder(spec(endpoint), environ={})
    with pytest.raises(EmbedError, match="redirected to http://127.0.0.1:9/elsewhere"):
        embed_texts(emb, ["a"])


def test_unreachable(endpoint):
    url = endpoint.url
    endpoint.close()
    emb = open_embedder(spec(endpoint, endpoint=url), environ={})
    with pytest.raises(EmbedError, match="unreachable"):
        embed_texts(emb, ["a"])
    endpoint.close = lambda: None  # already closed


def test_refusals_before_any_request(endpoint):
    with pytest.raises(EmbedError, match=r"\$EMBED_KEY is unset or empty"):
        check_spec(spec(endpoint, api_key_env="EMBED_KEY"), environ={})
    with pytest.raises(EmbedError, match=r"\$EMBED_KEY is unset or empty"):
        check_spec(spec(endpoint, api_key_env="EMBED_KEY"), environ={"EMBED_KEY": ""})
    with pytest.raises(EmbedError, match="--offline refuses the network"):
        check_spec(spec(endpoint, offline=True), environ={})
    with pytest.raises(EmbedError, match="needs `revision`"):
        check_spec(spec(endpoint, revision=None), environ={})
    with pytest.raises(EmbedError, match="needs `endpoint`"):
        check_spec(spec(endpoint, endpoint=None), environ={})
    with pytest.raises(EmbedError, match="needs `endpoint`, `model`"):
        check_spec(spec(endpoint, endpoint=None, model=None), environ={})
    with pytest.raises(EmbedError, match="not an http:// or https:// URL"):
        check_spec(spec(endpoint, endpoint="file:///etc/passwd"), environ={})
    with pytest.raises(EmbedError, match="unknown embedder provider `grpc`"):
        check_spec(spec(endpoint, provider="grpc"), environ={})
    assert endpoint.requests == []
