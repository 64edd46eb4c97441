"""The MCP server's start-up collector pause (``hqltui.mcp.gcpause``): off while the
start runs, back on once every part has ended, and the start's objects released again
when a reload replaces them, so a long-running server never loses the collector."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from hqltui.mcp.gcpause import GcPause


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_off_until_every_part_has_ended_then_on_and_frozen() -> None:
    kept = [[object()] for _ in range(1000)]  # container objects the collector tracks
    pause = GcPause(parts=2)
    pause.pause()
    assert not gc.isenabled()
    other = threading.Thread(target=pause.done)  # the load thread ends first
    other.start()
    other.join()
    assert not gc.isenabled() and gc.get_freeze_count() == 0
    pause.done()  # the SDK import ends
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept)
    pause.done()  # a later call changes nothing
    assert gc.isenabled()


def test_a_reload_releases_the_start_objects_to_the_collector() -> None:
    pause = GcPause(parts=1)
    pause.pause()
    pause.done()
    assert gc.get_freeze_count() > 0
    pause.release()
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    pause.release()  # twice is harmless
    assert gc.isenabled()


def test_a_collector_the_caller_had_off_stays_off() -> None:
    gc.disable()
    pause = GcPause(parts=1)
    pause.pause()
    pause.done()
    assert not gc.isenabled() and gc.get_freeze_count() == 0
