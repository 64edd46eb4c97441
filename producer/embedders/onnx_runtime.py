"""The encoder run by ONNX Runtime on a graph exported from the model's weights.

Same recipe as torch's (``local.TorchEncoder``): the encoder's last hidden
state, mean-pooled over the attention mask and L2-normalised, here in numpy
float32. Imports onnxruntime and numpy only: a live query through it loads
neither torch nor transformers.

Thread layout (measured, ``benchmarks/bench_embed.py``): like torch's, calls
side by side on sessions of one thread each when a build has several runs (no
thread waits at each operator for the slowest; a loaded machine hurts it less),
and one session on every core for a lone run (a query).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from producer.cpus import encoder_workers

NAME = "onnxruntime"


class OrtEncoder:
    name = NAME

    def __init__(self, graph: Path, threads: int) -> None:
        self.graph = graph
        self.threads = threads
        self._session = self._open(threads)
        self._single: object | None = None  # one thread: side by side (made when first needed)
        self._active = self._session
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _open(self, threads: int) -> Any:
        return open_session(self.graph, threads)

    @property
    def dimensions(self) -> int | None:
        width = self._session.get_outputs()[0].shape[-1]
        return width if isinstance(width, int) else None

    def forward(self, enc: Mapping[str, np.ndarray]) -> np.ndarray:
        feed = {k: v for k, v in enc.items() if k in self._inputs}
        return self._active.run(None, feed)[0]

    @staticmethod
    def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean over the unmasked tokens, then unit length (torch's ``normalize`` eps)."""
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.sqrt((pooled * pooled).sum(axis=1, keepdims=True))
        return pooled / np.maximum(norms, 1e-12)

    def workers(self, runs: int, threads: int) -> int:
        return encoder_workers(runs, threads)

    @contextlib.contextmanager
    def side_by_side(self) -> Iterator[None]:
        """Calls on the one-thread session (``run`` releases the GIL), then back."""
        if self._single is None:
            self._single = self._open(1)
        self._active = self._single
        try:
            yield
        finally:
            self._active = self._session


_SESSIONS: dict[tuple[str, int], Any] = {}
_SESSIONS_LOCK = threading.Lock()


def open_session(graph: Path, threads: int) -> Any:
    """The process's one ``InferenceSession`` of ``graph`` on ``threads`` threads.

    Shared, so a session loaded ahead of need (``local.warm_graph``: the MCP server
    loads it beside the vault) serves the first live query; ``run`` is thread-safe.
    """
    key = (str(graph), threads)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.log_severity_level = 3  # notes about unused initialisers: not the user's
            session = ort.InferenceSession(
                str(graph), options, providers=["CPUExecutionProvider"]
            )
            _SESSIONS[key] = session
        return session
