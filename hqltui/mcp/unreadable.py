"""What each line the client sends becomes: a message for the server, an answer for the
client, or nothing (JSON-RPC 2.0, as ``docs/mcp.md`` states the rule).

A client waiting on a request's id must never wait forever, and a notification's
sender waits for nothing. So, for a line that is not a message the SDK reads:

- not JSON: ``-32700`` with ``"id": null``;
- JSON that is no object, or nested deeper than Python's reader goes: ``-32600``,
  ``"id": null`` (whether it was a request cannot be told);
- an object whose ``id`` is not a string or an integer (``1.5``, ``true``, ``null``,
  an object): ``-32600`` with ``"id": null``; the SDK would take it for a
  notification and never answer it;
- any other invalid object with an ``id`` (a lone surrogate escape, nesting past the
  SDK reader's limit, ``params`` that is not an object): ``-32600`` with that id;
- an object without ``id``: nothing, however invalid (a notification is never answered).

The messages are plain ASCII: a line holding a lone surrogate cannot be echoed back in
UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

BAD_ID = "Invalid request: `id` must be a string or an integer"
NOT_AN_OBJECT = "Invalid request: a message is one JSON object (batches are not read)"
TOO_DEEP = "Invalid request: the message is nested too deeply"


def read_line(line: str) -> SessionMessage | types.JSONRPCError | None:
    """The message a line carries, else the error answering it, else None (unanswered)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return _invalid(line, _refused_text(exc))
    if isinstance(message, types.JSONRPCNotification) and _has_id(line):
        return _error(None, INVALID_REQUEST, BAD_ID)  # an odd id, not a notification
    return SessionMessage(message)


def _invalid(line: str, refused: str | None) -> types.JSONRPCError | None:
    """The answer to a line the SDK's reader refused; ``refused`` is its JSON reader's
    reason when the text itself was refused (not its shape)."""
    try:
        value = json.loads(line)
    except RecursionError:
        return _error(None, INVALID_REQUEST, TOO_DEEP)
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if not isinstance(value, dict):
        return _error(None, INVALID_REQUEST, NOT_AN_OBJECT)
    if "id" not in value:
        return None
    request_id = value["id"]
    if not _is_id(request_id):
        return _error(None, INVALID_REQUEST, BAD_ID)
    if refused is None:
        cause = ("not a JSON-RPC 2.0 request this server reads (check jsonrpc, method and "
                 "that params is an object)")
    elif "recursion limit" in refused:
        return _error(request_id, INVALID_REQUEST, f"{TOO_DEEP} ({refused})")
    elif "escape" in refused or "surrogate" in refused:
        cause = f"the message is not valid Unicode (a lone surrogate escape?): {refused}"
    else:
        cause = f"the JSON reader refused it: {refused}"
    return _error(request_id, INVALID_REQUEST, f"Invalid request: {cause}")


def _refused_text(exc: ValidationError) -> str | None:
    """pydantic's reason when it could not read the text as JSON (plain ASCII), else None."""
    errors = exc.errors(include_input=False, include_url=False)
    if errors and errors[0]["type"] == "json_invalid":
        reason = str((errors[0].get("ctx") or {}).get("error", "invalid JSON"))
        return reason.encode("ascii", "replace").decode("ascii")
    return None


def _has_id(line: str) -> bool:
    try:
        value = json.loads(line)  # pydantic read it; Python's reader should too
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "id" in value


def _is_id(value: Any) -> bool:
    """A string or an integer (not a bool) that UTF-8 can write back."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return False
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return False
    return True


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))
