"""File notifications: what a build writes under the index's folder starts no scan.

Real inotify through ``watchfiles`` on a copy of birds, and the real producer: a
build that only drops a deleted card's row (no model) writes its lock, temporary
file, journal and the index itself. Each test waits on the notifications it
expects (a card edited last marks the end of the build's batches: events come in
order), never on time.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from hqltui.core.notifications import Notifications, unseen_by_scan
from producer.build import BuildOptions, build

REPO = Path(__file__).resolve().parents[1]
BIRDS = REPO / "fixtures" / "birds"


class Seen:
    """Every batch ``Notifications`` hands on; ``wait_for(path)`` until one holds it."""

    def __init__(self) -> None:
        self.batches: list[frozenset[str]] = []
        self.changed = threading.Condition()

    def __call__(self, paths: frozenset[str]) -> None:
        with self.changed:
            self.batches.append(paths)
            self.changed.notify_all()

    def wait_for(self, path: Path) -> None:
        with self.changed:
            found = self.changed.wait_for(
                lambda: any(str(path) in batch for batch in self.batches), timeout=30)
        assert found, f"no notification for {path.name}: {self.batches}"

    @property
    def paths(self) -> set[str]:
        return set().union(*self.batches)


@pytest.fixture
def watched(tmp_path):  # type: ignore[no-untyped-def]
    vault = tmp_path / "birds"
    shutil.copytree(BIRDS, vault)
    (vault / "mallard.hmd").unlink()  # before watching: the build below drops its row
    seen = Seen()
    index = vault / ".hql" / "index.sqlite"
    failed: list[str] = []
    notifications = Notifications(vault, seen, failed.append, index=lambda: index)
    notifications.start()
    assert notifications.ready.wait(30) and notifications.active, failed
    yield vault, index, seen, notifications
    notifications.stop()


def test_a_build_writing_into_the_index_folder_notifies_only_the_index(watched):
    vault, index, seen, notifications = watched
    result = build(BuildOptions(vault=str(vault), changed_at_most=200))
    assert result.removed == 1 and result.embedded == 0
    card = vault / "great-cormorant.hmd"
    card.write_text(card.read_text(encoding="utf-8") + "\nLast.\n", encoding="utf-8")
    seen.wait_for(card)
    assert seen.paths == {str(index), str(card)}
    assert notifications.dropped > 0  # the lock, the temporary file and its journal


def test_what_a_scan_cannot_see_is_told_apart(tmp_path):
    index = tmp_path / "v" / "index.sqlite"  # an index outside any hidden folder
    root = tmp_path / "v"
    for path, unseen in [
        (root / "owl.hmd", False),
        (root / "sub" / "owl.md", False),
        (root / "hql.toml", False),
        (index, False),  # replaced by another build: looked at at once
        (root / "index.sqlite.lock", True),
        (root / ".index.sqlite.tmp-123", True),
        (root / ".index.sqlite.tmp-123-journal", True),
        (root / ".index.sqlite.resume", True),
        (root / ".hql" / "index.sqlite", True),
        (root / ".git" / "HEAD", True),
        (root / ".owl.hmd.swp", True),
        (tmp_path / "elsewhere.md", False),
    ]:
        assert unseen_by_scan(root, str(path), index) is unseen, path
    assert unseen_by_scan(root, str(root / ".hql" / "index.sqlite"),
                          root / ".hql" / "index.sqlite") is False
