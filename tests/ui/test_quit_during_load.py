"""Quitting the app while the vault is still loading ends the process (issue: bad
input, round two): a load that never finishes must not keep it alive."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys, threading
from hqltui.ui.app import HqlApp

def never_done(path):
    threading.Event().wait()  # a load that never finishes

app = HqlApp(sys.argv[1], session_factory=never_done, ready_file=sys.argv[2], poll_interval=None)
app.run()
"""


def _wait_for(path: Path, text: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and text in path.read_text(encoding="utf-8"):
            return True
        time.sleep(0.05)
    return False


def test_ctrl_q_during_a_load_that_never_ends_exits(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(REPO / "fixtures" / "mini"), str(ready)],
        stdin=slave, stdout=slave, stderr=slave, cwd=REPO, env=env, close_fds=True,
    )
    os.close(slave)
    try:
        assert _wait_for(ready, "first-paint", 60), "the app never painted"
        os.write(master, b"\x11")  # ctrl+q
        end = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < end:
            readable, _, _ = select.select([master], [], [], 0.1)
            if readable:
                try:
                    os.read(master, 65536)  # keep the terminal drained
                except OSError:  # the app closed its terminal: it is on its way out
                    time.sleep(0.1)
        assert proc.poll() is not None, "the app was still running 30 s after ctrl+q"
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
