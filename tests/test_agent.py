"""The MCP tools' own rules, on a Session directly: the snippet window, the text cut."""

from __future__ import annotations

from pathlib import Path

from hqltui.core import agent
from hqltui.core.session import Session


def test_a_snippet_starts_near_the_first_query_word_else_at_the_body() -> None:
    body = ("lorem " * 200) + "The Kestrel hovers. " + ("ipsum " * 200)
    cut = agent.snippet(body, "kestrel hovering")
    assert "Kestrel hovers" in cut and len(cut) <= agent.SNIPPET_CHARS
    assert 95 <= cut.index("Kestrel") <= 101  # a third of the window before the match,
    assert cut.startswith("…lorem ")  # from the next whole word, marked as cut
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


def test_serving_a_stored_vector_imports_no_model_and_other_commands_no_sdk(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    code = (
        "import sys, tomllib\n"
        "import hqltui.commands.query, hqltui.commands.evaluate, hqltui.commands.listing\n"
        "assert 'mcp' not in sys.modules, 'another command imports the MCP SDK'\n"
        "from hqltui.core import agent\n"
        "from hqltui.core.session import Session\n"
        "import hqltui.mcp.server\n"
        "s = Session.load('fixtures/birds', cache_dir=sys.argv[1])\n"
        "q = tomllib.load(open('fixtures/birds/queries.toml', 'rb'))['query'][0]['text']\n"
        "out = agent.search(s, 'birds', q, 'hybrid')\n"
        "assert out['arms']['hybrid']['hits']\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")],
                          capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_mcp_command_refuses_a_missing_vault_and_bad_flags_in_one_line(
    tmp_path: Path, capsys
) -> None:
    from hqltui.cli import main

    assert main(["mcp", str(tmp_path / "nowhere")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout is the protocol's alone
    assert captured.err == (f"hql-tui mcp: `{tmp_path / 'nowhere'}` is not a directory; "
                            "fix: name an existing vault directory\n")
    assert main(["mcp", str(tmp_path), "--poll", "-1"]) == 2
    assert "--poll: must be 0 (never) or more" in capsys.readouterr().err
