"""Is the ETA a build prints at 10 % of its tokens within 25 % of the time it took?

``python -m benchmarks.bench_eta VAULT SCRATCH [--at 0.1] [--passages]`` copies
VAULT into SCRATCH, builds it with ``--progress jsonl``, and prints one JSON line:
the ETA of the first progress event at or past ``--at`` of the texts, the time
the build actually took from then to its end, and their ratio.
"""

from __future__ import annotations

import json
import os
import time

from benchmarks.scratch_build import events, scratch_copy, scratch_parser, start_build


def main() -> None:
    parser = scratch_parser(__doc__)
    parser.add_argument("--at", type=float, default=0.1)
    args = parser.parse_args()
    target = scratch_copy(args.vault, args.scratch / args.vault.name)
    started = time.monotonic()
    proc = start_build(target, *(["--passages"] if args.passages else []))
    seen: dict[str, float] = {}
    total = 0
    for event in events(proc):
        if event["event"] == "progress" and "eta" in event and "eta" not in seen:
            total = event["total"]
            if event["done"] >= args.at * total:
                seen = {"at_done": event["done"], "eta": event["eta"], "t": time.monotonic()}
    proc.wait()
    ended = time.monotonic()
    actual = ended - seen["t"]
    print(
        json.dumps(
            {
                "texts": total,
                "at_done": seen["at_done"],
                "eta_printed": seen["eta"],
                "actual_remaining": round(actual, 1),
                "ratio": round(seen["eta"] / actual, 3),
                "wall": round(ended - started, 1),
                "load": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
