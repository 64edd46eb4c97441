"""What the app loads before its first frame: the main screen, Textual and the light
UI modules, never the scoring core (numpy, the tokeniser, evaluation, labels, jobs),
the YAML and TOML readers, nor the screens and views a user opens later.

Those load in the session worker (after the first frame is drawn) or where they are
first used; importing one of them at the top of a start-up module again adds its
import time to every start (docs/architecture.md, "Start-up"). This checks what
actually loads in a fresh interpreter, without timing anything.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Loaded later: by the session worker, or by the action that first needs them.
DEFERRED = [
    "numpy", "regex", "yaml", "tomllib",
    "torch", "transformers", "pyarrow", "hotdata", "watchfiles", "hqltui.core.notifications",
    "hqltui.core.arms", "hqltui.core.lexical", "hqltui.core.fusion", "hqltui.core.hybrid",
    "hqltui.core.ranking", "hqltui.core.evaluation", "hqltui.core.labels",
    "hqltui.core.jobs", "hqltui.core.tune", "hqltui.core.session", "hqltui.core.config",
    "hqltui.core.snippets",
    "producer.vault", "producer.yamlcore", "producer.tomlfile", "producer.config",
    "hqltui.ui.commands", "hqltui.ui.engine_views", "hqltui.ui.labelled_views",
    "hqltui.ui.editor", "hqltui.ui.screens.card", "hqltui.ui.screens.confirm",
    "hqltui.ui.screens.labelled", "hqltui.ui.screens.warnings",
]
# What the first frame is made of (so the probe did import the app).
NEEDED = ["textual.app", "hqltui.ui.screens.main", "hqltui.ui.widgets.cards",
          "hqltui.ui.widgets.ranking", "hqltui.ui.views", "hqltui.core.names"]

PROBE = """
import json, sys
from hqltui.ui.app import HqlApp
app = HqlApp(sys.argv[1])  # the keys and keymap, the controllers: what __init__ makes
screen = app.get_default_screen()
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(tmp_path: pathlib.Path) -> set[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "HQL_TUI_HISTORY": str(tmp_path / "history.jsonl")}
    env.pop("HQL_TUI_KEYMAP", None)  # no keymap file: the usual start
    out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "fixtures" / "birds")],
                         capture_output=True, text=True, check=True, cwd=ROOT, env=env,
                         timeout=120)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_app_loads_only_what_its_first_frame_draws(tmp_path: pathlib.Path) -> None:
    loaded = _loaded(tmp_path)
    assert set(NEEDED) <= loaded
    assert sorted(m for m in DEFERRED if m in loaded) == []


def test_the_deferred_modules_exist() -> None:
    """A name misspelt above would pass the check for ever."""
    import importlib.util

    for name in DEFERRED:
        if name.split(".")[0] in ("torch", "transformers", "pyarrow", "hotdata"):
            continue  # optional extras: may be absent here
        assert importlib.util.find_spec(name) is not None, name
