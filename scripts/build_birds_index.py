"""Rebuild the committed birds index: a fresh `--full` build with a pinned stamp.

Run from the repository root: `.venv/bin/python scripts/build_birds_index.py`.
It prints the exact `hql-semantics` command it runs (also in docs/vaults.md), with
every query of fixtures/birds/queries.toml.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

VAULT = "fixtures/birds"
OUT = f"{VAULT}/.hql/index.sqlite"
BUILT_AT = "2026-11-29T00:00:00+00:00"


def command() -> list[str]:
    queries = tomllib.loads(Path(VAULT, "queries.toml").read_text(encoding="utf-8"))["query"]
    args = [
        "hql-semantics",
        "build",
        "--vault",
        VAULT,
        "--out",
        OUT,
        "--offline",
        "--full",
        "--built-at",
        BUILT_AT,
    ]
    for query in queries:
        args += ["--query", query["text"]]
    return args


def main() -> int:
    args = command()
    print(shlex.join(args))
    return subprocess.call([sys.executable, "-m", "producer", *args[1:]])


if __name__ == "__main__":
    sys.exit(main())
