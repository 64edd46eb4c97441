"""The engine tests' fixtures, a pytest plugin (``pytest_plugins``): the loopback fake
Hotdata server (a test stand-in, not the engine) with a database, the environment that
points the client at it, and the birds vault whose ``[engine]`` table names it.

The fake's jobs run in its "poll" mode here (each read of a job moves it one step, so the
client's own polling drives them), except where the whole process is driven (the CLI, the
app), where they finish at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_hotdata.testing import api_client, create_database
from tests.helpers.engine_vaults import copy_engine_birds

pytest_plugins = ["tests.fake_hotdata.fixtures"]


@pytest.fixture
def fake(fake_hotdata: Any) -> Any:
    """The fake server, its jobs moved one step by each read of them."""
    fake_hotdata.set_job_mode("poll")
    return fake_hotdata


@pytest.fixture
def db(fake: Any) -> Any:
    """A database on the fake, with the default ``cards`` table declared."""
    with api_client(fake) as api:
        return create_database(api)


@pytest.fixture
def env(fake: Any) -> dict[str, str]:
    """The variables that point the client at the fake, as a mapping passed in."""
    return {"HOTDATA_API_KEY": fake.api_key, "HOTDATA_WORKSPACE": fake.workspace_id,
            "HOTDATA_API_URL": fake.url}


@pytest.fixture
def engine_birds(tmp_path: Path, db: Any) -> Path:
    """The birds vault on ``db`` (``copy_engine_birds``), at ``tmp_path/birds``."""
    return copy_engine_birds(tmp_path / "birds", db.id)


@pytest.fixture
def engine_env(fake_hotdata: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The same variables set in this process's environment (the CLI and the app read it)."""
    monkeypatch.setenv("HOTDATA_API_URL", fake_hotdata.url)
    monkeypatch.setenv("HOTDATA_API_KEY", fake_hotdata.api_key)
    monkeypatch.setenv("HOTDATA_WORKSPACE", fake_hotdata.workspace_id)
    return fake_hotdata


@pytest.fixture
def engine_cli_vault(tmp_path: Path, engine_env: Any) -> Path:
    """The birds vault on a new database, the environment set, the fake's jobs immediate:
    what ``hql-tui engine ...`` and the MCP ``status`` tool run on in process."""
    engine_env.set_job_mode("immediate")
    with api_client(engine_env) as api:
        database = create_database(api)
    return copy_engine_birds(tmp_path / "birds", database.id)
