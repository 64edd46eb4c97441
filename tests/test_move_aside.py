"""An unreadable index is moved aside, never over a file already there."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from producer.index_format import aside_path, move_aside


def test_moving_aside_keeps_the_file_under_its_stamped_name(tmp_path: Path) -> None:
    out = tmp_path / "index.sqlite"
    out.write_text("my notes\n", encoding="utf-8")
    aside = aside_path(out, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    move_aside(out, aside)
    assert not out.exists()
    assert aside.name == "index.sqlite.unreadable-20260102T030405Z"
    assert aside.read_text(encoding="utf-8") == "my notes\n"


def test_a_taken_aside_name_is_refused_and_both_files_stay(tmp_path: Path) -> None:
    out = tmp_path / "index.sqlite"
    out.write_text("mine\n", encoding="utf-8")
    aside = aside_path(out)
    aside.write_text("older\n", encoding="utf-8")
    with pytest.raises(FileExistsError, match="already exists"):
        move_aside(out, aside)
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert aside.read_text(encoding="utf-8") == "older\n"
