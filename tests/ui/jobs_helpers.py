"""Helpers for the jobs tests: a fake producer as the build command, waiting for job states."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hqltui.core.jobs import IndexBuildJob, JobEvent

FAKE = Path(__file__).with_name("fake_producer.py")
CONTROL = Path("jobs-control")  # relative: tests and the screenshot script run in a temp dir


def fake_build(control: Path, mode: str = "ok") -> Callable[..., IndexBuildJob]:
    """A job factory for ``app.job_factories["index-build"]`` running ``fake_producer.py``."""
    control.mkdir(parents=True, exist_ok=True)

    def factory(vault: Path, out: Path, *, clock: Callable[[], float]) -> IndexBuildJob:
        command = [sys.executable, str(FAKE), str(control), mode]
        return IndexBuildJob(kind="index-build", title="index: build", command=command,
                             clock=clock)

    return factory


async def wait_for_event(pilot: Any, kind: str, test: Callable[[JobEvent], bool],
                         timeout: float = 30.0) -> JobEvent:
    """Until the app has drawn an event of ``kind`` that passes ``test`` (each event
    drawn is a ``job-shown`` mark)."""
    app = pilot.app

    def passed() -> bool:
        event = app.last_job_events.get(kind)
        return event is not None and test(event)

    try:
        await asyncio.wait_for(app.marks.until(passed), timeout)
    except TimeoutError:
        raise AssertionError(f"no {kind} event passed the test; last: "
                             f"{app.last_job_events.get(kind)}") from None
    await pilot.pause()
    return app.last_job_events[kind]


async def wait_for_file(pilot: Any, path: Path, timeout: float = 30.0) -> None:
    """Until the fake producer (another process) writes ``path``: polled, the one thing
    here the app cannot tell."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not path.exists():
        if loop.time() > deadline:
            raise AssertionError(f"{path} never appeared")
        await pilot.pause(0.05)


async def settle_beside_jobs(pilot: Any, rounds: int = 3) -> None:
    """``settle`` for while a job runs: waits for every worker but the jobs' own."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        app.queries.timer.idle()  # the typing burst ends (tests.helpers.waits.ManualDebounce)
        others = [w for w in app.workers if w.group != "jobs"]
        if others:  # an empty list would mean "every worker" to wait_for_complete
            await app.workers.wait_for_complete(others)
        await pilot.pause()
