"""``hql-semantics`` as a process: output contracts, exit codes, the lock, and SIGKILL
at three points of a build. The builds here use the ``http`` provider against a
loopback endpoint, so they run the real CLI code path without loading a model."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from producer.index_reader import read_index
from producer.index_writer import leftovers
from tests.helpers.vaults import write_cards

REPO = Path(__file__).resolve().parents[1]
STAMP = "2026-01-01T00:00:00+00:00"
SECRET = "sk-live-do-not-print-0987654321"


class Endpoint:
    def __init__(self) -> None:
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.status != 200:
                    data = json.dumps({"error": {"message": f"rejected {SECRET}"}}).encode()
                else:
                    rows = []
                    for i, text in enumerate(body["input"]):
                        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
                        vec = np.random.default_rng(seed).standard_normal(8)
                        rows.append({"index": i, "embedding": vec.tolist()})
                    data = json.dumps({"data": rows}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/embeddings"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def endpoint():
    e = Endpoint()
    yield e
    e.close()


@pytest.fixture
def vault(tmp_path):
    return write_cards(tmp_path / "v", {f"card{i:02}": f"# Card {i}\n\nBody of card {i}.\n"
                                        for i in range(40)})


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    e["PYTHONPATH"] = str(REPO)
    e.pop("HQL_SEMANTICS_TEST_PAUSE", None)
    e.update(extra)
    return e


def cli(*args: str, cwd: Path, extra_env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "producer", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(**(extra_env or {})),
    )


def http_build(endpoint: Endpoint, *more: str) -> list[str]:
    return [
        "build",
        "--vault",
        "v",
        "--out",
        "v/.hql/index.sqlite",
        "--provider",
        "http",
        "--model",
        "fake-embed",
        "--revision",
        "r1",
        "--endpoint",
        endpoint.url,
        *more,
    ]


def test_import_is_cheap():
    code = (
        "import sys, producer.cli, producer.build, producer.embedders.local\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env(), check=True
    )
    assert out.stdout.strip() == "[]"


def test_jsonl_progress_is_only_json_lines(endpoint, vault):
    r = cli(*http_build(endpoint, "--progress", "jsonl", "--query", "q"), cwd=vault.parent)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[0] == {
        "event": "start",
        "cards": 40,
        "total": 41,
        "to_embed": 40,
        "reused": 0,
        "cards_shared": 0,
        "queries": 1,
    }
    progress = [e for e in events if e["event"] == "progress"]
    assert [p["done"] for p in progress] == [16, 32, 40, 41]
    assert all(p["total"] == 41 and p["elapsed"] >= 0 for p in progress)
    assert progress[-1]["eta"] == 0 and progress[-1]["texts_per_s"] > 0
    final = events[-1]
    assert final["event"] == "final"
    assert {
        k: final[k] for k in ("embedded", "reused", "removed", "queries", "up_to_date", "out")
    } == {
        "embedded": 40,
        "reused": 0,
        "removed": 0,
        "queries": 1,
        "up_to_date": False,
        "out": "v/.hql/index.sqlite",
    }
    assert (final["resumed"], final["texts_embedded"]) == (0, 41)
    again = cli(*http_build(endpoint, "--progress", "jsonl"), cwd=vault.parent)
    assert json.loads(again.stdout.splitlines()[-1])["up_to_date"] is True


def test_human_output_and_verify_inspect(endpoint, vault):
    r = cli(*http_build(endpoint, "--built-at", STAMP), cwd=vault.parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == (
        "v/.hql/index.sqlite: 40 cards (40 embedded, 0 reused, 0 removed), 0 queries, "
        "8 dimensions, fake-embed via http"
    )
    r = cli("verify", "--vault", "v", "--index", "v/.hql/index.sqlite", cwd=vault.parent)
    assert (r.returncode, r.stdout.strip()) == (
        0,
        "v/.hql/index.sqlite: clean, 40 cards, 0 queries",
    )
    (vault / "card00.md").write_text("edited\n")
    r = cli("verify", "--vault", "v", "--index", "v/.hql/index.sqlite", "--json", cwd=vault.parent)
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert report["clean"] is False and report["problems"][0]["kind"] == "stale"
    r = cli("inspect", "--index", "v/.hql/index.sqlite", "--json", cwd=vault.parent)
    assert json.loads(r.stdout)["vault"] == "v"
    r = cli("inspect", "--index", "v/.hql/index.sqlite", cwd=vault.parent)
    assert "built at      2026-01-01T00:00:00+00:00" in r.stdout


def test_errors_are_one_line_and_usage_errors_exit_2(endpoint, vault, tmp_path):
    r = cli("build", cwd=tmp_path)
    assert r.returncode == 2 and "--vault" in r.stderr
    r = cli("build", "--vault", "v", "--provider", "grpc", cwd=tmp_path)
    assert r.returncode == 2
    r = cli("build", "--vault", "nowhere", "--out", "x.sqlite", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (
        1,
        "hql-semantics: nowhere: does not exist; fix: name an existing vault directory with "
        "--vault\n",
    )
    r = cli("build", "--vault", "nowhere", "--progress", "jsonl", cwd=tmp_path)
    assert r.returncode == 1
    assert [json.loads(x) for x in r.stdout.splitlines()] == [
        {"event": "error", "message": "nowhere: does not exist",
         "fix": "name an existing vault directory with --vault"}
    ]
    garbage = tmp_path / "g.sqlite"
    garbage.write_bytes(b"garbage" * 999)
    r = cli("inspect", "--index", str(garbage), cwd=tmp_path)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    r = cli("build", "--vault", "v", "--out", "o.sqlite", "--model", "org/absent", cwd=tmp_path)
    assert r.returncode == 1 and "--revision" in r.stderr
    for res in (r,):
        assert "Traceback" not in res.stderr


def test_the_key_is_never_printed_or_stored(endpoint, vault):
    args = http_build(endpoint, "--api-key-env", "EMBED_KEY")
    r = cli(*args, cwd=vault.parent)
    assert r.returncode == 1
    assert r.stderr == (
        f"hql-semantics: $EMBED_KEY is unset or empty, and `{endpoint.url}` is configured to "
        "be called with it\n"
    )
    r = cli(*args, cwd=vault.parent, extra_env={"EMBED_KEY": SECRET})
    assert r.returncode == 0 and SECRET not in r.stdout + r.stderr
    assert SECRET.encode() not in (vault / ".hql" / "index.sqlite").read_bytes()
    (vault / "card01.md").write_text("changed\n")
    endpoint.status = 401
    r = cli(*args, "--progress", "jsonl", cwd=vault.parent, extra_env={"EMBED_KEY": SECRET})
    assert r.returncode == 1 and SECRET not in r.stdout + r.stderr
    assert "HTTP 401" in r.stderr
    r = cli(*args, "--offline", cwd=vault.parent, extra_env={"EMBED_KEY": SECRET})
    assert r.returncode == 1 and "--offline refuses the network" in r.stderr


def start_paused(endpoint: Endpoint, vault: Path, point: str) -> tuple[subprocess.Popen, Path]:
    marker = vault.parent / f"paused-{point}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "producer", *http_build(endpoint)],
        cwd=vault.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(HQL_SEMANTICS_TEST_PAUSE=f"{point}:{marker}"),
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the build never reached {point}")
        time.sleep(0.02)
    return proc, marker


@pytest.mark.parametrize("point", ["embedding", "writing", "rename"])
def test_sigkill_leaves_the_previous_index_and_the_next_build_cleans_up(endpoint, vault, point):
    out = vault / ".hql" / "index.sqlite"
    assert cli(*http_build(endpoint, "--built-at", STAMP), cwd=vault.parent).returncode == 0
    before = out.read_bytes()
    (vault / "card07.md").write_text("# Card 7\n\nRewritten.\n")
    proc, _ = start_paused(endpoint, vault, point)
    if point in ("writing", "rename"):
        assert leftovers(out), "the temporary file should exist at this point"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert out.read_bytes() == before
    r = cli(*http_build(endpoint, "--built-at", STAMP), cwd=vault.parent)
    assert r.returncode == 0, r.stderr
    assert "1 embedded, 39 reused" in r.stdout
    assert leftovers(out) == []
    assert sorted(p.name for p in out.parent.iterdir()) == ["index.sqlite"]
    assert read_index(out).cards[7].content_hash != ""


def test_a_second_build_refuses_at_once_naming_the_first(endpoint, vault):
    proc, _ = start_paused(endpoint, vault, "embedding")
    try:
        t = time.monotonic()
        r = cli(*http_build(endpoint), cwd=vault.parent)
        assert time.monotonic() - t < 30
        assert r.returncode == 1
        assert r.stderr.startswith(
            f"hql-semantics: another build of v/.hql/index.sqlite is running (pid {proc.pid}: "
        )
        assert "build --vault v" in r.stderr
        assert len(r.stderr.splitlines()) == 1
    finally:
        proc.kill()
        proc.wait()
