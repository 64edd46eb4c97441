"""A build of a scratch copy of a vault in a process of its own, its progress read as it
comes: what the long-build benchmarks (``bench_eta``, ``bench_resume``) time and stop."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def scratch_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every scratch-build benchmark takes: ``VAULT SCRATCH [--passages]``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--passages", action="store_true")
    return parser


def scratch_copy(vault: Path, target: Path) -> Path:
    """``vault`` copied afresh to ``target`` (a copy left there by an earlier run is
    removed first; links are copied as links)."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(vault, target, symlinks=True)
    return target


def start_build(vault: Path, *flags: str) -> subprocess.Popen[str]:
    """``hql-semantics build`` of ``vault``, offline, its progress as JSON lines on stdout;
    run from the vault's parent so the index records the vault by its short name."""
    argv = [
        sys.executable,
        "-m",
        "producer",
        "build",
        "--vault",
        vault.name,
        "--offline",
        "--progress",
        "jsonl",
        *flags,
    ]
    return subprocess.Popen(argv, cwd=vault.parent, stdout=subprocess.PIPE, text=True)


def events(proc: subprocess.Popen[str]) -> Iterator[dict[str, Any]]:
    """Each progress event of ``proc`` as it is printed."""
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)
