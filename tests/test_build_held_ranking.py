"""While a build runs `hql-tui mcp` keeps answering `search` from the old index, with
its provenance, and answers from the new one once it lands: the real producer, offline,
held before it replaces the index (the new index is complete beside the old one).

A build run elsewhere is swapped in by the server's watcher (the index file changed); the
server's own `build` tool reloads the vault before it answers, and a search sent while
that build is held is answered meanwhile, not queued behind it.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import time
from typing import Any

import pytest

from producer.crash_points import PAUSE_ENV
from tests.helpers.held_build import (
    PATIENCE,
    STAMP,
    TOP,
    rewrite_the_mallard,
    run_build,
    start_held_build,
)
from tests.helpers.vaults import QUERY
from tests.mcp_raw import RawServer, initialized

pytestmark = pytest.mark.slow  # the packaged model, in the producer's child process

BUILD_ID = 50
BUILD = {"jsonrpc": "2.0", "id": BUILD_ID, "method": "tools/call",
         "params": {"name": "build", "arguments": {}, "_meta": {"progressToken": BUILD_ID}}}


class Client:
    """Requests by id over a RawServer's pipes; answers to other ids that arrive
    meanwhile (a build's) are kept for whoever asks for them; notifications are skipped.
    Lines are split here from raw reads: a build's progress notes come in bursts, and a
    buffered readline would hide the rest of a burst from ``select``."""

    def __init__(self, server: RawServer) -> None:
        assert server.process is not None and server.process.stdout is not None
        self.server = server
        self.fd = server.process.stdout.fileno()
        self.pending = b""
        self.next_id = 100
        self.kept: dict[int, dict[str, Any]] = {}

    def _message(self) -> dict[str, Any]:
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.fd], [], [], PATIENCE)
            assert ready, "no answer"
            chunk = os.read(self.fd, 65536)
            assert chunk, "the server closed its stdout"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def answer(self, request_id: int) -> dict[str, Any]:
        while request_id not in self.kept:
            message = self._message()
            if "id" in message:
                self.kept[message["id"]] = message
        return self.kept.pop(request_id)

    def search(self) -> dict[str, Any]:
        """QUERY's semantic ranking, as `search` answers it (not an error)."""
        self.next_id += 1
        self.server.send(json.dumps({
            "jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": "search", "arguments": {"text": QUERY, "mode": "semantic"}}}))
        return tool_result(self.answer(self.next_id))


def tool_result(message: dict[str, Any]) -> dict[str, Any]:
    result = message["result"]
    assert not result["isError"], result["content"][0]["text"]
    return json.loads(result["content"][0]["text"])


def ranked(answer: dict[str, Any]) -> list[str]:
    return [hit["name"] for hit in answer["arms"]["semantic"]["hits"]]


def provenance(answer: dict[str, Any]) -> tuple[Any, ...]:
    """What says which index answered: its stamp, model, revision and path."""
    retrieval = answer["arms"]["semantic"]["retrieval"]
    return (answer["index"]["built_at"], retrieval["model"], retrieval["revision"],
            retrieval["index"])


def status_of(answer: dict[str, Any], name: str) -> str:
    (hit,) = [h for h in answer["arms"]["semantic"]["hits"] if h["name"] == name]
    return hit["index_status"]


def assert_old(answer: dict[str, Any], before: dict[str, Any]) -> None:
    """The old index answered: the same stamp, the same hits with the same scores, the
    mallard ranked by its old text and marked stale."""
    assert provenance(answer) == provenance(before)
    assert answer["arms"]["semantic"]["hits"] == before["arms"]["semantic"]["hits"]
    assert "mallard" not in ranked(answer)[:TOP], ranked(answer)
    assert answer["index"]["stale"] == 1


def assert_new(answer: dict[str, Any], before: dict[str, Any]) -> None:
    """The new index answered: a new stamp (same model, revision and path), the
    mallard's new text ranked, every card fresh."""
    assert answer["index"]["built_at"] != before["index"]["built_at"]
    assert provenance(answer)[1:] == provenance(before)[1:]
    assert "mallard" in ranked(answer)[:TOP], ranked(answer)
    assert status_of(answer, "mallard") == "fresh"
    assert answer["index"]["stale"] == 0


def test_a_build_run_elsewhere_held_then_landed_is_swapped_in_by_the_watcher(
    tmp_path: Any,
) -> None:
    raw = RawServer(tmp_path, "--poll", "0.1")
    rewrite_the_mallard(raw.vault)
    with initialized(raw) as server:
        client = Client(server)
        before = client.search()
        assert "mallard" not in ranked(before)[:TOP]
        held = start_held_build(raw.vault, "rename", "--built-at", STAMP)
        try:
            held.wait_held()
            assert_old(client.search(), before)
            code, _, err = held.release()
            assert code == 0, err
            deadline = time.monotonic() + PATIENCE
            after = client.search()
            while after["index"]["built_at"] == before["index"]["built_at"]:
                assert_old(after, before)  # never a mix: the old index whole, or the new
                assert time.monotonic() < deadline, "the new index was never swapped in"
                time.sleep(0.05)
                after = client.search()
        finally:
            held.stop()
    assert after["index"]["built_at"] == STAMP
    assert_new(after, before)


def test_a_search_while_the_servers_own_build_is_held_answers_from_the_old_index(
    tmp_path: Any,
) -> None:
    """``--poll 0``: no watcher, so the swap is the build tool's own reload."""
    marker = tmp_path / "held"
    raw = RawServer(tmp_path, "--allow-build", "--poll", "0",
                    env={PAUSE_ENV: f"rename:{marker}"})
    rewrite_the_mallard(raw.vault)
    with initialized(raw) as server:
        client = Client(server)
        before = client.search()
        server.send(json.dumps(BUILD))
        deadline = time.monotonic() + PATIENCE
        while not marker.exists():
            assert time.monotonic() < deadline, "the build never reached the rename"
            time.sleep(0.05)
        assert_old(client.search(), before)  # answered while the build call is in flight
        marker.unlink()
        built = tool_result(client.answer(BUILD_ID))
        assert built["state"] == "succeeded" and built["result"]["embedded"] == 1
        assert built["index"]["stale"] == 0
        assert_new(client.search(), before)


FIRST = "---\ntitle: Auk\n---\n# Auk\n\nA card whose name sorts before every other.\n"


def passage_rows(index: Any) -> dict[str, int]:
    """Each card's first passage: its row in the file."""
    with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT card, rowid FROM chunk WHERE ordinal = 0"))


def test_a_server_not_swapped_yet_reads_only_the_index_it_loaded(tmp_path: Any) -> None:
    """``--poll 0``, so nothing swaps: after a build has replaced the file, the snapshot
    loaded before answers as it did, whole. Scoring by best passage reads stored
    vectors from the index at query time, by row; the new file's rows are shifted by a
    card at the front, so a read from it would change the scores."""
    raw = RawServer(tmp_path, "--poll", "0")
    run_build(raw.vault, "--passages", "--built-at", "2026-11-29T09:30:00+00:00")
    index = raw.vault / ".hql" / "index.sqlite"
    rows = passage_rows(index)
    with initialized(raw) as server:
        client = Client(server)
        before = client.search()
        assert before["arms"]["semantic"]["retrieval"]["passages"]  # scored by best passage
        (raw.vault / "aaa-first.hmd").write_text(FIRST, encoding="utf-8")
        rewrite_the_mallard(raw.vault)
        run_build(raw.vault, "--built-at", STAMP)
        assert passage_rows(index)["barn-owl"] != rows["barn-owl"]
        assert client.search() == before
