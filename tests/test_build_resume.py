"""Long builds that never lose work: a build killed (SIGKILL, SIGINT, a full disk)
after some checkpoints resumes from its work file, embeds only the rest, and
writes exactly the index an uninterrupted build writes (float32, bit for bit).

Every build runs ``hql-semantics`` in a child process on the real packaged model;
the seams plan 2 changed cards a batch and checkpoint every 2 batches, so a kill
lands after some checkpoints within seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from producer.build_checkpoint import work_path_for
from producer.crash_points import BATCH_CARDS_ENV, CHECKPOINT_ENV, PAUSE_ENV
from producer.embedders import embed_texts
from producer.embedders.local import (
    DEFAULT_MODEL_ID,
    LocalEmbedder,
    default_model_dir,
    local_revision,
    model_dimensions,
)
from producer.index_reader import read_index
from tests.helpers.indexed_vaults import write_vault

pytestmark = pytest.mark.slow  # the packaged model, in child processes

REPO = Path(__file__).resolve().parents[1]
STAMP = "2026-01-01T00:00:00+00:00"
WORDS = "The daemon rotates its log files and signals every child process it started."
SHELL = "The shell reads commands from the terminal and expands words in a loop."


def long_text(i: int) -> str:
    """A card long enough for several passages, different for each ``i``."""
    return "\n\n".join(f"## Part {j}\n\n{WORDS} {SHELL} Item {i}.{j}." * 3 for j in range(4))


# Fourteen cards: short ones, long ones cut into passages, and three that share their whole text.
CARDS = {f"c{i:02}": (long_text(i) if i % 3 == 0 else f"Card {i}: {WORDS}") for i in range(10)}
# One card of many passages of many lengths: its batch is one call of several encoder runs.
CARDS["big"] = "\n\n".join(f"## Step {j}\n\n" + " ".join([SHELL] * (1 + j % 13)) for j in range(120))
SAME = "# gzip\n\nCompress or expand files; gunzip and zcat are the same page.\n"
SEAMS = {BATCH_CARDS_ENV: "2", CHECKPOINT_ENV: "2"}
ARGS = ("build", "--vault", "v", "--passages", "--built-at", STAMP, "--offline",
        "--query", "rotate the logs", "--progress", "jsonl")


def make_vault(parent: Path) -> Path:
    """The vault as the old index saw it (two cards), then the ten more the build adds."""
    root = write_vault(parent / "v", {"c00": CARDS["c00"], "c01": CARDS["c01"]})
    assert run(parent).returncode == 0
    write_vault(root, CARDS)
    for name in ("gzip", "gunzip", "zcat"):
        (root / f"{name}.hmd").write_text(SAME, encoding="utf-8")
    return root


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in (PAUSE_ENV, CHECKPOINT_ENV)}
    e |= {"PYTHONPATH": str(REPO), **SEAMS, **extra}
    return e


def run(parent: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "producer", *ARGS], cwd=parent,
                          capture_output=True, text=True, timeout=300, env=env(**extra))


def events(result: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    """The last event of each kind a build printed."""
    return {e["event"]: e for e in map(json.loads, result.stdout.splitlines())}


def rows(index: Path) -> tuple:
    """Every stored row, vectors as bytes: what two builds must agree on bit for bit."""
    c = read_index(index)
    return (c.model, c.meta, [tuple(vars(r).values()) for r in c.cards],
            [tuple(vars(r).values()) for r in c.chunks], [(q.text, q.embedding) for q in c.queries])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple, dict]:
    """The uninterrupted build: its rows and its final event."""
    parent = tmp_path_factory.mktemp("uninterrupted")
    make_vault(parent)
    result = run(parent)
    assert result.returncode == 0, result.stderr
    return rows(parent / "v/.hql/index.sqlite"), events(result)


def paused(parent: Path, point: str, **extra: str) -> subprocess.Popen[str]:
    marker = parent / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "producer", *ARGS], cwd=parent, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env(**{PAUSE_ENV: f"{point}:{marker}", **extra}))
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"the build never reached {point}"
        time.sleep(0.05)
    return proc


def test_the_plan_embeds_each_distinct_text_once(reference: tuple[tuple, dict]) -> None:
    _, seen = reference
    assert seen["start"]["cards_shared"] == 2  # gunzip and zcat copy gzip's vector
    assert seen["final"]["resumed"] == 0
    vectors = [r[3] for r in reference[0][2] if r[1] in ("gzip.hmd", "gunzip.hmd", "zcat.hmd")]
    assert len(vectors) == 3 and len(set(vectors)) == 1
    total = seen["start"]["total"]
    assert seen["final"]["texts_embedded"] == total


@pytest.mark.parametrize(("how", "saved_batches"), [("SIGKILL", 2), ("SIGINT", 3)])
def test_a_killed_build_resumes_and_writes_the_uninterrupted_index(
    tmp_path: Path, reference: tuple[tuple, dict], how: str, saved_batches: int
) -> None:
    """Paused after its third batch (two checkpointed, one pending): SIGKILL loses the
    pending one, SIGINT (a clean stop) checkpoints it first."""
    root = make_vault(tmp_path)
    index = root / ".hql/index.sqlite"
    before = index.read_bytes()
    proc = paused(tmp_path, "batch-3")
    proc.send_signal(getattr(signal, how))
    _, stderr = proc.communicate(timeout=120)
    assert index.read_bytes() == before  # the old index is untouched
    assert work_path_for(index).exists()
    if how == "SIGINT":
        assert proc.returncode == 130 and "Traceback" not in stderr
        assert "the next build resumes" in stderr
    resumed = run(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    seen = events(resumed)
    total = seen["start"]["total"]
    assert seen["resume"]["vectors"] == seen["final"]["resumed"] > 0
    assert seen["final"]["resumed"] + seen["final"]["texts_embedded"] == total
    assert rows(index) == reference[0]
    assert not work_path_for(index).exists()  # a finished build removes its work file
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.sqlite"]
    del saved_batches


def test_a_build_killed_inside_a_call_resumes_it_run_by_run(
    tmp_path: Path, reference: tuple[tuple, dict]
) -> None:
    """Killed after the first encoder run of the first call (``big``'s passages,
    checkpointed run by run): the resumed call takes that run and computes the rest
    with the whole call's thread layout, bit for bit."""
    root = make_vault(tmp_path)
    index = root / ".hql/index.sqlite"
    proc = paused(tmp_path, "part-1", **{CHECKPOINT_ENV: "1"})
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = run(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = events(resumed)["final"]
    big = sum(1 for row in reference[0][3] if row[0] == "big")
    assert big > 32  # more than a run holds (2 batches of 16): several encoder runs
    assert 0 < final["resumed"] < big  # part of the first call (big's texts), not all of it
    assert rows(index) == reference[0]


def test_full_ignores_the_work_file(tmp_path: Path, reference: tuple[tuple, dict]) -> None:
    make_vault(tmp_path)
    proc = paused(tmp_path, "batch-3")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    full = subprocess.run([sys.executable, "-m", "producer", *ARGS, "--full"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env())
    assert full.returncode == 0, full.stderr
    assert "resume" not in events(full) and events(full)["final"]["resumed"] == 0


def test_a_damaged_work_file_is_ignored_in_one_line(tmp_path: Path,
                                                    reference: tuple[tuple, dict]) -> None:
    root = make_vault(tmp_path)
    work = work_path_for(root / ".hql/index.sqlite")
    work.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [e for e in map(json.loads, result.stdout.splitlines())
                if e["event"] == "warning" and work.name in e["message"]]
    assert [w["message"] for w in warnings] == [
        f"{work.name}: an interrupted build's work file is damaged; ignored"]
    assert rows(root / ".hql/index.sqlite") == reference[0]
    assert not work.exists()


FILL = """
import hashlib, json, shutil, subprocess, sys, time
from pathlib import Path
disk, out, argv, env = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
shutil.copytree(out / "v", disk / "v")
index = disk / "v/.hql/index.sqlite"
before = hashlib.sha256(index.read_bytes()).hexdigest()
marker = disk / "paused"
# The build runs until its third batch is made (two checkpointed), the disk fills,
# the build goes on: it must fail in one line and leave the old index as it was.
paused = dict(env, HQL_SEMANTICS_TEST_PAUSE=f"batch-3:{marker}")
proc = subprocess.Popen(argv, cwd=disk, env=paused, text=True,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
while not marker.exists():
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.05)
with open(disk / "filler", "wb", buffering=0) as fh:
    try:
        while True:
            fh.write(b"x" * 4096)
    except OSError:
        pass
marker.unlink()
_, failed = proc.communicate()
intact = hashlib.sha256(index.read_bytes()).hexdigest() == before
(disk / "filler").unlink()
again = subprocess.run(argv, cwd=disk, env=env, text=True, capture_output=True)
shutil.copy(index, out / "resumed.sqlite")
print(json.dumps({"rc": proc.returncode, "stderr": failed, "intact": intact,
                  "again": again.returncode, "stdout": again.stdout, "again_err": again.stderr}))
"""


def test_a_disk_that_fills_mid_build_keeps_the_old_index_and_resumes(
    tmp_path: Path, reference: tuple[tuple, dict]
) -> None:
    """A real full disk: a small tmpfs mounted in a user namespace of its own."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small disk")
    disk = tmp_path / "disk"
    disk.mkdir()
    make_vault(tmp_path)
    argv = [sys.executable, "-m", "producer", *ARGS]
    mount = f"mount -t tmpfs -o size=4m tmpfs {disk} && exec {sys.executable} -c \"$0\" \"$@\""
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", mount, FILL, str(disk), str(tmp_path),
         json.dumps(argv), json.dumps(env())],
        capture_output=True, text=True, timeout=600)
    if "mount" in result.stderr and result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["rc"] == 1 and seen["intact"], seen["stderr"]
    assert "Traceback" not in seen["stderr"] and len(seen["stderr"].splitlines()) == 1
    assert seen["again"] == 0, seen["again_err"]
    final = events(subprocess.CompletedProcess([], 0, seen["stdout"], ""))["final"]
    assert final["resumed"] > 0
    assert rows(tmp_path / "resumed.sqlite") == reference[0]


class Recorded:
    """``embedders.Parts`` in memory: what one call made, and what a replay may take."""

    def __init__(self, stored: dict[int, tuple[list[int], np.ndarray]] | None = None) -> None:
        self.stored = dict(stored or {})
        self.made: dict[int, tuple[list[int], np.ndarray]] = {}
        self.taken: list[int] = []

    def get(self, part: int, rows: Sequence[int]) -> np.ndarray | None:
        if part not in self.stored:
            return None
        assert self.stored[part][0] == list(rows)
        self.taken.append(part)
        return self.stored[part][1]

    def put(self, part: int, rows: Sequence[int], raw: np.ndarray) -> None:
        self.made[part] = (list(rows), raw.copy())


def test_a_resumed_call_computes_its_remaining_runs_as_the_whole_call_does() -> None:
    """The thread layout is the whole call's, not what remains: a lone remaining run of a
    call of several stays on one thread, so its bits are the uninterrupted call's (on a
    CPU whose kernels split products by thread count, AVX-512/AMX, they would differ)."""
    model = default_model_dir()
    embedder = LocalEmbedder(model, DEFAULT_MODEL_ID, local_revision(model),
                             model_dimensions(model), threads=2)  # the seam: two threads
    words = ["owl", "night", "wing", "quiet", "egg", "reed"]  # one token each
    texts = [" ".join(words[(i * j) % 6] for j in range(300 + i)) for i in range(96)]
    whole = Recorded()
    expected = embed_texts(embedder, texts, parts=whole)
    runs = sorted(whole.made)
    assert len(runs) >= 3, "the call should hold several encoder runs"
    for kept in (runs[:-1], runs[:1], runs[1:]):  # a lone run left, most left, the first left
        replay = Recorded({p: whole.made[p] for p in kept})
        got = embed_texts(embedder, texts, parts=replay)
        assert replay.taken == kept and sorted(replay.made) == sorted(set(runs) - set(kept))
        assert got.tobytes() == expected.tobytes()
