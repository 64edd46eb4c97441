"""A build killed at about 70 % and resumed, against the same build uninterrupted.

``python -m benchmarks.bench_resume VAULT SCRATCH [--kill-at 0.7] [--passages]``
copies VAULT twice into SCRATCH, builds one copy uninterrupted, then builds the
other, kills it (SIGKILL) once ``done/total`` reaches ``--kill-at``, and builds
it again. Prints one JSON line: per run the wall, user and sys seconds and peak
RSS (``wait4``), the texts the resumed run embedded and took from the work file,
and whether the two indexes hold the same bits.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from benchmarks.scratch_build import events, scratch_copy, scratch_parser, start_build
from producer.index_reader import read_index


def run(vault: Path, passages: bool, kill_at: float | None = None) -> dict[str, object]:
    flags = ["--built-at", "2026-01-01T00:00:00+00:00", *(["--passages"] if passages else [])]
    started = time.monotonic()
    proc = start_build(vault, *flags)
    final: dict[str, object] = {}
    for event in events(proc):
        if event["event"] == "final":
            final = event
        if (
            kill_at is not None
            and event["event"] == "progress"
            and event["done"] >= kill_at * event["total"]
        ):
            proc.send_signal(signal.SIGKILL)
            break
    _, status, usage = os.wait4(proc.pid, 0)
    return {
        "wall": round(time.monotonic() - started, 1),
        "user": round(usage.ru_utime, 1),
        "sys": round(usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "killed": os.WIFSIGNALED(status),
        "texts_embedded": final.get("texts_embedded"),
        "resumed": final.get("resumed"),
    }


def rows(index: Path) -> tuple:
    c = read_index(index)
    return ([tuple(vars(r).values()) for r in c.cards], [tuple(vars(r).values()) for r in c.chunks])


def main() -> None:
    parser = scratch_parser(__doc__)
    parser.add_argument("--kill-at", type=float, default=0.7)
    args = parser.parse_args()
    copies = [
        scratch_copy(args.vault, args.scratch / name / args.vault.name)
        for name in ("uninterrupted", "resumed")
    ]
    whole = run(copies[0], args.passages)
    killed = run(copies[1], args.passages, args.kill_at)
    resumed = run(copies[1], args.passages)
    index = Path(".hql/index.sqlite")
    same = rows(copies[0] / index) == rows(copies[1] / index)
    cpu = lambda r: r["user"] + r["sys"]  # noqa: E731
    print(
        json.dumps(
            {
                "uninterrupted": whole,
                "killed": killed,
                "resumed": resumed,
                "reembedded_share": round(resumed["texts_embedded"] / whole["texts_embedded"], 3),
                "cpu_ratio": round((cpu(killed) + cpu(resumed)) / cpu(whole), 3),
                "same_bits": same,
            }
        )
    )


if __name__ == "__main__":
    main()
