"""The plain one-plane int8 scoring the passage kernels are checked against: the query's
codes and every row's approximate score, with no pass, cut or split of its own."""

from __future__ import annotations

import numpy as np

from hqltui.core.int8_codes import Codes, quantise


def query_codes(q32: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The query as int8 codes, its scale and its error norm (float64), as ``quantise``."""
    codes, scale, error, _ = quantise(q32[None, :])
    return codes[0], float(scale[0]), float(error[0])


def code_dots(held: Codes, q_codes: np.ndarray, q_scale: float) -> np.ndarray:
    """Every row's approximate score in float64: the exact integer product of its int8
    codes with the query's, times both scales (the first pass's arithmetic, row by row)."""
    import numkong

    out = np.empty(held.codes.shape[0], dtype=np.float64)
    numkong.cdist(q_codes[None, :], held.codes, metric="dot", out=out[None, :])
    out *= held.scale
    out *= q_scale
    return out
