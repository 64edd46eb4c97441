"""Pytest plugin: the ``fake_hotdata`` fixture.

Use it from a test module with ``pytest_plugins = ["tests.fake_hotdata.fixtures"]``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import FakeHotdata


@pytest.fixture
def fake_hotdata() -> Iterator[FakeHotdata]:
    """A fresh fake Hotdata server on 127.0.0.1 with a free port, stopped after the test.

    Jobs advance only when the test calls ``fake_hotdata.advance_jobs()`` (or switches mode
    with ``fake_hotdata.set_job_mode(...)``).
    """
    fake = FakeHotdata().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def api(fake_hotdata: FakeHotdata):
    """An SDK ``ApiClient`` pointed at ``fake_hotdata``."""
    from .testing import api_client

    with api_client(fake_hotdata) as client:
        yield client
