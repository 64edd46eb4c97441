"""Hermetic app tests: fixed clock, no blink, no file watcher, no host state.

Every test runs in its own temporary directory holding a copy of the vault it
needs under a short relative name (``birds``, ``mini``), so paths shown on
screen are the same on every machine, and edits never touch the fixtures.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

# Helper modules imported by test files and also named as plugins: rewrite their
# asserts before the first import.
pytest.register_assert_rewrite("tests.ui.engine_helpers")

from hqltui.ui.app import HqlApp  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)  # the birds index was built 3 days before
SIZE = (120, 36)


def fixed_clock() -> datetime:
    return NOW


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("HQL_TUI_READY_FILE", raising=False)
    monkeypatch.setenv("HQL_TUI_HISTORY", str(tmp_path / "state" / "history.jsonl"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user keymap
    monkeypatch.delenv("HQL_TUI_KEYMAP", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def copy_vault(name: str, dest: str | None = None) -> Path:
    """Copy ``fixtures/NAME`` into the test's working directory; return the relative path."""
    target = Path(dest or name)
    shutil.copytree(FIXTURES / name, target)
    return target


@pytest.fixture
def birds() -> Path:
    return copy_vault("birds")


@pytest.fixture
def mini() -> Path:
    return copy_vault("mini")


def new_app(vault: Path | str, **kwargs: object) -> HqlApp:
    """The app as every test (and ``scripts/screenshots.py``) runs it: fixed clock, no blink."""
    options: dict[str, object] = {
        "clock": fixed_clock,
        "poll_interval": None,
        "cursor_blink": False,
        "debounce": 0.01,
    }
    options.update(kwargs)
    app = HqlApp(vault, **options)  # type: ignore[arg-type]
    app.animation_level = "none"
    return app


@pytest.fixture
def make_app() -> Callable[..., HqlApp]:
    return new_app


async def settle(pilot, rounds: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Let debounce timers fire and every worker finish, then let the screen catch up."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause(0.05)
        await _workers_done(app)
        await pilot.pause()


async def _workers_done(app) -> None:  # type: ignore[no-untyped-def]
    """Wait for every worker that is not cancelled. An exclusive worker (a file-watch
    check, a query) is cancelled when a newer one replaces it; that is the app working,
    not a failure, so the wait goes on with the workers still alive."""
    from textual.worker import WorkerCancelled

    for _ in range(50):
        alive = [w for w in app.workers if not w.is_cancelled]
        try:
            await app.workers.wait_for_complete(alive)
            return
        except WorkerCancelled:
            continue


async def type_query(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    """Put ``text`` in the query input in one change (one answer, deterministic selection)."""
    from hqltui.ui.widgets.query import QueryInput

    pilot.app.main.query_one(QueryInput).value = text
    await settle(pilot)


def paraphrase_queries() -> list[str]:
    import tomllib

    path = FIXTURES / "birds" / "queries.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [q["text"] for q in data.get("query", []) if q.get("kind") == "paraphrase"]
