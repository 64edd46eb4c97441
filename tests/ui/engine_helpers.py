"""Engine app tests against the loopback fake Hotdata server (a test stand-in, not the engine).

``engine_vault`` copies fixtures/birds (its committed index is fresh), creates a
database on the fake, writes ``[engine]`` into the copy's ``hql.toml`` and points
the environment at the fake. Nothing shown on screen names the fake's port or
the database id: the header and the columns name the table only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.engine_vaults import add_engine
from tests.helpers.vaults import copy_vault

pytest_plugins = ["tests.helpers.engine_fixtures"]  # engine_env: the variables set


class FrozenEngineClock:
    """The engine client's clock and sleep in tests: time moves only when it sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(0.005)  # let the fake's jobs be stepped from the test thread
        self.now += seconds


def engine_options(clock: FrozenEngineClock | None = None) -> dict[str, Any]:
    clock = clock or FrozenEngineClock()
    return {"clock": clock.clock, "sleep": clock.sleep, "poll_interval": 0.5}


@pytest.fixture
def engine_vault(engine_env: Any) -> Path:
    from tests.fake_hotdata.testing import api_client, create_database

    with api_client(engine_env) as api:
        db = create_database(api)
    root = copy_vault("birds")
    add_engine(root, db.id)
    return root


def sync_and_build(root: Path) -> None:
    """Put the vault on the fake the way `hql-tui engine sync` + `build` do (jobs immediate)."""
    from hqltui.core.engine import LocalCards, Options, build, settings_or_refuse, sync

    local = LocalCards.load(root)
    settings = settings_or_refuse(local)
    options = Options(**engine_options())
    sync(local, settings, options)
    build(settings, options)
