"""A vault with a card long enough for many passages, built with the packaged model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from producer.build import BuildOptions, build

STAMP = "2026-01-01T00:00:00+00:00"

LONG = (
    "The common shell reads commands from the terminal.\n\n"
    + "\n\n".join(
        f"## Section {i}\n\n" + " ".join(["The interpreter expands words in a loop."] * 30)
        for i in range(6)
    )
    + "\n\n## Resource limits\n\nThe ulimit builtin sets the largest core dump size and the "
    "maximum number of open file descriptors a process may hold.\n"
)


def real_build(root: Path, minilm: Any, **kw: Any) -> Any:
    """``build`` of ``root`` with the given embedder (the packaged model), offline."""
    return build(
        BuildOptions(vault=str(root), built_at=STAMP, offline=True, **kw),
        embedder_factory=lambda spec: minilm,
    )
