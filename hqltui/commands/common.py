"""What every `hql-tui` subcommand shares: usage errors (exit 2), positive counts,
and one guard so no traceback reaches a user."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from producer.terminal import shown
from producer.wording import with_fix

USAGE = 2
FAILED = 1


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 2 with one line, as argparse does
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: error: {message}")


def strict_json(data: Any, indent: int | None = 2) -> str:
    """``data`` as strict JSON: a float that is not finite (which ``json`` would write as
    ``Infinity`` or ``NaN``, which no JSON parser reads) is written ``null``."""
    return json.dumps(_finite(data), indent=indent, ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def refuse(args: argparse.Namespace, label: str, message: str, fix: str | None) -> int:
    """A command that cannot answer: one line on stderr and, under ``--json``, the
    object ``{"error": {"message": …, "fix": …}}`` on stdout, so scripts parse it."""
    if getattr(args, "json", False):
        print(strict_json({"error": {"message": message, "fix": fix}}, indent=None))
    print(shown(f"{label}: {with_fix(message, fix)}"), file=sys.stderr)
    return FAILED


def refusal_lines(refusal: Any) -> list[str]:
    """An arm's refusal under its heading: what is wrong, then the fix (when there is one;
    the app's ``live`` fix, submitting the query, is ``--live`` here)."""
    fix = refusal.fix
    if fix == "live":
        fix = "rerun with --live (sends the query text to the http embedder)"
    return [f"  refused: {shown(with_fix(refusal.message, fix))}"]


def whole_number(value: str, minimum: int = 1, why: str = "") -> int:
    """An option's whole number of at least ``minimum`` (``why``: the reason, shown)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{value}` is not a whole number") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}{why}")
    return number


def positive_int(value: str) -> int:
    return whole_number(value)


def run_command(
    parser: argparse.ArgumentParser,
    run: Callable[[argparse.Namespace], int],
    argv: list[str] | None,
    name: Callable[[argparse.Namespace], str] | str,
) -> int:
    """Parse, run, and turn every failure into one line on stderr and an exit code."""
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else USAGE
    label = name(args) if callable(name) else name
    try:
        return run(args)
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - no traceback reaches a user
        return refuse(args, label, f"failed: {type(exc).__name__}: {exc}", None)


def labelled_session(args: argparse.Namespace, label: str) -> tuple[list[Any], Any] | int:
    """``eval`` and ``tune``: the labelled queries and one snapshot of the vault, or the
    exit status of the refusal already printed (bad queries file, no vault, bad
    ``[search]``: fusion needs its settings)."""
    from pathlib import Path

    from hqltui.core.evaluation import QueriesError, read_labelled
    from hqltui.core.session import Session

    try:
        queries, warnings = read_labelled(Path(args.queries))
        for warning in warnings:
            print(shown(f"{label}: {warning}"), file=sys.stderr)
        session = Session.load(args.vault)
    except QueriesError as exc:
        return refuse(args, label, str(exc), exc.fix or f"fix {args.queries}")
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, label, str(exc), "name an existing vault directory")
    if "search" in session.config.errors:
        config = session.config
        fix = config.file_fix or f"edit [search] in {config.file.name}"
        return refuse(args, label, config.errors["search"], fix)
    return queries, session
