"""What a build is asked for (``BuildOptions``) and how it refuses (``BuildError``).

Apart from ``producer.build`` so the planner and the executor can use them
without importing the module that drives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class BuildError(Exception):
    """A build cannot proceed; the message is meant for the user, ``fix`` what to do."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


@dataclass
class BuildOptions:
    vault: str
    out: str | None = None
    offline: bool = False
    provider: str | None = None
    model: str | None = None
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = None
    precision: str | None = None
    runtime: str | None = None  # local: "auto" | "torch" | "onnxruntime" (docs/runtime.md)
    queries: list[str] = field(default_factory=list)
    drop_queries: bool = False
    built_at: str | None = None
    full: bool = False
    parse_cache: bool = False
    # None: on when `[semantics] passages = true` or the previous index holds passages
    passages: bool | None = None
    # Set (auto-build): refuse, before any model loads, a build that would embed more
    # than the cards changed since the index, or more than this many cards.
    changed_at_most: int | None = None
