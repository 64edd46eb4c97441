"""The one retry rule for engine calls, with the sleep and the clock injectable.

* 409 ``RESOURCE_LOCKED`` and 429 ``OVERLOADED``: wait ``Retry-After`` (or a
  bounded backoff when absent), then resend -- at most ``max_attempts`` sends and
  ``deadline`` seconds in all. These are the only statuses that mean "the
  request did nothing; come back later".
* A 5xx on a read that changes nothing (``transient=True``: a job's status) is
  retried the same way, within the same bounds: a status read failing once must
  not fail a build whose job still runs.
* Any other 4xx/5xx: no retry; ``EngineFailure`` with the engine's own message.
* The connection closed before a reply: ``ConnectionLost``. The request may have
  taken effect, so it is never resent here; the caller re-reads the engine's
  state and decides (a create is never sent twice blindly).
* The host cannot be reached at all (nothing was sent): ``EngineFailure``.

The SDK's own transport retry is switched off (``transport_retry()``), and its
enhanced Query/Load clients are given zero retries, so this is the only loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hqltui.core.engine.errors import (
    ConnectionLost,
    EngineCancelled,
    EngineFailure,
    engine_message,
    error_body,
    reply_problem,
)
from hqltui.core.engine.events import EventSink, Retrying, ignore

T = TypeVar("T")

RETRYABLE = {409: "RESOURCE_LOCKED", 429: "OVERLOADED"}


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6  # sends in all, the first included
    base_backoff: float = 0.5  # when the engine sends no Retry-After
    max_backoff: float = 30.0  # cap on one computed wait (a Retry-After is honoured as sent)
    deadline: float = 120.0  # seconds across every wait of one call


def transport_retry() -> Any:
    """A urllib3 retry that never resends anything (the SDK's default resends POSTs)."""
    from urllib3.util.retry import Retry

    return Retry(total=0, connect=0, read=0, redirect=0, status=0, other=0,
                 raise_on_status=False, raise_on_redirect=False)


def retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    value = headers.get("Retry-After") or headers.get("retry-after")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def is_retryable(exc: BaseException, transient: bool = False) -> bool:
    status = getattr(exc, "status", None)
    if transient and isinstance(status, int) and 500 <= status <= 599:
        return True
    if status not in RETRYABLE:
        return False
    code, _ = error_body(exc)
    # 429 is unambiguous; a 409 is retried only for RESOURCE_LOCKED (CONFLICT and
    # IDEMPOTENCY_KEY_CONFLICT are not transient).
    return status == 429 or code == RETRYABLE[409]


def is_connection_error(exc: BaseException) -> bool:
    try:
        from urllib3.exceptions import HTTPError
    except ImportError:  # pragma: no cover - urllib3 ships with the SDK
        return False
    return isinstance(exc, HTTPError | ConnectionError)


def _unreachable(exc: BaseException) -> bool:
    """True when nothing was sent: the connection could not even be opened."""
    from urllib3.exceptions import MaxRetryError, NewConnectionError

    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    return isinstance(reason, NewConnectionError | ConnectionRefusedError)


def cancellable_sleep(cancel: threading.Event | None) -> Callable[[float], None]:
    """The default sleep: ``cancel.wait`` when there is a cancel event, so a set
    cancel ends a Retry-After or poll wait at once instead of after it."""
    if cancel is None:
        return time.sleep

    def wait(seconds: float) -> None:
        cancel.wait(seconds)

    return wait


def check_cancel(cancel: threading.Event | None, operation: str = "engine") -> None:
    if cancel is not None and cancel.is_set():
        raise EngineCancelled(f"{operation} cancelled")


def call(
    what: str,
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_event: EventSink = ignore,
    operation: str = "engine",
    idempotent: bool = False,
    transient: bool = False,
    cancel: threading.Event | None = None,
    timeout: float | None = None,
) -> T:
    """``fn()`` under the retry rule above.

    ``idempotent=True`` (reads: GETs and read-only SQL) also resends after a dropped
    connection, within the same bounds; a create or a load never is. ``transient=True``
    (a job-status read) retries a 5xx too. With a
    ``cancel`` event the default sleep is ``cancel.wait`` and every wait is
    followed by a check: a set cancel raises ``EngineCancelled`` instead of resending.
    """
    from hotdata.exceptions import ApiException

    if sleep is None:
        sleep = cancellable_sleep(cancel)

    start = clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except ApiException as exc:
            status = getattr(exc, "status", None)
            code, _ = error_body(exc)
            message = engine_message(exc)
            if not is_retryable(exc, transient):
                raise EngineFailure(f"{what}: {message}", status=status, code=code) from exc
            if attempt >= policy.max_attempts:
                raise EngineFailure(
                    f"{what}: still {status} {code or ''} after {attempt} attempts: {message}",
                    status=status, code=code,
                ) from exc
            wait = retry_after(exc)
            if wait is None:
                wait = min(policy.base_backoff * 2 ** (attempt - 1), policy.max_backoff)
            if clock() - start + wait > policy.deadline:
                raise EngineFailure(
                    f"{what}: still {status} {code or ''} and waiting {wait:g}s more would pass "
                    f"the {policy.deadline:g}s retry budget: {message}",
                    status=status, code=code,
                ) from exc
            on_event(Retrying(operation, what, status, code, attempt, wait, message))
            sleep(wait)
            check_cancel(cancel, operation)
        except Exception as exc:
            if not is_connection_error(exc):
                problem = reply_problem(exc)
                if problem is None:
                    raise
                raise EngineFailure(f"{what}: {problem}") from exc
            if _unreachable(exc):
                raise EngineFailure(f"{what}: cannot reach the engine ({_short(exc)})") from exc
            lost = _no_reply(exc, timeout)
            if idempotent and attempt < policy.max_attempts:
                wait = min(policy.base_backoff * 2 ** (attempt - 1), policy.max_backoff)
                if clock() - start + wait <= policy.deadline:
                    on_event(Retrying(operation, what, None, None, attempt, wait,
                                      f"{lost} (a read; resent)"))
                    sleep(wait)
                    check_cancel(cancel, operation)
                    continue
            raise ConnectionLost(f"{what}: {lost}") from exc


def _no_reply(exc: BaseException, timeout: float | None) -> str:
    """Why no reply came, in words: the wait (``timeout``, the request's) ran out, or the
    connection closed. Either way the request may or may not have taken effect."""
    from urllib3.exceptions import MaxRetryError, ReadTimeoutError

    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    if isinstance(reason, ReadTimeoutError | TimeoutError):
        within = f" within {timeout:g} s" if timeout is not None else " in time"
        return f"the engine did not reply{within} (the request may still take effect)"
    return f"the connection closed before the engine replied ({_short(exc)})"


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:197] + "..."
