"""`hql-tui VAULT --list`, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.vaults import copy_vault, write_cards

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hqltui.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_list_prints_cards_index_setting_and_no_warnings():
    result = run("fixtures/mini", "--list")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "fixtures/mini  (HMD vault)  10 cards" in out
    assert ".hql/index.sqlite" in out
    assert "core-schema        Core schema scalars       core-schema.hmd" in out
    assert "warnings: none" in out
    assert "lists-and-maps -> [[a-card-not-written-yet]]" in out


def test_list_names_broken_files_and_config_errors(tmp_path):
    for i in range(8):
        (tmp_path / f"card-{i}.md").write_text(f"# Card {i}\n")
    (tmp_path / "bad-header.hmd").write_text("---\ntitle: x\n")
    (tmp_path / "latin1.md").write_bytes(b"caf\xe9")
    (tmp_path / "hql.toml").write_text("[search]\nlimit = 0\n")
    result = run(str(tmp_path), "--list")
    assert result.returncode == 0, result.stderr
    assert "8 cards" in result.stdout
    assert "not an HMD vault" in result.stdout
    assert "bad-header.hmd: unterminated header" in result.stdout
    assert "latin1.md: not UTF-8" in result.stdout
    assert "`limit` must be a positive integer" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_missing_vault_is_one_line_and_exit_1(tmp_path):
    result = run(str(tmp_path / "nope"), "--list")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("nope: does not exist")
    assert "Traceback" not in result.stderr


def test_the_console_scripts_exist():
    bindir = Path(sys.executable).parent
    assert (bindir / "hql-tui").exists() and (bindir / "hql-semantics").exists()


def test_a_link_target_spanning_lines_is_listed_on_one_cut_line(tmp_path):
    from producer.vault import load_vault

    target = "\n.B \\-\\-color\n[=\n.I WHEN\n]\n" + "colorize the output; " * 10
    write_cards(tmp_path, {"ls.1": f"# ls\n\n.SH SYNOPSIS\nls [[{target}]] FILE\n"})
    result = run(str(tmp_path), "--list")
    assert result.returncode == 0, result.stderr
    tail = result.stdout.split("unresolved links (1)\n", 1)[1]
    assert tail == "  ls.1 -> [[.B \\-\\-color [= .I WHEN ] colorize the output; colorize the…]]\n"
    # Only the display is cut: the link keeps its whole target, as hql parses it.
    assert load_vault(tmp_path).cards[0].links[0].target == target.strip()


def test_list_reads_through_the_parse_cache_and_a_warm_listing_is_the_same(tmp_path):
    import os

    from producer.parse_cache import cache_file

    vault = tmp_path / "mini"
    copy_vault("mini", vault)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))

    def listing() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hqltui.cli", str(vault), "--list"],
                              cwd=REPO, capture_output=True, text=True, timeout=60, env=env)

    cold = listing()
    written = cache_file(vault, "parse", tmp_path / "xdg" / "hql-tui" / "parse")
    assert cold.returncode == 0 and written.exists()
    assert listing().stdout == cold.stdout
