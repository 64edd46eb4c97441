"""Passage recipes against each other, on an index built with recipe 1.

Each ``--recipe`` variant's windows are cut on the model's tokenizer and embedded in
this process (float32; a window recipe 1 already holds, with the same embedded text,
reuses its stored vector), then scored by the card score rules of
``bench_card_rules`` on the labelled sets, beside recipe 1's own passages. The card
and query vectors are the index's.

    python -m benchmarks.bench_recipes VAULT --recipe tail --recipe stride \\
        --queries benchmarks/queries/man23.toml --queries benchmarks/queries/man23.heldout.toml
"""

from __future__ import annotations

import argparse
import bisect
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_card_rules import (
    Held,
    describe,
    held,
    index_file,
    passage_session,
    publish,
    table,
)
from hqltui.core.session import Session
from producer.index_format import unpack
from producer.index_reader import read_index
from producer.passages import NO_BREAKS, Recipe, cut_windows, passage_text, tokens_needed, whole

VARIANTS = {
    "tail": Recipe(min_tail=100),  # a last window under 100 tokens holds the text's last 200
    "stride": Recipe(breaks=NO_BREAKS, min_tail=0),  # no snapping to headings, blank lines
    "stride+tail": Recipe(breaks=NO_BREAKS, min_tail=100),
}
RULES = {"passages", "top2", "top3", "tail 100"}


def variant(session: Session, base: Held, recipe: Recipe) -> tuple[Held, int]:
    """``recipe``'s passages of every card with a vector; and how many were embedded."""
    from producer.embedders.local import LocalEmbedder

    stored = {(c.card, c.start, c.end): unpack(c.embedding)
              for c in read_index(index_file(session)).chunks}
    embedder = LocalEmbedder.packaged("float32", "torch")
    needed = tokens_needed(recipe)
    owner: list[int] = []
    tokens: list[int] = []
    rows: list[np.ndarray | None] = []
    texts: list[str] = []
    at: list[int] = []
    for position, card in enumerate(session.vault.cards):
        if not base.has_card[position]:
            continue
        offsets = embedder.token_offsets(card.text, needed)
        spans = cut_windows(card.text, offsets, recipe)
        starts, ends = [s for s, _ in offsets], [e for _, e in offsets]
        if whole(card.text, spans):
            continue  # its card vector is the passage
        for span in spans:
            owner.append(position)
            tokens.append(bisect.bisect_right(ends, span[1]) - bisect.bisect_left(starts, span[0]))
            found = stored.get((card.name, *span))
            if found is None:
                at.append(len(rows))
                texts.append(passage_text(card.text, card.title, span, recipe))
            rows.append(found)
    if texts:
        made = embedder.embed(texts)
        for i, row in zip(at, made, strict=True):
            rows[i] = row
    owned = np.array(owner, dtype=np.int64)
    last = np.append(owned[1:] != owned[:-1], True)
    return Held(base.cards, base.has_card, np.stack(rows).astype(np.float32), owned,
                np.array(tokens), last), len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--recipe", choices=sorted(VARIANTS), action="append", default=[])
    parser.add_argument("--queries", type=Path, action="append", required=True)
    parser.add_argument("--name", help="the report's name in results/")
    args = parser.parse_args()
    started = time.perf_counter()
    session = passage_session(args.vault)
    base = held(session)
    rows, per_query = table(session, base, args.queries, False, RULES)
    rows = [[*row[:3], f"recipe 1, {row[3]}", *row[4:]] for row in rows]
    notes = [f"recipe 1: {describe(base)}"]
    for name in args.recipe:
        t0 = time.perf_counter()
        h, embedded = variant(session, base, VARIANTS[name])
        more, queries = table(session, h, args.queries, False, RULES)
        rows += [[*row[:3], f"{name}, {row[3]}", *row[4:]] for row in more
                 if row[3] not in ("card", "best") or row[3] == "best"]
        per_query[name] = queries
        notes.append(f"{name} ({VARIANTS[name].fields()}): {describe(h)}; {embedded} "
                     f"embedded in {time.perf_counter() - t0:.0f} s")
    notes.append(f"{time.perf_counter() - started:.0f} s; load average "
                 + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    publish(args.name, f"Passage recipes: {args.vault.name}", rows, per_query, notes)


if __name__ == "__main__":
    main()
