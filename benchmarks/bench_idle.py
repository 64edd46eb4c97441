"""What the app costs while it sits idle on a vault: the CPU its file watcher takes.

Starts ``hql-tui VAULT`` on a 120×36 pseudo-terminal (``bench_app``'s), waits until
ranking is ready and three more seconds, then reads the app process's CPU time
(user + system, ``/proc``) before and after ``--seconds`` of no input. The app's
only idle work is the watcher's periodic scan of the vault (``hqltui/core/watch.py``).
CPU time, not wall time, is the figure: the machine's load stretches a scan's wall
time but hardly its CPU.

    python -m benchmarks.bench_idle --vault DIR [--seconds 60] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.bench_app import _drain, _wait_for, spawn_on_pty
from benchmarks.report import write_report


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(root: Path, cache: Path, seconds: float) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of the app over ``seconds`` of no input."""
    proc, master, marker = spawn_on_pty(root, cache)
    try:
        _wait_for(master, marker,
                  lambda ls: any(e in ("ranking-ready", "vault-failed") for e, _, _ in ls), 600)
        _drain(master, 3.0)
        before, start = cpu_seconds(proc.pid), time.time()
        _drain(master, seconds)
        return cpu_seconds(proc.pid) - before, time.time() - start
    finally:
        os.write(master, b"\x11")  # ctrl+q
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        os.close(master)
        marker.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cache", default=None, help="the app's cache (kept between runs)")
    args = parser.parse_args()
    root = Path(args.vault)
    with tempfile.TemporaryDirectory(prefix="hql-idle-") as tmp:
        cache = Path(args.cache) if args.cache else Path(tmp)
        load = os.getloadavg()
        cpu, wall = idle_cpu(root, cache, args.seconds)
    rows = [[root.name, round(wall, 1), round(cpu, 2), round(100 * cpu / wall, 1),
             " ".join(f"{x:.2f}" for x in load)]]
    path = write_report(
        f"idle_{root.name}", f"The app idle on {root.name}: CPU over {args.seconds:g} s",
        ["vault", "idle wall (s)", "app CPU (s)", "% of one CPU", "load average at start"],
        rows,
        ["after ranking is ready and 3 s more; user + system CPU of the app process; its only "
         "idle work is the watcher's periodic scan"],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
