"""`hql-tui mcp VAULT` driven through the MCP SDK's own stdio client: the server is a
child process speaking the protocol on its stdout, as an agent's client starts it."""

from __future__ import annotations

import json
import shutil
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

from hqltui.core.agent import SEARCH_MODES, SNIPPET_CHARS
from hqltui.core.arms import DEFAULT_FUSION
from hqltui.core.results import MODES
from producer.wording import with_fix
from tests.helpers.mcp import call, refusal, run_cli, server
from tests.helpers.vaults import FIXTURES, edit_card
from tests.mcp_raw import alive

BIRDS = FIXTURES / "birds"
GROUPS = [q for q in tomllib.loads((BIRDS / "queries.toml").read_text(encoding="utf-8"))["query"]
          if q.get("kind") == "paraphrase"]
# What search adds to query --json's hits.
ADDED = {"name", "title", "path", "snippet", "index_status"}

pytestmark = pytest.mark.anyio


async def test_the_tools_are_listed_with_their_schemas(birds: Path) -> None:
    async with server(birds) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert list(listed) == ["search", "get_card", "status", "verify", "related"]  # no build
    for tool in listed.values():
        assert tool.description and tool.input_schema["type"] == "object"
    mode = listed["search"].input_schema["properties"]["mode"]
    assert mode["enum"] == list(SEARCH_MODES) and mode["default"] == "hybrid"
    assert set(MODES) | {"lexical"} == set(mode["enum"])  # query --mode's names, and lexical
    assert listed["search"].input_schema["required"] == ["text"]


