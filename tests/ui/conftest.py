"""Hermetic app tests: fixed clock, no blink, no file watcher, no host state.

Every test runs in its own temporary directory holding a copy of the vault it
needs under a short relative name (``birds``, ``mini``), so paths shown on
screen are the same on every machine, and edits never touch the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

# Helper modules imported by test files and also named as plugins: rewrite their
# asserts before the first import.
pytest.register_assert_rewrite("tests.ui.engine_helpers")

from hqltui.ui.app import HqlApp  # noqa: E402
from tests.helpers.vaults import FIXTURES, copy_vault  # noqa: E402
from tests.helpers.waits import ManualDebounce  # noqa: E402

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)  # the birds index was built 3 days before
SIZE = (120, 36)


def fixed_clock() -> datetime:
    return NOW


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


@pytest.fixture
def birds() -> Path:
    return copy_vault("birds")


@pytest.fixture
def mini() -> Path:
    return copy_vault("mini")


def new_app(vault: Path | str, **kwargs: object) -> HqlApp:
    """The app as every test (and ``scripts/screenshots.py``) runs it: fixed clock, no blink,
    the debounce ended by the test (``tests.helpers.waits.settle``)."""
    options: dict[str, object] = {
        "clock": fixed_clock,
        "poll_interval": None,
        "cursor_blink": False,
        "debounce": 0.01,
        "debounce_timer": ManualDebounce(),
    }
    options.update(kwargs)
    app = HqlApp(vault, **options)  # type: ignore[arg-type]
    app.animation_level = "none"
    return app


@pytest.fixture
def make_app() -> Callable[..., HqlApp]:
    return new_app


def paraphrase_queries() -> list[str]:
    import tomllib

    path = FIXTURES / "birds" / "queries.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [q["text"] for q in data.get("query", []) if q.get("kind") == "paraphrase"]
