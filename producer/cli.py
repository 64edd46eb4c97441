"""``hql-semantics``: build, verify and inspect the embedding index.

Exit status: 0 done (``verify``: clean); 1 a refusal or failure, with one line
on stderr (``verify``: the index does not describe the vault); 2 a usage error.
Importing this module is cheap: torch and transformers load only when a build
has something to embed with the local provider.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from producer.build_words import pace_words, plan_line
from producer.config import PRECISIONS, RUNTIMES
from producer.terminal import shown, shown_lines
from producer.wording import with_fix

PROG = "hql-semantics"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def _iso_stamp(text: str) -> str:
    """An ISO-8601 time, kept as written (it is what ``index_meta.built_at`` records)."""
    from datetime import datetime

    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO-8601 time; write e.g. 2026-01-01T00:00:00+00:00"
        ) from None
    return text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Build, verify and inspect a vault's embedding index."
    )
    sub = p.add_subparsers(
        dest="command", required=True, metavar="{build,verify,inspect,runtime}"
    )

    b = sub.add_parser("build", help="embed the vault's cards (and queries) into the index")
    b.add_argument("--vault", required=True, help="the vault root")
    b.add_argument("--out", help="the index file (default: [semantics] index in hql.toml)")
    b.add_argument("--offline", action="store_true", help="refuse the network")
    b.add_argument("--provider", choices=("local", "http"))
    b.add_argument("--model", help="a model directory, or a Hub id (with --revision)")
    b.add_argument("--revision")
    b.add_argument("--endpoint", help="http: the POST /v1/embeddings URL")
    b.add_argument("--api-key-env", metavar="VAR", help="http: the variable holding the key")
    b.add_argument("--dimensions", type=_positive_int, metavar="N")
    b.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="local: the forward pass's precision (default float32; bfloat16 needs native "
        "bf16; int8 runs on ONNX Runtime: docs/runtime.md)",
    )
    b.add_argument(
        "--runtime",
        choices=RUNTIMES,
        help="local: what runs the model (default auto: docs/runtime.md); not part of the "
        "revision",
    )
    b.add_argument(
        "--query",
        action="append",
        default=[],
        metavar="TEXT",
        help="also embed this query (repeatable); stored queries are kept",
    )
    b.add_argument(
        "--drop-queries",
        action="store_true",
        help="keep only the queries named by --query this time",
    )
    b.add_argument(
        "--built-at",
        metavar="STAMP",
        type=_iso_stamp,
        help="pin the build stamp (ISO-8601, e.g. 2026-01-01T00:00:00+00:00)",
    )
    b.add_argument("--full", action="store_true", help="re-embed everything")
    b.add_argument(
        "--passages",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also embed each card's passages (default: `[semantics] passages`, or keep what "
        "the index holds)",
    )
    b.add_argument("--progress", choices=("jsonl",), help="JSON lines on stdout, one per event")
    b.add_argument(
        "--changed-at-most",
        type=_positive_int,
        metavar="N",
        help="refuse, before loading a model, a build that would embed more than the cards "
        "changed since the index, or more than N of them (the app's auto-build)",
    )

    v = sub.add_parser("verify", help="exit 1 unless the index describes the vault")
    v.add_argument("--vault", required=True)
    v.add_argument("--index", help="the index file (default: [semantics] index in hql.toml)")
    v.add_argument("--json", action="store_true")

    i = sub.add_parser("inspect", help="print what the index says about itself")
    i.add_argument("--index", help="the index file")
    i.add_argument("--vault", help="read the index named in this vault's hql.toml")
    i.add_argument("--json", action="store_true")

    r = sub.add_parser(
        "runtime",
        help="make and check this machine's ONNX graph of the local model (the setup runs it)",
    )
    r.add_argument("--model", help="a model directory (default: the packaged model)")
    r.add_argument("--json", action="store_true")
    return p


def _configured_index(vault: str) -> Path:
    from producer.build import BuildError
    from producer.config import load_producer_config
    from producer.vault import vault_problem

    problem = vault_problem(vault)
    if problem:
        raise BuildError(problem, "name an existing vault directory with --vault")
    config = load_producer_config(vault)
    config.require("semantics")
    if config.index_path is None:
        raise BuildError(f"{vault}: name the index with --index, or with `[semantics] index`")
    return config.index_path


class _Human:
    """Human-readable events: summary lines on stdout, warnings and a live counter on stderr."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, event: dict[str, object]) -> None:
        kind = event["event"]
        if kind == "warning":
            print(f"warning: {shown(event['message'])}", file=sys.stderr)
        elif kind == "start":
            print(f"{plan_line(event)}; queries {event['queries']}")
        elif kind == "resume":
            print(f"resumed: {event['vectors']} vectors from an interrupted build")
        elif kind == "progress" and self.tty:
            end = "\n" if event["done"] == event["total"] else ""
            pace = pace_words(event)
            line = f"embedded {event['done']}/{event['total']}" + (f", {pace}" if pace else "")
            print(f"\r{line}\x1b[K", end=end, file=sys.stderr)
        elif kind == "final":
            passages = f", {event['passages']} passages" if "passages" in event else ""
            if event["up_to_date"]:
                print(
                    f"{shown(event['out'])}: up to date ({event['cards']} cards{passages}, "
                    f"{event['queries']} queries)"
                )
            else:
                print(
                    f"{shown(event['out'])}: {event['cards']} cards ({event['embedded']} embedded, "
                    f"{event['reused']} reused, {event['removed']} removed){passages}, "
                    f"{event['queries']} queries, {event['dimensions']} dimensions, "
                    f"{event['model']} via {event['provider']}"
                    + (f" on {event['runtime']}" if "runtime" in event else "")
                )
            if "runtime_note" in event:
                print(f"note: {shown(event['runtime_note'])}", file=sys.stderr)


