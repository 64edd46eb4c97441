"""Edit → fresh badge with auto-build: the median of single-card edits, broken down.

Runs the app headless (Textual's ``run_test``, 120×36) on a copy of ``--vault``
(which must hold its index), with the watcher and auto-build on and the real
producer; then ``--edits`` times: appends a sentence to one card (a different
card each time), and times, from the write:

* notice: the watcher reports the change (file notification, then the scan);
* settle: the quiet time, until the build starts (``autobuild.SETTLE``);
* producer start: process start, imports, vault digest, plan (its ``start`` event);
* model load + embed: the model load and the one card's forward pass (its last ``progress``);
* index write: the atomic rewrite (to its ``final`` event);
* exit + reload: the process ends, the app reloads the session, the badge is fresh.

While each build runs it also times keystrokes: ``pilot.press`` of one letter into
the query input, until the screen has taken it (the worst is reported).

    python -m benchmarks.bench_autobuild --vault fixtures/birds [--edits 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_report

PHASES = ("notice", "settle", "producer start", "model load + embed", "index write",
          "exit + reload")


def _timed_job(stamps: dict[str, float]) -> Any:
    from hqltui.core.jobs import IndexBuildJob, index_build_job

    class Timed(IndexBuildJob):
        def handle_line(self, line: str) -> None:
            for kind in ("start", "progress", "final"):
                if f'"event": "{kind}"' in line:
                    stamps[kind] = time.monotonic()
            super().handle_line(line)

    def factory(vault: Path, out: Path, limit: int, *, clock: Any) -> IndexBuildJob:
        job = index_build_job(vault, out, "--changed-at-most", str(limit), clock=clock)
        stamps["spawn"] = time.monotonic()
        return Timed(kind=job.kind, title="index: auto-build", command=job.command,
                     clock=clock)

    return factory


async def _run(vault: Path, edits: int, cards: list[str]) -> dict[str, Any]:
    from hqltui.ui.app import HqlApp
    from hqltui.ui.widgets.query import QueryInput

    app = HqlApp(vault, poll_interval=2.0, cursor_blink=False, auto_build=True)
    stamps: dict[str, float] = {}
    app.job_factories["auto-build"] = _timed_job(stamps)
    rows: list[dict[str, float]] = []
    keys: list[float] = []
    async with app.run_test(size=(120, 36)) as pilot:
        while app.session is None or app.session.index_pending or not app.autobuild.on:
            await pilot.pause(0.05)
        while app.autobuild.notifications is None or not app.autobuild.notifications.active:
            await pilot.pause(0.05)
        await pilot.pause(1.0)
        app.main.query_one(QueryInput).focus()
        idle: list[float] = []
        for _ in range(40):  # the same keystroke with no build running: the pair's A side
            k0 = time.monotonic()
            await pilot.press("x")
            idle.append(time.monotonic() - k0)
            await pilot.pause(0.05)
        app.main.query_one(QueryInput).value = ""
        await pilot.pause(0.5)
        for i in range(edits):
            name = cards[i % len(cards)]
            stamps.clear()
            noticed: list[float] = []
            changed = app.autobuild.changed

            def seen(changed: Any = changed, noticed: list[float] = noticed) -> None:
                noticed.append(time.monotonic())
                changed()

            app.autobuild.changed = seen  # type: ignore[method-assign]
            started = app.autobuild.started
            card = vault / f"{name}.hmd"
            t0 = time.monotonic()
            card.write_text(card.read_text(encoding="utf-8") + f"\nEdit {i}: a new line.\n",
                            encoding="utf-8")
            while app.statuses.get(name) != "stale" and not noticed:
                await pilot.pause(0.01)
            while app.autobuild.started == started:
                await pilot.pause(0.01)
            while app.running_jobs():  # keystrokes while the build runs
                k0 = time.monotonic()
                await pilot.press("x")
                keys.append(time.monotonic() - k0)
                await pilot.pause(0.05)
            t_done = time.monotonic()
            while app.statuses.get(name) != "fresh":
                await pilot.pause(0.01)
            t_fresh = time.monotonic()
            app.autobuild.changed = changed  # type: ignore[method-assign]
            rows.append({
                "notice": noticed[0] - t0,
                "settle": stamps["spawn"] - noticed[0],
                "producer start": stamps["start"] - stamps["spawn"],
                "model load + embed": stamps.get("progress", stamps["start"]) - stamps["start"],
                "index write": stamps["final"] - stamps.get("progress", stamps["start"]),
                "exit + reload": t_fresh - stamps["final"],
                "total": t_fresh - t0,
                "build done → fresh": t_fresh - t_done,
            })
            app.main.query_one(QueryInput).value = ""
            await pilot.pause(0.5)
        mode = app.autobuild.watching
    return {"rows": rows, "keys": keys, "idle_keys": idle, "noticed_by": mode}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True)
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--name", default="autobuild_birds", help="the report's name in results/")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / Path(args.vault).name
        shutil.copytree(args.vault, vault)
        cards = sorted(p.stem for p in vault.glob("*.hmd") if p.is_file() and p.stem)[: args.edits]
        os.chdir(tmp)
        result = asyncio.run(_run(Path(vault.name), args.edits, cards))
    load_end = os.getloadavg()
    rows = result["rows"]
    medians = {k: statistics.median(r[k] for r in rows) for k in (*PHASES, "total")}
    lines = [f"# Auto-build: edit → fresh badge ({Path(args.vault).name}, {len(rows)} edits)",
             "", f"noticed by: {result['noticed_by']}; load average at start "
             f"{load_start[0]:.2f}, at end {load_end[0]:.2f} (1 min)", "",
             "| phase | median s |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in medians.items()]
    totals = sorted(r["total"] for r in rows)
    lines += ["", f"totals: {', '.join(f'{t:.2f}' for t in totals)}"]
    for label, keys in (("no build running", sorted(result["idle_keys"])),
                        ("during builds", sorted(result["keys"]))):
        if keys:
            lines += [f"keystrokes {label}: {len(keys)}, median "
                      f"{statistics.median(keys) * 1000:.0f} ms, max {keys[-1] * 1000:.0f} ms"]
    text = "\n".join(lines) + "\n"
    print(text)
    notes = lines[2:3] + [line for line in lines if line.startswith(("totals", "keystrokes"))]
    write_report(args.name, lines[0][2:], ["edit", *PHASES, "total"],
                 [[i + 1, *(round(r[k], 3) for k in (*PHASES, "total"))]
                  for i, r in enumerate(rows)],
                 [*notes, "medians: " + ", ".join(f"{k} {v:.3f} s" for k, v in medians.items())])
    return 0


if __name__ == "__main__":
    sys.exit(main())
