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
    """The engine's own words for an SDK error; the HTTP status only when it sent none."""
    _, message = error_body(exc)
    if message:
        return message
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or "no reason given"
    if status:
        return f"HTTP {status} {reason} (the engine sent no error message)"
    return str(exc) or type(exc).__name__
