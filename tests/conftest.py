"""Suite-wide isolation: caches and state go to a temporary folder, never the user's.

Set in the environment at start-up so the subprocesses the tests run (the
producer, `hql-tui --list`, the engine CLI) inherit it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The shared helpers' asserts are the tests' own: rewritten for their messages, before any
# test module imports them.
pytest.register_assert_rewrite("tests.helpers")

from producer.embedders import local as local_embedder  # noqa: E402
from tests.helpers.vaults import copy_vault  # noqa: E402

_home = tempfile.mkdtemp(prefix="hql-tests-")


def pytest_configure(config) -> None:  # noqa: ANN001 - pytest hook
    os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
    os.environ.pop("NO_COLOR", None)  # snapshots compare colours


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers set by what a test runs and where it lives, so no test file has to
    remember them: a test that asks for ``minilm`` (the packaged model, loaded in
    process) is ``slow`` (``make test-fast`` leaves it out, ``make test`` runs it); every
    test under ``tests/ui`` is ``ui``; the engine and fake-Hotdata modules are ``engine``."""
    for item in items:
        if "minilm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        if item.path.parent.name == "ui":
            item.add_marker(pytest.mark.ui)
        if "engine" in item.path.stem or "hotdata" in item.path.stem:
            item.add_marker(pytest.mark.engine)


def pytest_unconfigure(config) -> None:  # noqa: ANN001 - pytest hook
    shutil.rmtree(_home, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    """The async tests (the app's, the MCP client's) run on asyncio alone."""
    return "asyncio"


@pytest.fixture
def birds(tmp_path: Path) -> Path:
    """A copy of fixtures/birds at ``tmp_path/birds`` (tests/ui copy it under the
    working directory instead, for a short relative name on screen)."""
    return copy_vault("birds", tmp_path / "birds")


def force_cpu_bf16(mp: pytest.MonkeyPatch, native: bool) -> None:
    """Say whether "the CPU" computes bf16 natively, for this process and its children.

    The seam is an environment variable, so subprocesses inherit it; the flag cache is
    cleared so that nothing read from the host's ``/proc/cpuinfo`` before survives.
    """
    mp.setenv(local_embedder.CPU_BF16_ENV, "1" if native else "0")
    local_embedder._cpuinfo_has_bf16.cache_clear()


@pytest.fixture
def cpu_bf16(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bool], None]]:
    """``cpu_bf16(False)``: every test that touches precision or CPU detection sets the seam.

    A test must never depend on the host CPU (the suite runs on machines with and
    without native bf16); on teardown the seam and the cache are restored.
    """
    yield lambda native: force_cpu_bf16(monkeypatch, native)
    local_embedder._cpuinfo_has_bf16.cache_clear()
