"""The token prefix checked on a real vault: every card against full tokenisation.

For each card of VAULT (for example a vault of man pages), the ids the model
reads from the card's token prefix must equal those it reads from the whole
text. Reports the cards checked, the mismatches (there must be none), how much
text the prefixes keep, and the time of both tokenisations. Needs no model run.

    python -m benchmarks.bench_prefix VAULT [--every K]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.report import write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--every", type=int, default=1, help="check every k-th card only")
    args = parser.parse_args()

    from producer.embedders.local import MAX_TOKENS, packaged_embedder
    from producer.vault import load_vault

    embedder = packaged_embedder()
    embedder.load()
    tokenizer = embedder._tokenizer

    def ids(text: str) -> list[int]:
        return tokenizer(text, truncation=True, max_length=MAX_TOKENS)["input_ids"]

    cards = load_vault(args.vault).cards[:: args.every]
    mismatches: list[str] = []
    kept: list[float] = []
    prefix_s = full_s = 0.0
    chars = prefix_chars = 0
    for card in cards:
        t = time.perf_counter()
        prefix = embedder.prefixes([card.text])[0]
        short = ids(prefix)
        prefix_s += time.perf_counter() - t
        t = time.perf_counter()
        whole = ids(card.text)
        full_s += time.perf_counter() - t
        if short != whole:
            mismatches.append(card.name)
        chars += len(card.text)
        prefix_chars += len(prefix)
        kept.append(len(prefix) / max(1, len(card.text)))
    rows = [
        [
            len(cards),
            len(mismatches),
            chars,
            prefix_chars,
            statistics.median(kept),
            prefix_s,
            full_s,
        ]
    ]
    notes = [
        f"vault: {args.vault.name}, every {args.every} card(s); the prefix's first "
        f"{MAX_TOKENS} token ids compared with the whole text's",
        "prefix s: cutting and tokenising the prefixes; full s: tokenising the whole texts "
        "(what a build did before), one card at a time",
    ]
    if mismatches:
        notes.append("MISMATCHES: " + ", ".join(mismatches[:20]))
    md = write_report(
        "token_prefix",
        "Token prefix against full tokenisation, every card of a real vault",
        [
            "cards",
            "mismatches",
            "text chars",
            "prefix chars",
            "median kept",
            "prefix s",
            "full s",
        ],
        rows,
        notes,
    )
    print(md.read_text())
    raise SystemExit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
