"""The app's helpers: history file, vault change signature, text rendering."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hqltui.core.history import History, default_path
from hqltui.core.watch import signature
from hqltui.ui import render


def test_history_round_trip_dedupes_and_keeps_newest_last(tmp_path: Path) -> None:
    path = tmp_path / "h" / "history.jsonl"
    history = History(path, limit=3)
    assert history.load() == []
    for text in ["a b", "c", "a b", "multi\nline", "d"]:
        assert history.add(text)
    again = History(path, limit=3)
    assert again.load() == ["a b", "multi\nline", "d"]


def test_history_location_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HQL_TUI_HISTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_path() == tmp_path / "hql-tui" / "history.jsonl"
    monkeypatch.setenv("HQL_TUI_HISTORY", str(tmp_path / "x.jsonl"))
    assert default_path() == tmp_path / "x.jsonl"


def test_unreadable_history_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\xff\xfe not json\n")
    assert History(path).load() == []


def test_signature_changes_on_edit_add_and_remove_but_skips_dot_entries(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("one")
    (tmp_path / ".hql").mkdir()
    index = tmp_path / ".hql" / "index.sqlite"
    index.write_bytes(b"x")
    first = signature(tmp_path, [index])
    (tmp_path / ".hidden.md").write_text("ignored")
    (tmp_path / "notes.txt").write_text("not a document")
    assert signature(tmp_path, [index]) == first
    (tmp_path / "a.md").write_text("one two")
    second = signature(tmp_path, [index])
    assert second != first
    (tmp_path / "b.hmd").write_text("new")
    third = signature(tmp_path, [index])
    assert third != second
    stamp = index.stat().st_mtime_ns + 10_000_000
    os.utime(index, ns=(stamp, stamp))
    assert signature(tmp_path, [index]) != third


def test_highlight_marks_query_tokens_only() -> None:
    text = render.highlight("Night-hunting owls hunt at NIGHT; a nightjar too.", {"night"}, "X")
    marked = [text.plain[s.start : s.end] for s in text.spans]
    assert marked == ["Night", "NIGHT"]


def test_body_text_emphasises_headings_and_drops_carriage_returns() -> None:
    body, anchor = render.body_text("\r\n# Barn owl\r\nHunts at night.\r\n", {"night"},
                                    mark="M", heading="H")
    assert body.plain == "Barn owl\nHunts at night." and anchor is None


def test_body_text_styles_the_passage_that_answered_and_says_where_it_starts() -> None:
    body = "# Shell\n\nReads commands.\n\n## Limits\n\nulimit sets the core size.\n"
    a = body.index("ulimit")
    text, anchor = render.body_text(body, set(), mark="M", heading="H", span=(a, a + 11),
                                    span_style="P")
    styled = [text.plain[s.start : s.end] for s in text.spans if s.style == "P"]
    assert styled == ["ulimit sets"]
    assert anchor == text.plain.index("ulimit sets")
    heading = body.index("Limits")  # a span from a heading's marker: its title is styled
    text, anchor = render.body_text(body, set(), mark="M", heading="H",
                                    span=(heading - 3, len(body)), span_style="P")
    assert [text.plain[s.start : s.end] for s in text.spans if s.style == "P"][0] == "Limits"
    assert anchor == text.plain.index("Limits")


def test_age_and_revision_shapes() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert render.age(now - timedelta(seconds=30), now) == "30 s"
    assert render.age(now - timedelta(minutes=5), now) == "5 min"
    assert render.age(now - timedelta(hours=3), now) == "3 h"
    assert render.age(now - timedelta(days=59), now) == "59 d"
    assert render.age(None, now) == "?"
    assert render.short_revision("sha256:deb6161234") == "sha256:deb616"
    assert render.short_model("sentence-transformers/all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"


def test_the_card_pane_previews_the_first_lines_and_counts_the_rest() -> None:
    from hqltui.ui.views import preview

    body = "\n\n" + "\n".join(f"line {i}" for i in range(1, 101)) + "\n\n"
    shown, more = preview(body, 60)
    assert shown.split("\n") == [f"line {i}" for i in range(1, 61)]
    assert more == 40
    short = "one\ntwo\n\n"
    assert preview(short, 60) == (short, 0)
    assert preview("a\nb\n\n\n", 2) == ("a\nb\n\n\n", 0)  # only blank lines follow


def test_highlight_marks_what_the_shown_arm_matched() -> None:
    line = "Le café de Zürich et 北海道の鶴"
    terms = render.query_terms("cafe zurich 北海道 鶴", "bm25")
    text = render.highlight(line, terms, "X", "bm25")
    assert [text.plain[s.start : s.end] for s in text.spans] == ["café", "Zürich", "北海", "海道",
                                                                "鶴"]
    hashbag = render.highlight(line, render.query_terms("cafe zurich 北海道", "hashbag"), "X",
                               "hashbag")
    assert hashbag.spans == []  # hashbag's tokens: `cafe` is not `café`, 北海道 not a whole run
