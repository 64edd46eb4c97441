"""Hostile vault files cost one card each, never the vault, never a hang (issue: bad
input, round two): an alias bomb, symlink loops, dangling links, FIFOs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from producer.vault import load_vault
from producer.yamlcore import HeaderError, load_mapping

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
    shutil.copytree(BIRDS, vault)
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
