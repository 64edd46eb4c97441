"""The ONNX graph of a local model: where it is cached, and the record of its check.

The graph is exported on this machine from the model's own files (never
downloaded) by ``producer.embedders.onnx_export``, in a process of its own, and
cached outside any vault under the parse cache's directory rule, kind ``onnx``
(``$XDG_CACHE_HOME/hql-tui/onnx/<key>/``). The key digests everything that can
change the graph or its numbers: the model's revision (weights, tokenizer,
config, recipe), the onnxruntime and exporter versions and the CPU's flags.

Beside the graph, ``record.json`` says whether its vectors matched torch's on
the probe texts (``probe_texts.py``, per component within the float32 rebuild
tolerance) and which runtime ``auto`` resolves to on this machine. The app and
the MCP server only read that record (``read_record``): checking would import
torch. Reading it imports neither torch nor onnxruntime.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from producer.cpus import cpu_flags
from producer.embedders.model_files import cached_file_digests
from producer.parse_cache import default_cache_dir

GRAPH_KIND = "onnx"
GRAPH_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"  # dynamic int8 quantisation of GRAPH_FILE (precision "int8")
RECORD_FILE = "record.json"
# Bump when the export (opset, inputs, outputs) or the record's meaning changes.
EXPORT_FORMAT = 2
OPSET = 17
# How long an export + check may take before the build gives up on the graph.
EXPORT_TIMEOUT = 900

AUTO_RULE = (
    "onnxruntime when its graph passed the probe check and embedded the timing texts "
    "(48 texts, 32 past the 256-token cut) at least as fast as torch when the graph was "
    "made; otherwise torch"
)


@dataclass(frozen=True)
class GraphRecord:
    """What ``onnx_export`` found when it made a graph (stored as ``record.json``)."""

    key: str
    passed: bool
    reason: str = ""  # why the graph is not used (empty when it passed)
    max_abs: float | None = None  # largest component difference to torch on the probe texts
    onnxruntime: str = ""
    exporter: str = ""
    texts_per_s: dict[str, float] = field(default_factory=dict)  # runtime -> on the probe
    auto: str = "torch"  # what runtime = "auto" resolves to for builds here
    int8_sha256: str = ""  # the int8 graph's bytes (empty: none made); in its revision
    int8_reduce_range: bool = False  # 7-bit weights: a CPU without AVX512-VNNI (u8s8 saturation)
    int8_min_cosine: float | None = None  # int8 against float32 on the probe texts
    format: int = EXPORT_FORMAT

    @property
    def directory(self) -> Path:
        return default_cache_dir(GRAPH_KIND) / self.key

    @property
    def graph(self) -> Path:
        return self.directory / GRAPH_FILE

    @property
    def int8_graph(self) -> Path:
        return self.directory / INT8_FILE


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def exporter_version() -> str:
    return f"torch {_version('torch')} (TorchScript exporter, opset {OPSET})"


def _cpu_flags_digest() -> str:
    return hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:16]


def graph_key(model_dir: str | os.PathLike[str]) -> str:
    """The cache key of ``model_dir``'s graph on this machine: the digests of the files
    that decide its numbers (weights, tokenizer, config; pooling runs after the graph),
    the runtime's and exporter's versions and the CPU's flags. Hashes files; imports no
    model."""
    files = cached_file_digests(Path(model_dir))
    parts = [
        f"format {EXPORT_FORMAT}",
        *(f"{name} {digest}" for name, digest in files),
        f"onnxruntime {_version('onnxruntime')}",
        exporter_version(),
        f"cpu {_cpu_flags_digest()}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def read_record(model_dir: str | os.PathLike[str]) -> GraphRecord | None:
    """The stored record of ``model_dir``'s graph, or None when none was made (or
    it is unreadable, or its graph file is gone)."""
    key = graph_key(model_dir)
    path = default_cache_dir(GRAPH_KIND) / key / RECORD_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = GraphRecord(**data)
    except (OSError, ValueError, TypeError):
        return None
    if record.key != key or record.format != EXPORT_FORMAT:
        return None
    if record.passed and not record.graph.is_file():
        return None
    if record.int8_sha256 and not record.int8_graph.is_file():
        return None
    return record


def write_record(record: GraphRecord) -> None:
    """Store ``record`` atomically beside its graph."""
    record.directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=record.directory, prefix=".record.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(record), f, indent=1, sort_keys=True)
    os.replace(tmp, record.directory / RECORD_FILE)


def prepare_graph(model_dir: str | os.PathLike[str]) -> tuple[GraphRecord, bool]:
    """The record of ``model_dir``'s graph, and whether this call made it (so a
    failed check is reported once, by its maker): exported and checked first when
    none exists (in a process of its own: it imports torch, and an export
    shares no state with the reference vectors it is checked against).

    A failed export is returned as a record that did not pass, with the first
    line of the reason; it is stored only when the check itself failed (the
    numbers disagree), not when a package was missing or the process died, so
    fixing the install is enough for the next build to try again.
    """
    record = read_record(model_dir)
    if record is not None:
        return record, False
    key = graph_key(model_dir)
    directory = default_cache_dir(GRAPH_KIND) / key
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second build waits for the first's graph
        record = read_record(model_dir)
        if record is not None:
            return record, False
        command = [sys.executable, "-m", "producer.embedders.onnx_export",
                   str(Path(model_dir).resolve()), key]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=EXPORT_TIMEOUT, env=_child_env())
        except (OSError, subprocess.TimeoutExpired) as exc:
            return GraphRecord(key, False, f"the export did not finish: {exc}"), True
        record = read_record(model_dir)
        if record is not None:
            return record, True
        lines = [ln for ln in (done.stderr or "").strip().splitlines() if ln.strip()]
        why = lines[-1] if lines else f"the export exited with status {done.returncode}"
        return GraphRecord(key, passed=False, reason=why), True


def _child_env() -> dict[str, str]:
    """The export's environment: this one, with this checkout importable first."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env
