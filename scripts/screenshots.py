"""Regenerate ``screenshots/*.svg`` from the snapshot tests' own states.

Run from the repository root: ``.venv/bin/python scripts/screenshots.py``.

Each screenshot is one snapshot test run for real: the test function is called
with a stand-in for ``snap_compare`` that keeps the app and its ``run_before``
instead of comparing, then the app is driven exactly as the test drives it and
its screen is saved. So a screenshot shows what its snapshot test pins — the
same vault copy, the same 120×36 terminal, the same fixed clock — and there is
no second copy of any setup to drift.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
sys.path.insert(0, str(ROOT))

from tests.helpers.vaults import copy_vault  # noqa: E402
from tests.ui import test_jobs_snapshots as jobs  # noqa: E402
from tests.ui import test_labels_snapshots as labels  # noqa: E402
from tests.ui import test_snapshots as main  # noqa: E402
from tests.ui.conftest import new_app  # noqa: E402

# name → (test function, extra arguments), in docs/app.md's order.
STATES: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "main-group-query": (main.test_group_query, {"query": main.GROUP_QUERIES[0]}),
    "stale-warnings": (main.test_stale_and_missing, {}),
    "card-detail": (main.test_card_detail, {}),
    "build-in-progress": (jobs.test_build_in_progress, {}),
    "build-finished": (jobs.test_build_finished, {}),
    "verify-result": (jobs.test_verify_with_problems, {}),
    "configure-index": (jobs.test_configure_index_confirmation, {}),
    "labelled-query": (labels.test_labelled_query_with_marks_and_metrics, {}),
    "labelled-queries": (labels.test_labelled_queries_screen, {}),
    "tune-result": (labels.test_tune_result, {}),
    "help": (main.test_help, {}),
}


def hermetic(workdir: Path) -> None:
    """What the tests' autouse fixture does: no host history, cache or colour setting."""
    os.environ.pop("NO_COLOR", None)
    os.environ.pop("HQL_TUI_READY_FILE", None)
    os.environ["HQL_TUI_HISTORY"] = str(workdir / "state" / "history.jsonl")
    os.environ["XDG_CACHE_HOME"] = str(workdir / "cache")
    os.environ["XDG_STATE_HOME"] = str(workdir / "state")
    os.chdir(workdir)


async def shoot(name: str, test: Callable[..., Any], extra: dict[str, Any]) -> Path:
    kept: dict[str, Any] = {}

    def snap_compare(app: Any, terminal_size: tuple[int, int], run_before: Any = None,
                     **_: Any) -> bool:
        kept.update(app=app, size=terminal_size, run_before=run_before)
        return True

    test(snap_compare, new_app, copy_vault("birds"), **extra)
    app = kept["app"]
    async with app.run_test(size=kept["size"]) as pilot:
        if kept["run_before"] is not None:
            await kept["run_before"](pilot)
        await pilot.pause()
        svg = app.export_screenshot(title=f"hql-tui · {name}")
    path = OUT / f"{name}.svg"
    path.write_text(svg, encoding="utf-8")
    return path


def main_() -> int:
    wanted = sys.argv[1:] or list(STATES)
    unknown = [name for name in wanted if name not in STATES]
    if unknown:
        print(f"unknown screenshot {', '.join(unknown)}; known: {', '.join(STATES)}",
              file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    home = Path.cwd()
    for name in wanted:
        with tempfile.TemporaryDirectory(prefix="hql-shot-") as tmp:
            hermetic(Path(tmp))
            try:
                path = asyncio.run(shoot(name, *STATES[name]))
            finally:
                os.chdir(home)
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main_())
