"""int8 precision against float32 on a real corpus's frozen query set (docs/runtime.md).

Takes two copies of one vault, each built with every frozen query stored
(``hql-semantics build --full --query ...``), one at ``--precision float32`` and
one at ``--precision int8``; reports each arm's MRR@10 from ``hql-tui eval``
for both, and how many queries change their semantic top 10 (as a set, and in
order), with the least cosine between the two builds' card vectors.

    python -m benchmarks.bench_int8_quality FLOAT32_VAULT INT8_VAULT QUERIES.toml --name man23
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.report import write_report
from producer.index_format import unpack
from producer.index_reader import read_index


def evaluate(vault: Path, queries: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "hqltui.cli", "eval", str(vault), str(queries),
                          "--json"], capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def top10(vault: Path) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    contents = read_index(vault / ".hql" / "index.sqlite")
    names = [c.name for c in contents.cards]
    matrix = np.stack([unpack(c.embedding) for c in contents.cards]).astype(np.float64)
    tops = {}
    for q in contents.queries:
        scores = matrix @ unpack(q.embedding).astype(np.float64)
        tops[q.text] = [names[i] for i in np.argsort(-scores, kind="stable")[:10]]
    return tops, dict(zip(names, matrix, strict=True))


def mrr(result: dict) -> dict[str, float]:
    return {arm: row["mrr@10"] for arm, row in result["overall"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("float32", type=Path)
    parser.add_argument("int8", type=Path)
    parser.add_argument("queries", type=Path)
    parser.add_argument("--name", required=True)
    args = parser.parse_args()
    f32, i8 = evaluate(args.float32, args.queries), evaluate(args.int8, args.queries)
    a_top, a_vec = top10(args.float32)
    b_top, b_vec = top10(args.int8)
    changed_set = sum(set(a_top[t]) != set(b_top[t]) for t in a_top)
    changed_order = sum(a_top[t] != b_top[t] for t in a_top)
    cosine = min(float(a_vec[n] @ b_vec[n]) for n in a_vec)
    rows = []
    a_mrr, b_mrr = mrr(f32), mrr(i8)
    for arm in a_mrr:
        rows.append([arm, f"{a_mrr[arm]:.3f}", f"{b_mrr[arm]:.3f}",
                     f"{b_mrr[arm] - a_mrr[arm]:+.3f}"])
    notes = [f"{len(a_top)} frozen queries; semantic top 10 changed for {changed_set} (as a set), "
             f"{changed_order} (in order); least cosine between the two builds' card vectors "
             f"{cosine:.4f} over {len(a_vec)} cards"]
    print(write_report(f"int8_quality_{args.name}", f"int8 against float32 on {args.name}",
                       ["arm", "MRR@10 float32", "MRR@10 int8", "difference"], rows,
                       notes).read_text())


if __name__ == "__main__":
    main()
