"""Run the fake by hand: ``python -m tests.fake_hotdata --port 8765``."""

from __future__ import annotations

import argparse
import signal
import threading

from .server import FakeHotdata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fake_hotdata",
        description="Loopback fake Hotdata server (a test stand-in, not the Hotdata engine).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--api-key", default="hd_fake_local_key")
    parser.add_argument("--workspace-id", default="ws_fake_local")
    parser.add_argument(
        "--job-mode",
        default="timed",
        choices=["timed", "poll", "manual", "immediate"],
        help="how jobs advance (default: one step every --job-step-seconds)",
    )
    parser.add_argument("--job-step-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)

    fake = FakeHotdata(
        args.host,
        args.port,
        api_key=args.api_key,
        workspace_id=args.workspace_id,
        job_mode=args.job_mode,
        job_step_seconds=args.job_step_seconds,
    )
    fake.start()
    print(f"fake Hotdata server (test stand-in, not the Hotdata engine) on {fake.url}")
    print(f"  export HOTDATA_API_URL={fake.url}")
    print(f"  export HOTDATA_API_KEY={fake.api_key}")
    print(f"  export HOTDATA_WORKSPACE={fake.workspace_id}")
    print(f"jobs: {args.job_mode}, step {args.job_step_seconds}s; Ctrl-C stops", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
