"""The one rule that fits link targets and error text into one line of a warning."""

from __future__ import annotations

from hqltui.core.oneline import LINK_TARGET_CHARS, link_target, one_line


def test_whitespace_runs_become_one_space() -> None:
    assert one_line("  a\n\n\tb \r\n c  ") == "a b c"


def test_long_text_is_cut_with_an_ellipsis_within_the_bound() -> None:
    text = "word " * 40
    cut = one_line(text, 20)
    assert len(cut) == 20 and cut.endswith("…") and "\n" not in cut
    assert cut == "word word word word…"  # no space left before the ellipsis


def test_text_at_the_bound_is_kept_whole() -> None:
    assert one_line("x" * 60, 60) == "x" * 60
    assert one_line("x" * 61, 60) == "x" * 59 + "…"


def test_a_link_target_spanning_troff_lines_fits_sixty_characters() -> None:
    target = "\n.B \\-\\-format\n=\n.I WHEN\n" + "lorem ipsum " * 20
    shown = link_target(target)
    assert LINK_TARGET_CHARS == 60 and len(shown) == 60
    assert shown.startswith(".B \\-\\-format = .I WHEN lorem") and shown.endswith("…")
    assert link_target("a-card-not-written-yet") == "a-card-not-written-yet"
