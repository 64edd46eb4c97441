"""A stand-in for ``hql-semantics build --progress jsonl`` in app tests.

``python fake_producer.py CONTROL_DIR MODE`` prints the producer's JSONL
events (schema in ``producer/build.py``): ``start``, then progress to 4 of 10,
then writes ``CONTROL_DIR/waiting`` and waits until ``CONTROL_DIR/go`` exists;
then it finishes (``ok``) or fails (``fail``). SIGINT stops it like the real
producer: a line on stderr, exit status 130, nothing written.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path


def say(**event: object) -> None:
    print(json.dumps(event), flush=True)


def main() -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as the real producer does
    control, mode = Path(sys.argv[1]), sys.argv[2]
    # Until the pause, stdout only: stdout and stderr are read by two threads, and a
    # snapshot needs one order of log lines.
    say(event="warning", message="`mallard` was removed from the vault")
    say(event="warning", message="reusing 38 stored vectors of the same model and revision")
    say(event="start", cards=48, total=48, to_embed=10, reused=38, queries=12)
    for done in (2, 4):
        say(event="progress", done=done, total=10, elapsed=0.5 * done)
    (control / "waiting").write_text("", encoding="utf-8")
    try:
        deadline = time.monotonic() + 60
        while not (control / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    except KeyboardInterrupt:
        print("interrupted: the index was not changed", file=sys.stderr, flush=True)
        return 130
    if mode == "fail":
        say(event="error", message="the model `all-MiniLM-L6-v2` is not in the local cache")
        return 1
    for done in (6, 8, 10):
        say(event="progress", done=done, total=10, elapsed=0.5 * done)
    say(event="final", embedded=10, reused=38, removed=1, queries=12, queries_embedded=0,
        cards=48, out="birds/.hql/index.sqlite", up_to_date=False,
        model="sentence-transformers/all-MiniLM-L6-v2", revision="sha256:0", dimensions=384,
        provider="local")
    return 0


if __name__ == "__main__":
    sys.exit(main())
