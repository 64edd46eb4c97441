"""An answer for every line the client sends, even one that cannot be read.

The SDK's stdio transport hands a line it cannot validate (not JSON, a lone
surrogate escape, ``params`` that is not an object) to the server as an
``Exception``, and the server drops it: a client waiting on that request's id
waits forever. JSON-RPC 2.0 answers such a line: ``-32700`` (parse error) for
text that is not JSON, ``-32600`` (invalid request) for JSON that is not a
request this server can read, with the request's id when one can be read, else
``null``. The message is plain ASCII: a line holding a lone surrogate cannot be
echoed back in UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _request_id(value: Any) -> int | str | None:
    found = value.get("id") if isinstance(value, dict) else None
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, str) and not found.isascii():
        return None  # may hold a lone surrogate, which UTF-8 cannot write
    return found


def reply_to(exc: Exception) -> types.JSONRPCError:
    """The error response to a line the transport could not read."""
    errors: list[dict[str, Any]] = []
    try:
        errors = list(exc.errors())  # type: ignore[attr-defined]  (pydantic's ValidationError)
    except Exception:  # noqa: BLE001 - any other exception: no detail to read
        errors = []
    raw = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" else None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)  # Python's reader takes what pydantic's refused
        except ValueError:
            return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
                code=PARSE_ERROR, message="Parse error: the line is not JSON"))
        return types.JSONRPCError(jsonrpc="2.0", id=_request_id(parsed), error=types.ErrorData(
            code=INVALID_REQUEST,
            message="Invalid request: the message is not valid Unicode (a lone surrogate "
                    "escape?)"))
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
        code=INVALID_REQUEST,
        message="Invalid request: not a JSON-RPC 2.0 message this server reads (check "
                "jsonrpc, id, method and that params is an object)"))


class Answering:
    """The transport's read stream, answering each unreadable line on ``write`` and
    passing everything else (and the sender's context) through unchanged."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._inner.__anext__()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(reply_to(item)))

    async def receive(self) -> Any:
        return await self.__anext__()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> Answering:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
