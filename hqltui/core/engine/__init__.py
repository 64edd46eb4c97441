"""Engine indexes on Hotdata: sync, build, verify and search.

Public API (the app and ``hql-tui engine`` build on it; ``hotdata`` and
``pyarrow`` are imported only when an operation runs):

``LocalCards.load(root)`` / ``LocalCards.from_session(session)``
    The vault, ``hql.toml`` and the local semantic index.
``settings_or_refuse(local, env=None) -> EngineSettings``
    ``[engine]`` plus the environment, or ``EngineRefused`` naming what to set
    (no ``[engine]``, no database, key or workspace variable unset, a literal key).
``sync(local, settings, options) -> SyncReport``
``build(settings, options) -> BuildReport``
``verify(local, settings, options) -> VerifyReport``
``search(local, settings, text, mode=, exact=, limit=, live=, options=) -> EngineAnswer``
    Each report has ``summary()`` and ``to_json()``; an ``EngineAnswer`` holds
    ``Ranking``s (``hqltui.core.ranking``) for ``bm25``, ``semantic`` and ``hybrid``,
    each retrieval's ``engine`` record holding the evidence behind it
    (``provenance``: the serving index, the rows' or declared model, the
    statement, the engine's warning, time and run id), and ``statements``.
    ``[engine]`` may describe a table this tool did not build (catalog, schema,
    columns, a declared model): search and verify use it read-only
    (``readonly``), sync and build refuse it.
``Options(on_event=, policy=, sleep=, clock=, poll_interval=, job_timeout=, cancel=)``
    ``on_event`` receives the events of ``hqltui.core.engine.events`` (``Step``,
    ``RowsUploaded``, ``JobProgress``, ``Retrying``) on the operation's thread;
    ``cancel`` is a ``threading.Event`` checked between requests and polls and after
    every wait; with it set and no ``sleep`` injected, a wait is ``cancel.wait``.

Errors: ``EngineRefused`` (``.refusal``: message and fix; nothing was sent),
``EngineFailure`` (the engine's own message; ``.detail`` holds a failed job's
``error_message`` verbatim), ``EngineCancelled``. Never a partial success:
every operation re-reads the engine's state before it reports done.
"""

from hqltui.core.engine.errors import (
    ConnectionLost,
    EngineCancelled,
    EngineError,
    EngineFailure,
    EngineRefused,
)
from hqltui.core.engine.events import EngineEvent, JobProgress, Retrying, RowsUploaded, Step
from hqltui.core.engine.local import LocalCards
from hqltui.core.engine.operations import (
    EXPECTED,
    BuildReport,
    Options,
    Parity,
    Problem,
    SyncReport,
    VerifyReport,
    build,
    parity,
    settings_or_refuse,
    sync,
    verify,
)
from hqltui.core.engine.retry import RetryPolicy
from hqltui.core.engine.search import EngineAnswer, client_fusion, search
from hqltui.core.engine.settings import EngineSettings, resolve

__all__ = [
    "EXPECTED",
    "BuildReport",
    "ConnectionLost",
    "EngineAnswer",
    "EngineCancelled",
    "EngineError",
    "EngineEvent",
    "EngineFailure",
    "EngineRefused",
    "EngineSettings",
    "JobProgress",
    "LocalCards",
    "Options",
    "Parity",
    "Problem",
    "RetryPolicy",
    "Retrying",
    "RowsUploaded",
    "Step",
    "SyncReport",
    "VerifyReport",
    "build",
    "client_fusion",
    "parity",
    "resolve",
    "search",
    "settings_or_refuse",
    "sync",
    "verify",
]
