"""Hostile vault files cost one card each, never the vault, never a hang (issue: bad
input, round two): an alias bomb, symlink loops, dangling links, FIFOs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from producer.vault import load_vault
from producer.yamlcore import HeaderError, load_mapping
from tests.helpers.vaults import copy_vault

REPO = Path(__file__).resolve().parent.parent
BIRDS = REPO / "fixtures" / "birds"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A header whose aliases expand to ``width ** levels`` strings."""
    lines = ["---", "title: Alias bomb", "a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join([*lines, "---", "# Alias bomb", "", "Nine levels of nine aliases.", ""])


def test_a_header_past_the_node_bound_is_refused_and_one_below_it_loads() -> None:
    from producer.yamlcore import MAX_NODES

    with pytest.raises(HeaderError, match=f"more than {MAX_NODES:,} nodes"):
        load_mapping(alias_bomb().split("---\n")[1])
    small = alias_bomb(levels=3, width=9).split("---\n")[1]  # 9**3 strings
    assert len(load_mapping(small)["a2"]) == 9


def test_an_alias_bomb_costs_one_card_in_a_copy_of_birds(tmp_path: Path) -> None:
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    (vault / "bomb.hmd").write_text(alias_bomb(), encoding="utf-8")
    # In a child process with a deadline, so a regression fails instead of hanging the run.
    code = (
        "import sys; from producer.vault import load_vault\n"
        "v = load_vault(sys.argv[1]); print(len(v.cards)); print(*v.warnings, sep='\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(vault)], capture_output=True,
                            text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    count, *warnings = result.stdout.splitlines()
    assert int(count) == len(load_vault(BIRDS).cards)
    assert (
        "bomb.hmd: the YAML expands to more than 100,000 nodes (aliases counted at "
        "every use), the most a header may hold; document skipped"
    ) in warnings


def _copy_of_birds(tmp_path: Path) -> Path:
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    return vault


def _in_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child with a deadline: a FIFO opened by mistake blocks forever."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_two_symlinks_pointing_at_each_other_cost_two_warnings_not_the_vault(
    tmp_path: Path,
) -> None:
    vault = _copy_of_birds(tmp_path)
    os.symlink("loop-b.md", vault / "loop-a.md")
    os.symlink("loop-a.md", vault / "loop-b.md")
    loaded = load_vault(vault)
    assert len(loaded.cards) == len(load_vault(BIRDS).cards)
    assert [w for w in loaded.warnings if "loop" in w] == [
        "loop-a.md: a symlink loop (it leads back to itself); skipped",
        "loop-b.md: a symlink loop (it leads back to itself); skipped",
    ]
    listing = subprocess.run([sys.executable, "-m", "hqltui.cli", str(vault), "--list"],
                             capture_output=True, text=True, timeout=60, cwd=REPO)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert "loop-a.md: a symlink loop" in listing.stdout


def test_a_dangling_symlink_is_named_dangling_not_outside(tmp_path: Path) -> None:
    vault = _copy_of_birds(tmp_path)
    os.symlink("no-such-card.md", vault / "gone.md")
    os.symlink("/no/such/place.md", vault / "far.md")
    warnings = [w for w in load_vault(vault).warnings if w.startswith(("gone", "far"))]
    assert warnings == [
        "far.md: a dangling symlink (its target '/no/such/place.md' does not exist); skipped",
        "gone.md: a dangling symlink (its target 'no-such-card.md' does not exist); skipped",
    ]


def test_a_fifo_is_skipped_and_never_opened_by_the_loader_or_the_watcher(tmp_path: Path) -> None:
    vault = _copy_of_birds(tmp_path)
    os.mkfifo(vault / "pipe.md")
    code = (
        "import sys; from producer.vault import load_vault\n"
        "from hqltui.core.watch import signature\n"
        "v = load_vault(sys.argv[1]); print(*v.warnings, sep='\\n')\n"
        "print('watched', any(p.endswith('pipe.md') for p, *_ in signature(sys.argv[1])))\n"
    )
    result = _in_child(code, str(vault))
    assert result.returncode == 0, result.stderr
    assert "pipe.md: a FIFO (named pipe), not a regular file; skipped" in result.stdout
    assert "watched False" in result.stdout


def test_a_fifo_swapped_in_after_discovery_or_as_hql_toml_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "late.md")
    (tmp_path / "v").mkdir()
    os.mkfifo(tmp_path / "v" / "hql.toml")
    code = (
        "import sys; from pathlib import Path\n"
        "from producer.vault import read_source, HeaderError\n"
        "from hqltui.core.config import load_app_config\n"
        "try: read_source(Path(sys.argv[1]) / 'late.md')\n"
        "except HeaderError as exc: print('card:', exc)\n"
        "print('config:', load_app_config(Path(sys.argv[1]) / 'v').errors['search'])\n"
    )
    result = _in_child(code, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "card: a FIFO (named pipe), not a regular file" in result.stdout
    assert "config: " in result.stdout and "not a regular file" in result.stdout
