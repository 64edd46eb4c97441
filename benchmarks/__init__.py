"""Benchmarks: deterministic generated vaults and measured figures (never timed unit tests).

Every benchmark runs with the process settings the tools' entry point makes before
numpy loads (``hqltui.runtime``), so what it times in-process is what the tools run.
"""

from hqltui.runtime import quiet_blas

quiet_blas()
