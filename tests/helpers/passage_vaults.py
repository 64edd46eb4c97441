"""A vault with a card long enough for many passages, built with the packaged model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from producer.build import BuildOptions, build
from tests.helpers.indexed_vaults import write_vault

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


# The short cards beside the long one: a passage hit must beat them on its own words.
BIRDS_BESIDE = {"owl": "A bird that hunts after dark.", "heron": "A bird that wades in marshes."}


def passage_vault(root: Path, embedder: Any, queries: list[str], shell: str = LONG) -> Path:
    """The ``shell`` card (LONG unless given) beside two short bird cards, built with
    passages and the stored ``queries`` by ``embedder``: every passage test's vault."""
    write_vault(root, {"shell": shell, **BIRDS_BESIDE})
    real_build(root, embedder, passages=True, queries=queries)
    return root
