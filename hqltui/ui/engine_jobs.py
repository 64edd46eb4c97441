"""Starting the engine jobs from the app: "engine: sync + build" (F11), "engine: verify" (F12).

The jobs themselves live in ``hqltui.core.engine.jobs``; this module hands them
to the app's jobs panel (``start_job`` of the jobs mixin) with the session's
own cards, and says what a finished job changes: the engine row checks the
engine again and re-asks the query; a verify's report goes straight into the
header counts.
"""

from __future__ import annotations

import time
from typing import Any


def _make(app: Any, kind: str) -> Any:
    from hqltui.core.engine.jobs import engine_sync_build_job, engine_verify_job
    from hqltui.core.engine.local import LocalCards

    session = app.session
    factory = engine_sync_build_job if kind == "sync" else engine_verify_job
    return factory(
        app.vault_path,
        local=lambda: LocalCards.from_session(session),
        clock=getattr(app, "job_clock", time.monotonic),
        engine_options=dict(getattr(app, "engine_options", None) or {}),
    )


def start(app: Any, kind: str) -> bool:
    """Start ``sync`` (sync + build) or ``verify``; False when it cannot start."""
    if app.session is None:
        app.notify("the vault is still loading", severity="warning", timeout=2)
        return False
    job = _make(app, kind)

    def finished(event: Any) -> None:
        from hqltui.ui.widgets.engine import EngineRow

        row = app.main.query_one(EngineRow)
        report = getattr(job, "report", None)
        if report is not None:
            row.set_report(report)
        elif row.active:
            row.check()
        if row.active:
            row.start_query(app.generation, app.text, submitted=False)

    return bool(app.start_job(job, on_finished=finished))