def _jsonl(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _run_build(args: argparse.Namespace) -> int:
    from producer.build import BuildOptions, build

    emit = _jsonl if args.progress == "jsonl" else _Human()
    options = BuildOptions(
        vault=args.vault,
        out=args.out,
        offline=args.offline,
        provider=args.provider,
        model=args.model,
        revision=args.revision,
        endpoint=args.endpoint,
        api_key_env=args.api_key_env,
        dimensions=args.dimensions,
        precision=args.precision,
        runtime=args.runtime,
        queries=list(args.query),
        drop_queries=args.drop_queries,
        built_at=args.built_at,
        full=args.full,
        parse_cache=True,
        passages=args.passages,
        changed_at_most=args.changed_at_most,
    )
    build(options, emit)
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    from producer.verify import verify

    index = Path(args.index) if args.index else _configured_index(args.vault)
    report = verify(args.vault, index)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        for problem in report.problems:
            print(shown(problem.message), file=sys.stderr)
        if report.clean:
            passages = "" if report.passages is None else f", {report.passages} passages"
            print(
                f"{shown(index)}: clean, {report.cards} cards{passages}, {report.queries} queries"
            )
        else:
            n = len(report.problems)
            print(f"{shown(index)}: {n} problem{'s' if n != 1 else ''}", file=sys.stderr)
    return 0 if report.clean else 1


def _run_inspect(args: argparse.Namespace) -> int:
    from producer.verify import format_inspect, inspect

    if args.index:
        index = Path(args.index)
    elif args.vault:
        index = _configured_index(args.vault)
    else:
        raise _Usage("inspect needs --index PATH (or --vault DIR with [semantics] index)")
    info = inspect(index)
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print(shown_lines(format_inspect(info)))
    return 0


def _run_runtime(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from producer.embedders.local import default_model_dir
    from producer.embedders.model_tokenizer import tokenizer_file
    from producer.embedders.onnx_graph import AUTO_RULE, prepare_graph

    model = Path(args.model) if args.model else default_model_dir()
    if not model.is_dir() or tokenizer_file(model) is None:
        raise _Usage(f"{model.name}: not a model directory with a tokenizer.json "
                     "(such a model runs on torch)")
    record, _ = prepare_graph(model)
    if args.json:
        print(json.dumps({**asdict(record), "graph": str(record.graph)}, indent=2))
        return 0 if record.passed else 1
    if record.passed:
        rates = ", ".join(f"{k} {v:g} texts/s" for k, v in sorted(record.texts_per_s.items()))
        print(f"ONNX graph ready (max difference to torch {record.max_abs:.2g}; {rates})")
        print(f'runtime = "auto" builds on {record.auto}: {AUTO_RULE}')
        return 0
    print(f"the ONNX graph is not used: {shown(record.reason)}; builds run on torch",
          file=sys.stderr)
    return 1


class _Usage(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    # SIGINT is how the app (and a terminal) asks a build to stop cleanly. A process
    # started from a background job inherits SIGINT *ignored*; take it back, or a
    # cancel would only end at the SIGKILL that follows.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # SIGTERM (a shutdown, a service manager) stops a build as cleanly as SIGINT: the
    # vectors made so far are checkpointed for the next build.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    p = parser()
    args = p.parse_args(argv)
    from producer.build import BuildError
    from producer.config import ConfigError
    from producer.embedders import EmbedError
    from producer.index_format import StoreError

    jsonl = getattr(args, "progress", None) == "jsonl"
    try:
        if args.command == "build":
            return _run_build(args)
        if args.command == "verify":
            return _run_verify(args)
        if args.command == "runtime":
            return _run_runtime(args)
        return _run_inspect(args)
    except _Usage as exc:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (BuildError, ConfigError, EmbedError, StoreError, OSError) as exc:
        message = (
            str(exc)
            if not isinstance(exc, OSError) or not exc.strerror
            else (f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror)
        )
        fix = getattr(exc, "fix", None)
        if jsonl:
            _jsonl({"event": "error", "message": message, **({"fix": fix} if fix else {})})
        if getattr(args, "json", False):  # verify / inspect --json: the refusal as JSON
            print(json.dumps({"error": {"message": message, "fix": fix}}, ensure_ascii=False))
        print(shown(f"{PROG}: {with_fix(message, fix)}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if jsonl:
            _jsonl({"event": "error", "message": "interrupted"})
        print(
            f"{PROG}: interrupted; the previous index is untouched, and the next build "
            "resumes from the vectors made so far",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:  # noqa: BLE001 - the last guard: no traceback reaches a user
        message = f"failed: {type(exc).__name__}: {exc}"
        if jsonl:
            _jsonl({"event": "error", "message": message})
        print(f"{PROG}: {shown(message)}", file=sys.stderr)
        return 1


def entry() -> None:
    """The ``hql-semantics`` command: ``main``, then exit.

    A build stopped by SIGINT or SIGTERM has saved its checkpoint, closed its files
    and said so by the time ``main`` returns 130. What a normal exit would still do
    is wait: for an encoder call running on another thread (a run of up to 32 long
    texts, about 2 s; its vectors are not needed) and for torch's teardown. So an
    interrupted build leaves at once (``os._exit``). Not in ``main``: tests call it
    in-process."""
    code = main()
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a reader gone, a closed stream
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