@pytest.mark.parametrize("group", GROUPS[:2], ids=[g["text"] for g in GROUPS[:2]])
async def test_search_finds_a_group_by_meaning_with_provenance(birds: Path, group) -> None:
    async with server(birds) as session:
        semantic = await call(session, "search", text=group["text"], mode="semantic", limit=3)
        hybrid = await call(session, "search", text=group["text"], limit=5)
    ranking = semantic["arms"]["semantic"]
    assert {h["name"] for h in ranking["hits"]} <= set(group["relevant"])
    retrieval = ranking["retrieval"]
    assert retrieval["arm"] == "semantic" and retrieval["query_vector_source"] == "index"
    assert retrieval["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    for hit in ranking["hits"]:
        assert hit["path"] == f"{hit['name']}.hmd" and hit["title"]
        assert 0 < len(hit["snippet"]) <= SNIPPET_CHARS
    fused = hybrid["arms"]["hybrid"]
    assert fused["retrieval"]["fusion"] == DEFAULT_FUSION.method  # what the app shows
    assert fused["retrieval"]["fusion_config"] and fused["retrieval"]["alpha"] is not None
    assert [a["arm"] for a in fused["retrieval"]["arms"]] == ["bm25", "semantic"]
    assert all(set(h["arms"]) == {"bm25", "semantic"} for h in fused["hits"])


async def test_search_carries_exactly_what_query_json_carries(birds: Path) -> None:
    text = GROUPS[0]["text"]
    async with server(birds) as session:
        served = await call(session, "search", text=text, mode="all")
    printed = json.loads(run_cli("query", str(birds), text, "--json"))
    for ranking in served["arms"].values():
        for hit in ranking["hits"]:
            assert hit["name"] == hit["card"]
            for key in ADDED:
                del hit[key]
    served["vault"] = printed["vault"]  # the server names the vault as it was given
    for ranking in printed["arms"].values():  # search echoes the query once, at the top
        retrieval = ranking["retrieval"]
        for arm in (retrieval, *retrieval.get("arms", ())):
            assert arm.pop("query") == text
    assert served == printed


async def test_a_long_query_is_echoed_once(birds: Path) -> None:
    """Every retrieval answered the same text: a copy in each made a 1 MB query a
    14 MB answer."""
    text = "heron " * 20_000
    async with server(birds) as session:
        result = await session.call_tool("search", {"text": text, "mode": "all", "limit": 1})
    assert not result.is_error
    assert result.structured_content is not None
    assert json.dumps(result.structured_content).count(text) == 1
    assert set(result.structured_content["arms"]) == set(MODES) - {"all"}


async def test_an_argument_the_schema_does_not_name_is_refused(birds: Path) -> None:
    async with server(birds) as session:
        assert await refusal(session, "search", text="owl", colour="red") == (
            "search: unknown argument `colour`; fix: give only `text`, `mode`, `limit`")
        assert await refusal(session, "status", verbose=True, deep=1) == (
            "status: unknown arguments `verbose`, `deep`; fix: call it with no arguments")


async def test_a_snippet_is_cut_around_the_first_query_word(birds: Path) -> None:
    async with server(birds) as session:
        found = await call(session, "search", text="kestrel", mode="bm25", limit=1)
    (hit,) = found["arms"]["bm25"]["hits"]
    assert "kestrel" in hit["snippet"].lower() and len(hit["snippet"]) <= SNIPPET_CHARS


async def test_status_agrees_with_the_list_index_line(birds: Path) -> None:
    async with server(birds) as session:
        status = await call(session, "status")
    listing = run_cli(str(birds), "--list").splitlines()
    assert status["setting"] == listing[1]  # "index  .hql/index.sqlite  (present)"
    index = status["index"]
    assert index["state"] == "ok" and index["fresh"] == status["cards"] == 58
    assert index["stale"] == index["missing"] == index["orphan"] == 0
    assert len(index["names"]["fresh"]) == 50 and index["names_cut_at"] == 50
    assert index["model"] == "sentence-transformers/all-MiniLM-L6-v2" and index["built_at"]
    assert status["engine"] is None  # no [engine] table
    assert status["reload"]["poll_seconds"] == 2.0 and status["reload"]["reload_error"] is None


async def test_get_card_and_verify(birds: Path) -> None:
    async with server(birds) as session:
        card = await call(session, "get_card", name="barn-owl")
        report = await call(session, "verify")
    assert card["title"] == "Barn owl" and card["path"] == "barn-owl.hmd"
    assert "barn owl" in card["text"].lower() and card["truncated"] is False
    assert card["index_status"] == "fresh"
    assert card["links"] == card["backlinks"] == ["tytonidae"] and card["unresolved_links"] == []
    assert report["clean"] is True and report["cards"] == 58


async def test_refusals_are_error_results_with_their_fix(birds: Path) -> None:
    async with server(birds) as session:
        assert await refusal(session, "get_card", name="nope") == (
            "no card is named `nope`; fix: use a name from search hits (`name`) or from status")
        assert await refusal(session, "search", text="  ") == (
            "the query is blank; fix: give the text to rank")
        assert await refusal(session, "build") == (
            "the build tool is off: this server is read-only; fix: start it with "
            "`hql-tui mcp VAULT --allow-build`")


async def test_an_arm_that_refuses_is_an_error_worded_as_query_json(birds: Path) -> None:
    shutil.rmtree(birds / ".hql")
    text = "owls at night"
    printed = json.loads(run_cli("query", str(birds), text, "--mode", "semantic", "--json"))
    expected = printed["arms"]["semantic"]["refusal"]
    async with server(birds) as session:
        line = await refusal(session, "search", text=text, mode="semantic")
        both = await call(session, "search", text=text, mode="all")
    assert line == with_fix(expected["message"], expected["fix"])
    assert both["arms"]["semantic"]["refusal"] == expected  # refused arms inside an answer
    assert both["arms"]["bm25"]["hits"]


async def test_an_edit_reloads_the_vault_and_the_card_is_stale(birds: Path) -> None:
    async with server(birds, "--poll", "0.1") as session:
        assert (await call(session, "get_card", name="great-cormorant"))["index_status"] == "fresh"
        with anyio.fail_after(60):
            while not (await call(session, "status"))["reload"]["watching"]:
                await anyio.sleep(0.05)
        edit_card(birds, "great-cormorant")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = await call(session, "status")
            if status["index"]["stale"]:
                break
            await anyio.sleep(0.1)
        assert status["index"]["names"]["stale"] == ["great-cormorant"]
        card = await call(session, "get_card", name="great-cormorant")
        found = await call(session, "search", text="cormorant", mode="semantic")
    assert card["index_status"] == "stale" and "dries its wings" in card["text"]
    stale = [w for w in found["warnings"] if w["kind"] == "stale"]
    assert [w["cards"] for w in stale] == [["great-cormorant"]]
    hits = {h["name"]: h["index_status"] for h in found["arms"]["semantic"]["hits"]}
    assert hits["great-cormorant"] == "stale"
    assert {status for name, status in hits.items() if name != "great-cormorant"} == {"fresh"}


async def test_a_cancelled_build_stops_the_producer_and_keeps_the_index(
    birds: Path, tmp_path: Path
) -> None:
    edit_card(birds, "great-cormorant")
    index = birds / ".hql" / "index.sqlite"
    before = index.read_bytes()
    marker = tmp_path / "paused"
    pause = {"HQL_SEMANTICS_TEST_PAUSE": f"embedding:{marker}"}
    progress: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with server(birds, "--allow-build", env=pause) as session:
        assert "build" in [t.name for t in (await session.list_tools()).tools]
        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()

            async def build() -> None:
                with scope:
                    await session.call_tool("build", {}, progress_callback=on_progress)

            group.start_soon(build)
            with anyio.fail_after(180):
                while not marker.exists():
                    await anyio.sleep(0.05)
            scope.cancel()  # the client abandons the call: notifications/cancelled
        pid = int(marker.read_text(encoding="utf-8"))
        with anyio.fail_after(30):
            while alive(pid):
                await anyio.sleep(0.05)
        status = await call(session, "status")
    assert any(m and "1 to embed" in m for m in progress), progress
    assert status["index"]["names"]["stale"] == ["great-cormorant"]  # nothing was rebuilt
    assert index.read_bytes() == before
    left = sorted(p.name for p in index.parent.iterdir() if not p.name.endswith(".lock"))
    assert left == ["index.sqlite"], "a temporary file or journal was left behind"


async def test_a_search_sent_while_the_vault_loads_waits_for_it_and_is_answered(
    birds: Path, tmp_path: Path
) -> None:
    """The handshake is answered before the vault is read; a search arriving meanwhile
    waits for the load (it is never refused as not ready) and gets the full answer."""
    import threading

    from hqltui.core.session import Session
    from hqltui.mcp.served import Served
    from hqltui.mcp.server import Tools

    release = threading.Event()

    def load() -> Session:
        assert release.wait(60), "the test never let the load go on"
        return Session.load(birds, cache_dir=tmp_path / "cache")

    served = Served(str(birds), load, poll=None)
    served.start()
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await Tools(served).call(None, "search", {"text": GROUPS[0]["text"]}))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.sleep(0.2)
        assert answers == []  # still waiting on the load, not refused
        release.set()
    (answer,) = answers
    assert not answer.is_error, answer.content[0].text
    hybrid = json.loads(answer.content[0].text)["arms"]["hybrid"]
    assert hybrid["refusal"] is None and hybrid["hits"]
    assert {a["query_vector_source"] for a in hybrid["retrieval"]["arms"]} >= {"index"}


