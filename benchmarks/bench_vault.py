"""Vault load time (discover, read, parse, text, hash) at 1k, 10k and 100k cards.

Cold: no parse cache (first run). Warm: a parse cache from an earlier run,
keyed by path, size and mtime, serves unchanged files. Each figure is the
median of several runs in a fresh `ParseCache` object, as a new process would.

    python -m benchmarks.bench_vault [--sizes 1000,10000,100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.generate import generate_vault
from benchmarks.report import median, write_report
from producer.parse_cache import ParseCache
from producer.vault import load_vault

BUDGETS = {10_000: (5.0, 1.5), 100_000: (50.0, 15.0)}  # (cold, warm) seconds


def vault_for(n: int, base: Path) -> Path:
    root = base / f"vault-{n}"
    if not (root / "hql.toml").exists():
        generate_vault(root, n)
    return root


def timed_load(root: Path, cache_dir: Path) -> tuple[float, int]:
    start = time.perf_counter()
    vault = load_vault(root, cache=ParseCache(root, cache_dir))
    return time.perf_counter() - start, len(vault.cards)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=None, help="where generated vaults are kept")
    args = parser.parse_args()
    base = Path(args.work or Path(tempfile.gettempdir()) / "hql-bench")
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        root = vault_for(n, base)
        cold, warm = [], []
        for _ in range(args.repeats):
            cache_dir = Path(tempfile.mkdtemp(prefix="hql-parse-cache-"))
            seconds, count = timed_load(root, cache_dir)
            assert count == n, f"generated {n} cards, loaded {count}"
            cold.append(seconds)
            warm.append(timed_load(root, cache_dir)[0])
            shutil.rmtree(cache_dir)
        cold_s, warm_s = median(cold), median(warm)
        budget = BUDGETS.get(n)
        verdict = (
            f"cold ≤ {budget[0]:g} s {'met' if cold_s <= budget[0] else 'MISSED'}; "
            f"warm ≤ {budget[1]:g} s {'met' if warm_s <= budget[1] else 'MISSED'}"
            if budget
            else "no budget"
        )
        rows.append([n, cold_s, n / cold_s, warm_s, n / warm_s, verdict])
        print(rows[-1], flush=True)
    md = write_report(
        "vault_load",
        "Vault load: read, parse, text, hash",
        ["cards", "cold s", "cold cards/s", "warm s", "warm cards/s", "budget"],
        rows,
        [
            f"median of {args.repeats} runs; cold = empty parse cache, warm = cache from the "
            "previous run (files unchanged); OS file cache warm in both"
        ],
    )
    print(md.read_text())


if __name__ == "__main__":
    main()
