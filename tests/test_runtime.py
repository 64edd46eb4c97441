"""The entry point's process settings: made before numpy loads, and a user's own kept."""

from __future__ import annotations

import os
import subprocess
import sys


def run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**clean, **env}, check=True)
    return out.stdout.strip()


def test_the_cli_stops_blas_workers_spinning_before_numpy_loads() -> None:
    code = ("import sys, os\n"
            "from hqltui.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'), 'numpy' in sys.modules)")
    assert run(code).splitlines()[-1] == "4 False"


def test_a_timeout_the_user_set_is_kept() -> None:
    code = ("import os\nfrom hqltui.runtime import quiet_blas\nquiet_blas()\n"
            "print(os.environ['OPENBLAS_THREAD_TIMEOUT'])")
    assert run(code, OPENBLAS_THREAD_TIMEOUT="28") == "28"