async def test_an_edit_saved_while_the_first_load_reads_the_vault_is_not_lost(
        birds: Path, tmp_path: Path) -> None:
    """The first look is taken after the first load (off the first search's path); a card
    saved after the load read it, before that look, must still be read again: with a
    plain signature taken then, the server kept the old text for good."""
    from hqltui.core.session import Session
    from hqltui.mcp.served import Served

    def load_then_edit() -> Session:
        session = Session.load(birds, cache_dir=tmp_path / "c")
        edit_card(birds, "great-cormorant")  # saved once the load has read the file
        return session

    served = Served(str(birds), load_then_edit, poll=0.05)
    served.start()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(served.watch)
        with anyio.fail_after(60):
            while served.session is None or "dries its wings" not in \
                    served.session.card("great-cormorant").text:
                await anyio.sleep(0.05)
        tasks.cancel_scope.cancel()


def test_a_reload_after_the_index_alone_changed_keeps_the_cards(birds: Path,
                                                                tmp_path: Path) -> None:
    """The server's reload reads only the index again when no other file changed since
    the session was read (a build landed), and the whole vault when a card changed."""
    import os

    from hqltui.core.session import Session
    from hqltui.core.watch import before_load
    from hqltui.mcp.served import Served
    from tests.helpers.vaults import edit_card

    served = Served(str(birds), lambda: Session.load(birds, cache_dir=tmp_path / "c"),
                    poll=None)
    served.start()
    assert served._ready.wait(60)
    first = served.session
    served.signature = before_load(birds)  # as the watch takes it
    index = first.config.index_path
    stat = os.stat(index)
    os.utime(index, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # "rebuilt"
    served.reload()
    kept = served.session
    assert kept is not first and kept.vault is first.vault
    edit_card(birds)
    served.reload()
    assert served.session.vault is not kept.vault
    assert "dries its wings on posts" in served.session.card("great-cormorant").text
