"""float32 against bfloat16: build throughput and cosine to float32, on real cards.

Embeds a sample of VAULT (every k-th card by name; for the man-page vault,
``--every 9`` gives about 2,000 cards) with the producer's local embedder in
float32 and in bfloat16, interleaved (f32, bf16, f32, bf16, ...), and reports
each precision's cards/s, the median ratio of rounds, and per card the cosine
of the bfloat16 vector to the float32 one (min, median) and the largest
component difference.

On a CPU without native bf16 the build refuses bfloat16 (emulated bf16 is
slower); this benchmark still runs it, to show by how much, and says so.

    python -m benchmarks.bench_precision VAULT [--every 9] [--repeats 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.report import median, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--every", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()

    import torch

    from producer.embedders import embed_texts
    from producer.embedders.local import TOLERANCES, LocalEmbedder, native_bf16
    from producer.vault import load_vault

    texts = [c.text for c in load_vault(args.vault).cards[:: args.every]]
    n = len(texts)
    f32, bf16 = LocalEmbedder.packaged("float32"), LocalEmbedder.packaged("bfloat16")
    for e in (f32, bf16):
        e.load()
        embed_texts(e, texts[:16])  # warm-up
    seconds: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    ratios = []
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.repeats):
        for name, e in (("float32", f32), ("bfloat16", bf16)):
            t = time.perf_counter()
            vectors[name] = embed_texts(e, texts)
            seconds[name].append(time.perf_counter() - t)
        ratios.append(seconds["float32"][-1] / seconds["bfloat16"][-1])
        print(
            f"round {r + 1}: float32 {n / seconds['float32'][-1]:.1f} cards/s, "
            f"bfloat16 {n / seconds['bfloat16'][-1]:.1f} cards/s, ratio {ratios[-1]:.3f}",
            flush=True,
        )
    a = vectors["float32"].astype(np.float64)
    b = vectors["bfloat16"].astype(np.float64)
    cosine = np.einsum("ij,ij->i", a, b)
    diff = float(np.abs(a - b).max())
    tol = TOLERANCES["bfloat16"]
    within = int(((np.abs(a - b).max(axis=1) <= tol.rebuild) & (cosine >= tol.cosine)).sum())
    rows = [
        ["float32", n, median(seconds["float32"]), n / median(seconds["float32"]), "", "", ""],
        [
            "bfloat16 (autocast)",
            n,
            median(seconds["bfloat16"]),
            n / median(seconds["bfloat16"]),
            f"{median(ratios):.3f}",
            f"{float(cosine.min()):.6f} / {float(np.median(cosine)):.6f}",
            f"{diff:.2e}",
        ],
    ]
    native = native_bf16()
    notes = [
        f"vault {args.vault.name}, every {args.every}th card by name ({n} cards); "
        f"{args.repeats} interleaved round(s); torch threads {torch.get_num_threads()}",
        f"native bf16 on this CPU: {'yes' if native else 'NO: emulated (a build refuses it)'}",
        f"cards within the bfloat16 tolerance (component ≤ {tol.rebuild:g}, cosine ≥ "
        f"{tol.cosine}): {within} of {n}",
    ]
    md = write_report(
        "precision",
        "float32 vs bfloat16: cards/s and cosine to float32 (real cards)",
        [
            "precision",
            "cards",
            "median s",
            "cards/s",
            "speed-up",
            "cosine min / median",
            "max |Δ|",
        ],
        rows,
        notes,
    )
    print(md.read_text())


if __name__ == "__main__":
    main()
