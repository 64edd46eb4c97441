"""The MCP tool ``related``: the same JSON as ``hql-tui related --json``; refusals as tool errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.mcp import call, refusal, run_cli, server

pytestmark = pytest.mark.anyio


async def test_related_is_what_the_cli_prints(birds: Path) -> None:
    async with server(birds) as session:
        served = await call(session, "related", name="barn-owl", limit=5)
        unknown = await refusal(session, "related", name="dodo")
        bad_limit = await refusal(session, "related", name="barn-owl", limit=0)
    printed = json.loads(run_cli("related", str(birds), "barn-owl", "--limit", "5", "--json"))
    assert served == printed
    assert [n["card"] for n in served["neighbours"]][:2] == ["eurasian-eagle-owl", "tawny-owl"]
    assert all({"card", "score", "linked"} <= set(n) for n in served["neighbours"])
    assert unknown.startswith("no card is named `dodo`")
    assert "limit `0`" in bad_limit
