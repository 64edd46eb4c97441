"""``watch.holds``: is an extra file of a watch baseline still as the baseline saw it?"""

from __future__ import annotations

import os
from pathlib import Path

from hqltui.core.watch import holds, signature


def test_an_index_is_held_until_it_changes(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# a\n", encoding="utf-8")
    index = tmp_path / ".hql" / "index.sqlite"
    index.parent.mkdir()
    index.write_bytes(b"one")
    baseline = signature(tmp_path, [str(index)])
    assert holds(baseline, str(index))
    index.write_bytes(b"two, longer")  # a build landed since
    assert not holds(baseline, str(index))
    os.unlink(index)
    assert not holds(baseline, str(index))
    assert not holds(baseline, str(tmp_path / "not-watched.sqlite"))
