"""Edit → fresh badge with auto-build: the median of single-card edits, broken down,
and the keystroke latency while the builds run.

Runs the app headless (Textual's ``run_test``, 120×36) on a copy of each ``--vault``
(which must hold its index), with the watcher, file notifications and auto-build on
and the real producer; then ``--edits`` times: appends a sentence to one card (a
different card each time), and times, from the write:

* notice: the watcher reports the change (file notification, then the scan);
* settle: the quiet time, until the build starts (``autobuild.SETTLE``);
* producer start: process start, imports, vault digest, plan (its ``start`` event);
* model load + embed: the runtime's load and the card's forward pass (its last
  ``progress``); the runtime each build used is reported;
* index write: the atomic rewrite (to its ``final`` event);
* exit + reload: the process ends, the app reloads the session, the badge is fresh.

Keystrokes, while each build runs and (paired, same process) with none running: one
letter into the query input, from the key event to the first screen refresh after the
input took it (what a user waits for; the query it starts runs in a worker). Beside
it, the event loop's lag: how late a 10 ms timer fires, sampled all along (the UI
thread blocked by anything, a keystroke or not).

    python -m benchmarks.bench_autobuild --vault fixtures/birds --vault MAN1_WITH_INDEX
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_report

PHASES = ("notice", "settle", "producer start", "model load + embed", "index write",
          "exit + reload")
LAG_TICK = 0.01  # seconds the loop-lag probe sleeps between samples


def _timed_job(stamps: dict[str, Any]) -> Any:
    from hqltui.core.jobs import IndexBuildJob, index_build_job

    class Timed(IndexBuildJob):
        def handle_line(self, line: str) -> None:
            for kind in ("start", "progress", "final"):
                if f'"event": "{kind}"' in line:
                    stamps[kind] = time.monotonic()
            if '"event": "final"' in line:
                stamps["runtime"] = json.loads(line).get("runtime", "none")
            super().handle_line(line)

    def factory(vault: Path, out: Path, limit: int, *, clock: Any) -> IndexBuildJob:
        job = index_build_job(vault, out, "--changed-at-most", str(limit), clock=clock)
        stamps["spawn"] = time.monotonic()
        return Timed(kind=job.kind, title="index: auto-build", command=job.command,
                     clock=clock)

    return factory


class LoopLag:
    """How late a ``LAG_TICK`` sleep wakes, sampled until stopped; ``mark`` says which
    samples fall while a build runs."""

    def __init__(self) -> None:
        self.building = False
        self.samples: dict[bool, list[float]] = {True: [], False: []}
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(LAG_TICK)
            self.samples[self.building].append(time.monotonic() - t0 - LAG_TICK)


async def _keystroke(app: Any, field: Any) -> float:
    """A letter into ``field``: seconds from the key event to the refresh that shows it."""
    from textual import events

    before = len(field.value)
    painted = asyncio.get_running_loop().create_future()
    key = events.Key("x", "x")
    key.set_sender(app)
    t0 = time.monotonic()
    app._driver.send_message(key)
    while len(field.value) == before:
        await asyncio.sleep(0.001)
    app.call_after_refresh(lambda: painted.done() or painted.set_result(time.monotonic()))
    return float(await painted) - t0


async def _until(pilot: Any, test: Any, what: str, step: float = 0.01,
                 timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_autobuild: never {what} in {timeout:.0f} s")
        await pilot.pause(step)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _run(vault: Path, edits: int, idle_keys: int) -> dict[str, Any]:
    from hqltui.ui.app import HqlApp
    from hqltui.ui.widgets.query import QueryInput

    app = HqlApp(vault, poll_interval=2.0, cursor_blink=False, auto_build=True)
    stamps: dict[str, Any] = {}
    app.job_factories["auto-build"] = _timed_job(stamps)
    rows: list[dict[str, Any]] = []
    keys: list[float] = []
    lag = LoopLag()
    async with app.run_test(size=(120, 36)) as pilot:
        await _until(pilot, lambda: app.session is not None and not app.session.index_pending
                     and app.autobuild.on, "loaded", 0.05)
        await _until(pilot, lambda: app.autobuild.notifications is not None
                     and app.autobuild.notifications.active, "notified", 0.05)
        # the watcher's first scan: a change is told from this signature
        await _until(pilot, lambda: app.sessions.signature is not None, "scanned", 0.05)
        await pilot.pause(1.0)
        _say(f"{vault}: loaded, {len(app.statuses)} cards")
        lag.task = asyncio.create_task(lag.run())
        field = app.main.query_one(QueryInput)
        field.focus()
        idle: list[float] = []
        for _ in range(idle_keys):  # the same keystroke with no build running: the pair's A
            idle.append(await _keystroke(app, field))
            await pilot.pause(0.05)
        field.value = ""
        await pilot.pause(0.5)
        session = app.state.session
        assert session is not None
        cards = sorted(session.vault.cards, key=lambda c: c.name)[:edits]
        for i in range(edits):
            card = cards[i % len(cards)]
            name, path = card.name, vault / card.path
            stamps.clear()
            noticed: list[float] = []
            changed = app.autobuild.changed

            def seen(changed: Any = changed, noticed: list[float] = noticed) -> None:
                noticed.append(time.monotonic())
                changed()

            app.autobuild.changed = seen  # type: ignore[method-assign]
            started = app.autobuild.started
            t0 = time.monotonic()
            path.write_text(path.read_text(encoding="utf-8") + f"\nEdit {i}: a new line.\n",
                            encoding="utf-8")
            await _until(pilot, lambda n=noticed: bool(n), f"noticed the edit of {name}")
            await _until(pilot, lambda s=started: app.autobuild.started != s,
                         f"started a build for {name}")
            lag.building = True
            while app.running_jobs():  # keystrokes while the build runs
                keys.append(await _keystroke(app, field))
                await pilot.pause(0.05)
            lag.building = False
            await _until(pilot, lambda n=name: app.statuses.get(n) == "fresh",
                         f"showed {name} fresh")
            t_fresh = time.monotonic()
            app.autobuild.changed = changed  # type: ignore[method-assign]
            embedded = stamps.get("progress", stamps["start"])
            rows.append({
                "notice": noticed[0] - t0,
                "settle": stamps["spawn"] - noticed[0],
                "producer start": stamps["start"] - stamps["spawn"],
                "model load + embed": embedded - stamps["start"],
                "index write": stamps["final"] - embedded,
                "exit + reload": t_fresh - stamps["final"],
                "total": t_fresh - t0,
                "runtime": stamps.get("runtime", "?"),
            })
            _say(f"edit {i + 1}: {rows[-1]['total']:.2f} s ({rows[-1]['runtime']})")
            field.value = ""
            await _until(pilot, lambda: app.sessions.signature is not None, "scanned", 0.05)
            await pilot.pause(0.5)
        lag.task.cancel()
        mode = app.autobuild.watching
    return {"rows": rows, "keys": keys, "idle_keys": idle, "noticed_by": mode,
            "lag": lag.samples}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        load = os.getloadavg()
        return f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (f"{len(values)}, median {statistics.median(values) * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms")


def measure(source: str, edits: int, idle_keys: int, name: str | None) -> str:
    """One vault: run, write ``results/<name>``, return its Markdown."""
    start = _uptime()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / Path(source).name
        shutil.copytree(source, vault, symlinks=True)
        os.chdir(tmp)
        try:
            result = asyncio.run(_run(Path(vault.name), edits, idle_keys))
        finally:
            os.chdir(here)
    end = _uptime()
    rows = result["rows"]
    medians = {k: statistics.median(r[k] for r in rows) for k in (*PHASES, "total")}
    runtimes = sorted({r["runtime"] for r in rows})
    title = f"Auto-build: edit → fresh badge ({Path(source).name}, {len(rows)} edits)"
    totals = sorted(r["total"] for r in rows)
    notes = [f"{_cpu()}; noticed by: {result['noticed_by']}; builds ran on: "
             f"{', '.join(runtimes)}",
             f"uptime at start: {start}", f"uptime at end: {end}",
             f"totals: {', '.join(f'{t:.2f}' for t in totals)}"]
    for label, keys in (("no build running", result["idle_keys"]),
                        ("while a build runs", result["keys"])):
        if keys:
            notes.append(f"keystroke → painted, {label}: {_ms(keys)}")
    for building, label in ((False, "no build running"), (True, "while a build runs")):
        if result["lag"][building]:
            notes.append(f"event-loop lag ({LAG_TICK * 1000:.0f} ms timer), {label}: "
                         f"{_ms(result['lag'][building])}")
    notes.append("medians: " + ", ".join(f"{k} {v:.3f} s" for k, v in medians.items()))
    write_report(name or f"autobuild_{Path(source).name}", title,
                 ["edit", *PHASES, "total", "runtime"],
                 [[i + 1, *(round(r[k], 3) for k in (*PHASES, "total")), r["runtime"]]
                  for i, r in enumerate(rows)], notes)
    lines = [f"# {title}", "", "| phase | median s |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in medians.items()]
    return "\n".join([*lines, "", *notes]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", action="append", required=True,
                    help="a vault holding its index (copied first); give it once per vault")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--idle-keys", type=int, default=40,
                    help="keystrokes timed before the edits, with no build running")
    ap.add_argument("--name", help="the report's name in results/ (one vault only; default "
                                   "autobuild_<vault folder>)")
    args = ap.parse_args(argv)
    if args.name and len(args.vault) > 1:
        ap.error("--name names one vault's report")
    for source in args.vault:
        print(measure(source, args.edits, args.idle_keys, args.name), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
