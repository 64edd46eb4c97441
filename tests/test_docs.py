"""The documentation's links lead somewhere: every relative link of README.md, docs/ and
benchmarks/README.md names a file that exists, and each #anchor a heading of its page.

The quick start itself (``make run`` to the first frame) needs the Makefile's .venv:
``make check-docs`` runs it (scripts/check_docs.py).
"""

from __future__ import annotations

from pathlib import Path

from scripts.check_docs import broken_links, pages, slug


def test_every_documentation_link_resolves() -> None:
    assert len(pages()) >= 10  # the README, benchmarks/README.md and the docs pages
    assert broken_links() == []


def test_a_link_to_nowhere_and_a_missing_anchor_are_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## The `hql.toml` table\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#the-hqltoml-table) [gone](docs/b.md) [bad](docs/a.md#nowhere)\n"
        "```\n[in code](not/a/link.md)\n```\n[web](https://example.org/x)\n")
    assert broken_links(tmp_path) == [
        "README.md: docs/b.md (no such file)",
        "README.md: docs/a.md#nowhere (no heading with that anchor)",
    ]


def test_heading_anchors_are_githubs() -> None:
    assert slug("Choosing the default fusion") == "choosing-the-default-fusion"
    assert slug("Agents: `hql-tui mcp VAULT`") == "agents-hql-tui-mcp-vault"
