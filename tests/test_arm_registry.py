"""Adding a lexical arm is its name and kind in ``hqltui/core/names.py`` (what the app's
first frame reads without numpy) and its scorer in ``hqltui/core/arms.py``: a toy arm
added there, and nowhere else, appears in ``query --mode``, ``eval``, the JSON,
``[search] lexical``, hybrid's fusion, and the app's palette, F2 cycle, F2 tooltip and help.

The packages are copied and only those two files are edited in the copy, so the test
proves that nothing else names the arms; a child process imports the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.vaults import copy_vault

ROOT = Path(__file__).resolve().parents[1]

TOY_NAME = '''ARM_KINDS["toy"] = LEXICAL
'''
TOY_SCORER = '''_SCORERS["toy"] = {"metric": "bm25", "model": "toy.bm25.v1", "revision": "1",
                   "build": BM25, "score": _bm25_scores}
'''

# Runs in the child, against the copy: prints one JSON object of what a user sees.
PROBE = r'''
import asyncio, io, json, sys
from contextlib import redirect_stdout, redirect_stderr

from hqltui.cli import main
from hqltui.commands import query
from hqltui.core.config import load_app_config

vault, queries = sys.argv[1], sys.argv[2]
seen = {}
mode = next(a for a in query.parser()._actions if a.dest == "mode")
seen["mode_choices"] = list(mode.choices)

def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()

code, out, err = run("query", vault, "owl", "--mode", "toy", "--json")
seen["query_toy"] = json.loads(out)
code, out, err = run("eval", vault, queries, "--json")
seen["eval_arms"] = sorted(json.loads(out)["overall"])
(open(vault + "/hql.toml", "a")).write('[search]\nlexical = "toy"\n')
seen["config_lexical"] = load_app_config(vault).search.lexical
import hqltui; seen["package"] = hqltui.__file__
seen["config_errors"] = dict(load_app_config(vault).errors)
code, out, err = run("query", vault, "owl", "--mode", "hybrid", "--json")
seen["hybrid"] = json.loads(out)

from hqltui.ui import keys, views
from hqltui.ui.app import HqlApp
from hqltui.ui.commands import HqlCommands

seen["tooltip"] = next(b.tooltip for b in keys.APP_BINDINGS if b.action == "toggle_lexical")

async def drive():
    app = HqlApp(vault, poll_interval=None, cursor_blink=False, debounce=0.01)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        seen["help"] = "\n".join(views.help_notes(app.keys))
        seen["palette"] = [c[0] for c in HqlCommands(app.screen)._commands()]
        cycle = [app.lexical]
        for _ in range(3):
            await pilot.press("f2")
            await pilot.pause()
            cycle.append(app.lexical)
        seen["f2_cycle"] = cycle

asyncio.run(drive())
print(json.dumps(seen))
'''


def test_a_toy_arm_in_the_registry_appears_everywhere(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for package in ("hqltui", "producer"):
        shutil.copytree(ROOT / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for file, anchor, entry in (("names.py", "LEXICAL_ARMS: tuple[str, ...]", TOY_NAME),
                                ("arms.py", "ARMS: dict[str, Arm]", TOY_SCORER)):
        path = src / "hqltui" / "core" / file
        text = path.read_text(encoding="utf-8")
        assert f"\n{anchor}" in text
        path.write_text(text.replace(f"\n{anchor}", f"\n{entry}{anchor}", 1), encoding="utf-8")
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    queries = tmp_path / "q.toml"
    queries.write_text('[[query]]\ntext = "owl"\nrelevant = ["barn-owl", "tawny-owl"]\n',
                       encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(src), "HQL_TUI_HISTORY": str(tmp_path / "h.jsonl"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("HQL_TUI_KEYMAP", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(vault), str(queries)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])

    assert seen["package"].startswith(str(src))
    assert "toy" in seen["mode_choices"]
    toy = seen["query_toy"]["arms"]["toy"]
    assert toy["retrieval"]["arm"] == "toy" and toy["retrieval"]["model"] == "toy.bm25.v1"
    assert toy["hits"] and "owl" in toy["hits"][0]["card"]
    assert "toy" in seen["eval_arms"] and "hybrid:lexical=toy" in seen["eval_arms"]
    assert seen["config_lexical"] == "toy" and "search" not in seen["config_errors"]
    fused = [a["arm"] for a in seen["hybrid"]["arms"]["hybrid"]["retrieval"]["arms"]]
    assert fused == ["toy", "semantic"]
    assert "toy" in seen["tooltip"]
    assert "toy" in seen["help"]
    assert seen["palette"][:3] == ["lexical: bm25", "lexical: hashbag", "lexical: toy (current)"]
    assert seen["f2_cycle"] == ["toy", "bm25", "hashbag", "toy"]


def test_every_arm_named_has_one_scorer() -> None:
    """The two halves of an arm cannot drift: each name of ``names.ARM_KINDS`` has its
    scorer in ``arms`` and no scorer is left without a name (it would never run)."""
    from hqltui.core import arms, names

    assert list(arms.ARMS) == list(names.ARM_KINDS)
    assert set(arms._SCORERS) == set(names.ARM_KINDS)
    assert {a.name: a.kind for a in arms.ARMS.values()} == names.ARM_KINDS
