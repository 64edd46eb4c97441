"""Run the fake by hand: ``python -m tests.fake_hotdata --port 8765``.

``--database NAME`` creates a database (table ``cards`` keyed by ``name``) and prints
the ``[engine]`` lines for a vault's ``hql.toml``. While it runs, lines typed on its
standard input steer it (``help`` lists them): ``fail [JOB_TYPE] MESSAGE`` makes the
next job end ``failed`` with that ``error_message``, ``partial ...`` the same with
``partially_succeeded``, ``clear`` drops pending faults.
"""

from __future__ import annotations

import argparse
import signal
import sys
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
    parser.add_argument("--database", metavar="NAME",
                        help="create a database NAME (table cards) and print its [engine] lines")
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
    if args.database:
        from .testing import api_client, create_database

        with api_client(fake) as api:
            db = create_database(api, args.database)
        print(f"database {args.database}: add to the vault's hql.toml:")
        print(f'  [engine]\n  provider = "hotdata"\n  database = "{db.id}"')
    print(f"jobs: {args.job_mode}, step {args.job_step_seconds}s; Ctrl-C stops", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if sys.stdin is not None and sys.stdin.isatty():
        threading.Thread(target=_commands, args=(fake,), daemon=True).start()
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


COMMANDS = """commands:
  fail [JOB_TYPE] MESSAGE     the next job (of JOB_TYPE: create_index, managed_load) fails
  partial [JOB_TYPE] MESSAGE  the same, ending partially_succeeded
  clear                       drop every pending fault
  help                        this list"""
JOB_TYPES = ("create_index", "managed_load")


def _commands(fake: FakeHotdata) -> None:
    print("type `help` for commands", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        verb, rest = words[0], words[1:]
        if verb in ("fail", "partial"):
            job_type = rest.pop(0) if rest and rest[0] in JOB_TYPES else None
            message = " ".join(rest) or "injected job failure"
            status = "failed" if verb == "fail" else "partially_succeeded"
            fake.inject_job_fault(job_type, status=status, message=message)
            print(f"next {job_type or 'job'} ends {status}: {message}", flush=True)
        elif verb == "clear":
            fake.clear_faults()
            print("faults cleared", flush=True)
        else:
            print(COMMANDS, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
