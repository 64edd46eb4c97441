"""Suite-wide isolation: caches and state go to a temporary folder, never the user's.

Set in the environment at start-up so the subprocesses the tests run (the
producer, `hql-tui --list`, the engine CLI) inherit it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_home = tempfile.mkdtemp(prefix="hql-tests-")


def pytest_configure(config) -> None:  # noqa: ANN001 - pytest hook
    os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
    os.environ.pop("NO_COLOR", None)  # snapshots compare colours


def pytest_unconfigure(config) -> None:  # noqa: ANN001 - pytest hook
    shutil.rmtree(_home, ignore_errors=True)
