"""Driving ``hql-tui mcp VAULT`` through the MCP SDK's own stdio client, as an agent's
client starts it, and reading the CLI's output beside it."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from hqltui.cli import main


@asynccontextmanager
async def server(vault: Path, *flags: str, env: dict[str, str] | None = None
                 ) -> AsyncIterator[ClientSession]:
    """A child ``hql-tui mcp`` on ``vault``, initialised; its cache beside the vault."""
    cache = vault.parent / "cache"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hqltui.cli", "mcp", str(vault), *flags],
        env={**os.environ, "XDG_CACHE_HOME": str(cache), **(env or {})}, cwd=str(vault.parent),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's answer that is not an error: the JSON of its text (and its structure)."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    payload = json.loads(result.content[0].text)
    assert result.structured_content == payload
    return payload


async def refusal(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool's error answer: one line, no traceback."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    (content,) = result.content
    assert "Traceback" not in content.text and "\n" not in content.text
    return content.text


def run_cli(*argv: str) -> str:
    """What ``hql-tui ARGV`` prints, run in this process."""
    out = io.StringIO()
    with redirect_stdout(out):
        main(list(argv))
    return out.getvalue()
