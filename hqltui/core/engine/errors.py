"""What an engine operation raises instead of answering.

``EngineRefused`` means nothing was sent (or nothing should be): configuration, a
local index that cannot be uploaded honestly. ``EngineFailure`` means the engine
was asked and the operation did not complete; its message is the engine's own
text whenever the engine gave one. ``EngineCancelled`` is the caller's cancel.
"""

from __future__ import annotations

import json
from typing import Any

from hqltui.core.ranking import Refusal


class EngineError(Exception):
    """Base class: ``str(exc)`` is one line for the user."""


class EngineRefused(EngineError):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class EngineFailure(EngineError):
    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail  # e.g. a job's error_message, verbatim


class ConnectionLost(EngineFailure):
    """The connection closed before a reply: the request may or may not have taken effect."""


class EngineCancelled(EngineError):
    pass


def error_body(exc: BaseException) -> tuple[str | None, str | None]:
    """``(code, message)`` from an SDK ``ApiException``'s JSON error body, if it has one."""
    data = getattr(exc, "data", None)
    detail = getattr(data, "error", None)
    code = getattr(detail, "code", None)
    message = getattr(detail, "message", None)
    if isinstance(message, str) and message:
        return (code if isinstance(code, str) else None), message
    body: Any = getattr(exc, "body", None)
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str) and body.strip():
        try:
            parsed = json.loads(body)
        except ValueError:
            return None, body.strip()[:500]
        if isinstance(parsed, dict):
            err = parsed.get("error")
            if isinstance(err, dict):
                code = err.get("code") if isinstance(err.get("code"), str) else None
                msg = err.get("message") if isinstance(err.get("message"), str) else None
                return code, (msg or None)
            if isinstance(parsed.get("message"), str):
                return None, parsed["message"]
    return None, None


def engine_message(exc: BaseException) -> str:
    """The engine's own words for an SDK error; the HTTP status only when it sent none.
    An upload's error wraps the API error it met (``api_exception``): its words are used,
    never the SDK's text, which spells out every HTTP header."""
    wrapped = getattr(exc, "api_exception", None)
    if isinstance(wrapped, BaseException):
        return engine_message(wrapped)
    _, message = error_body(exc)
    if message:
        return message
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or "no reason given"
    if status:
        return f"HTTP {status} {reason} (the engine sent no error message)"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


BEGINNING = 40  # characters of a reply that is not JSON, shown to say what came instead


def reply_problem(exc: BaseException) -> str | None:
    """What is wrong with a reply the SDK could not read (None: ``exc`` is not that):
    not JSON at all, or JSON of another shape than the API's model. One line, never the
    decoder's column numbers or the model validator's page of field errors."""
    if isinstance(exc, json.JSONDecodeError):
        begins = " ".join(exc.doc[:BEGINNING].split())
        return f"the engine's reply is not JSON (it begins `{begins}`)" if begins else (
            "the engine's reply is empty, not JSON")
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the reply"
        more = exc.error_count() - 1
        return (f"the engine's reply does not have the expected shape ({exc.title}: "
                f"`{where}`: {first['msg']}" + (f"; {more} more problems)" if more else ")"))
    return None
