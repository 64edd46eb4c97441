"""A real ``hql-semantics build`` in a child process, held at one of its pause points
(``producer.crash_points``) until the test lets it go: the index a reader has open
stays in place while the build waits, as it does through a long build.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from producer.crash_points import PAUSE_ENV

REPO = Path(__file__).resolve().parents[2]
PATIENCE = 240.0  # seconds: a bound for a failing test (a model load on a busy machine)


def producer_env() -> dict[str, str]:
    """This checkout's producer, whatever the working directory, and no pause."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(PAUSE_ENV, None)
    return env


def pause_env(point: str, marker: Path) -> dict[str, str]:
    """The environment of a build that holds at ``point`` while ``marker`` exists."""
    return {**producer_env(), PAUSE_ENV: f"{point}:{marker}"}


def build_command(vault: Path, *args: str) -> list[str]:
    """``hql-semantics build --vault VAULT --offline ARGS``, run from the vault's parent."""
    return [sys.executable, "-m", "producer", "build", "--vault", vault.name, "--offline",
            *args]


def run_build(vault: Path, *args: str) -> None:
    """A build run to its end (it must succeed)."""
    done = subprocess.run(build_command(vault, *args), cwd=vault.parent, text=True,
                          capture_output=True, env=producer_env(), timeout=PATIENCE)
    assert done.returncode == 0, done.stderr


@dataclass
class HeldBuild:
    process: subprocess.Popen[str]
    marker: Path
    point: str

    def wait_held(self) -> None:
        """Until the build stands at its pause point (it wrote the marker)."""
        deadline = time.monotonic() + PATIENCE
        while not self.marker.exists():
            if self.process.poll() is not None:
                raise AssertionError(f"the build ended before {self.point}: "
                                     f"{self.process.communicate()[1]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the build never reached {self.point}")
            time.sleep(0.05)

    def release(self) -> tuple[int, str, str]:
        """Let the build go on; its exit status, stdout and stderr once it has ended."""
        self.marker.unlink()
        out, err = self.process.communicate(timeout=PATIENCE)
        return self.process.returncode, out, err

    def stop(self) -> None:
        """Kill it if it still runs (a failed test)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def start_held_build(vault: Path, point: str, *args: str) -> HeldBuild:
    """``build_command`` held at ``point``; ``wait_held`` before relying on the hold."""
    marker = vault.parent / f"held-at-{point}"
    process = subprocess.Popen(build_command(vault, *args), cwd=vault.parent, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=pause_env(point, marker))
    return HeldBuild(process, marker, point)


# The scenario the held-build tests share, on a copy of the birds vault: the mallard
# rewritten as a night hunter, so its old vector (a dabbling duck) ranks low for
# ``tests.helpers.vaults.QUERY`` and the new one near the owls; the new index stamped
# half an hour before the app tests' clock (the committed index is 3 days old).
STAMP = "2026-12-02T09:00:00+00:00"
TOP = 5  # the new mallard ranks within these (5th, after the owls and the nightjar);
#          the old one does not (28th of 58)
NIGHT_HUNTER = """---
title: Mallard
tags: [species, ducks]
---
# Mallard

This duck has turned nocturnal hunter: it glides silently over grassland after dark,
locating voles and shrews by sound alone and dropping onto them with its feet.
"""


def rewrite_the_mallard(vault: Path) -> None:
    (vault / "mallard.hmd").write_text(NIGHT_HUNTER, encoding="utf-8")
