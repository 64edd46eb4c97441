"""Make and check a model's ONNX graph: ``python -m producer.embedders.onnx_export DIR KEY``.

Run by ``onnx_graph.prepare_graph`` in a process of its own. In order:

1. torch's vectors of the probe texts (``probe_texts.py``) through today's
   ``LocalEmbedder`` on torch, and its rate on them;
2. the export: torch's TorchScript exporter (``dynamo=False``: it needs no
   onnxscript and works offline), opset ``OPSET``, dynamic batch and sequence
   axes, eager attention, traced on a padded batch so the attention mask stays
   in the graph;
3. the same texts through ONNX Runtime on that graph: every component within
   the float32 rebuild tolerance of torch's, else the graph is not used;
4. the int8 variant (precision ``int8``, opt-in): ONNX Runtime's dynamic
   quantisation of that graph, int8 weights per output channel, activations
   uint8 scaled per call; on a CPU without AVX512-VNNI with ``reduce_range``
   (7-bit weights: ONNX Runtime's documented remedy for the u8s8 saturation of
   the AVX2/AVX-512 kernels without VNNI); its digest goes into the record;
5. ``record.json`` beside the graph, with ``auto`` (``AUTO_RULE``).

The reference vectors come before the export: an export in the same process
has been seen to disturb later torch inference. Exits 1 with one line on
stderr when the export itself fails (nothing is stored then).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import producer.embedders.onnx_graph as onnx_graph
from producer.cpus import cpu_flags
from producer.embedders.local import (
    DEFAULT_MODEL_ID,
    ORT_NAME,
    TOLERANCES,
    TORCH_NAME,
    LocalEmbedder,
    local_revision,
    model_dimensions,
)
from producer.embedders.onnx_graph import GraphRecord
from producer.embedders.probe_texts import PROBE_TEXTS, TIMING_TEXTS

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"


def _embedder(
    model_dir: Path, runtime: str, graph: Path | None = None, precision: str = "float32"
) -> LocalEmbedder:
    return LocalEmbedder(
        model_dir, DEFAULT_MODEL_ID, local_revision(model_dir), model_dimensions(model_dir),
        runtime=runtime, prepare=False, graph=graph, precision=precision,
    )


def _rate(embedder: LocalEmbedder) -> tuple[np.ndarray, float]:
    """The probe texts' vectors, and texts per second on ``TIMING_TEXTS`` (a build's
    usual work; best of two passes, after a warm-up)."""
    vectors = embedder.embed(list(PROBE_TEXTS))
    embedder.embed(list(TIMING_TEXTS[:16]))
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        embedder.embed(list(TIMING_TEXTS))
        best = min(best, time.perf_counter() - start)
    return vectors, len(TIMING_TEXTS) / best


def export(model_dir: Path, out: Path) -> None:
    """Write ``model_dir``'s encoder as an ONNX graph at ``out``."""
    import torch
    from transformers import AutoModel

    # Eager attention exports as plain MatMul/Softmax, which ONNX Runtime ran faster
    # here than the graph traced through scaled_dot_product_attention (same numbers).
    model = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class Encoder(torch.nn.Module):
        # transformers 5's forward takes keyword arguments the exporter's positional
        # call would collide with: pass the three inputs by name.
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.full((2, 8), 1000, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # padded: a mask of all ones may be traced away
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, OUTPUT)}
    with torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(
            Encoder(model),
            (ids, mask, torch.zeros_like(ids)),
            str(out),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes=axes,
            opset_version=onnx_graph.OPSET,
            dynamo=False,
        )


def main(argv: list[str]) -> int:
    model_dir, key = Path(argv[0]), argv[1]
    record = GraphRecord(key, passed=False)
    directory = record.directory
    directory.mkdir(parents=True, exist_ok=True)
    import warnings

    warnings.filterwarnings("ignore")  # the tracer's notes are about code we do not own
    reference, torch_rate = _rate(_embedder(model_dir, TORCH_NAME))
    tmp = directory / f".{onnx_graph.GRAPH_FILE}.{key[:8]}.tmp"
    try:
        export(model_dir, tmp)
        tmp.replace(record.graph)
    except Exception as exc:  # one line for the build to show; nothing stored
        tmp.unlink(missing_ok=True)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"the ONNX export failed: {type(exc).__name__}: {first}", file=sys.stderr)
        return 1
    # On the new graph itself: the record that would name it is not written yet.
    vectors, ort_rate = _rate(_embedder(model_dir, ORT_NAME, record.graph))
    max_abs = float(np.abs(vectors - reference).max())
    bound = TOLERANCES["float32"].rebuild
    passed = max_abs <= bound
    reason = "" if passed else (
        f"on the probe texts it differs from torch by up to {max_abs:.2g} per component, "
        f"over the float32 tolerance {bound:g}"
    )
    rates = {TORCH_NAME: round(torch_rate, 2), ORT_NAME: round(ort_rate, 2)}
    auto = ORT_NAME if passed and ort_rate >= torch_rate else TORCH_NAME
    if not passed:
        record.graph.unlink(missing_ok=True)
        onnx_graph.write_record(GraphRecord(
            key, passed=False, reason=reason, max_abs=max_abs,
            onnxruntime=onnx_graph._version("onnxruntime"),
            exporter=onnx_graph.exporter_version(), texts_per_s=rates, auto=TORCH_NAME,
        ))
        return 0
    int8 = quantise(record.graph, record.int8_graph)
    int8_embedder = _embedder(model_dir, ORT_NAME, record.int8_graph, "int8")
    int8_vectors = int8_embedder.embed(list(PROBE_TEXTS))
    int8_cosine = float((int8_vectors.astype(np.float64) * vectors).sum(axis=1).min())
    onnx_graph.write_record(GraphRecord(
        key, passed=passed, reason=reason, max_abs=max_abs,
        onnxruntime=onnx_graph._version("onnxruntime"), exporter=onnx_graph.exporter_version(),
        texts_per_s=rates, auto=auto, int8_sha256=int8[0], int8_reduce_range=int8[1],
        int8_min_cosine=round(int8_cosine, 6),
    ))
    return 0


def quantise(graph: Path, out: Path) -> tuple[str, bool]:
    """``graph`` quantised to int8 at ``out``: (SHA-256 of its bytes, reduce_range)."""
    import hashlib

    from onnxruntime.quantization import QuantType, quantize_dynamic


    reduce_range = "avx512_vnni" not in cpu_flags() and "avx_vnni" not in cpu_flags()
    tmp = out.with_name(f".{out.name}.tmp")
    quantize_dynamic(str(graph), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=reduce_range)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    tmp.replace(out)
    return digest, reduce_range


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
