"""Process settings the tools make before numpy loads its BLAS.

Imported by the entry points (and the benchmarks that time what they run) before
anything imports numpy; it imports nothing heavy itself.
"""

from __future__ import annotations

import os


def quiet_blas() -> None:
    """Stop OpenBLAS's workers spinning after each call.

    By default an OpenBLAS worker busy-waits for about 2^28 cycles (0.1 s here) after a
    call, in case another follows. The tools make few BLAS calls and run threads of their
    own beside them (the passage pass, the UI), which that spinning robs of a core: the
    100k × 7 passage pass took 47 ms right after a card-vector product, 30 ms with the
    workers sleeping at once; the product itself is no slower. An
    ``OPENBLAS_THREAD_TIMEOUT`` already set is kept."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # 2^4 cycles, OpenBLAS's least
