"""The MCP tools' own rules, on a Session directly: the snippet window, the text cut."""

from __future__ import annotations

from pathlib import Path

from hqltui.core import agent
from hqltui.core.session import Session


def test_a_snippet_starts_near_the_first_query_word_else_at_the_body() -> None:
    body = ("lorem " * 200) + "The Kestrel hovers. " + ("ipsum " * 200)
    cut = agent.snippet(body, "kestrel hovering")
    assert "Kestrel hovers" in cut and len(cut) <= agent.SNIPPET_CHARS
    assert 95 <= cut.index("Kestrel") <= 100  # a third of the window before the match
    assert agent.snippet(body, "absent words").startswith("lorem lorem")
    assert agent.snippet("short body", "x") == "short body"


def test_a_long_card_is_cut_and_flagged(tmp_path: Path) -> None:
    (tmp_path / "long.md").write_text("# Long\n\n" + "word " * 6000, encoding="utf-8")
    (tmp_path / "short.md").write_text("# Short\n\nSee [[long]] and [[nowhere]].\n",
                                       encoding="utf-8")
    session = Session.load(tmp_path, cache_dir=tmp_path / "cache")
    long = agent.get_card(session, "long")
    assert long["truncated"] is True and len(long["text"]) == agent.TEXT_CHARS
    assert long["characters"] > agent.TEXT_CHARS and long["backlinks"] == ["short"]
    short = agent.get_card(session, "short")
    assert short["truncated"] is False and short["links"] == ["long"]
    assert short["unresolved_links"] == ["nowhere"] and short["index_status"] == "missing"
