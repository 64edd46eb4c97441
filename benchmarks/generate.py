"""Deterministic generated vaults (and indexes of random unit vectors) for benchmarks.

Every card has one fixed, realistic shape: a header with a title, a `tags`
list and a nested `metadata` map, a `# ` heading, and a ~150-word body drawn
from a fixed vocabulary with a Zipf-like distribution. The same (n, seed)
gives the same bytes on every machine, so figures are comparable between runs.

    python -m benchmarks.generate OUT_DIR --cards 10000 [--index]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
from pathlib import Path

import numpy as np

SYLLABLES = (
    "ka ra to mi nu le so va pe di lo ru shi ta ne go ba ri fe mo wa zu ki po la de hu sa ti co"
).split()
TAG_POOL = (
    "wetland",
    "forest",
    "coast",
    "migrant",
    "resident",
    "raptor",
    "songbird",
    "wader",
    "seabird",
    "nocturnal",
    "endemic",
    "vagrant",
)
STATUSES = ("todo", "doing", "done")
CARDS_PER_FOLDER = 500
BODY_WORDS = 150


def vocabulary(size: int = 4000, seed: int = 7) -> list[str]:
    """A fixed list of distinct pseudo-words (2–4 syllables)."""
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class ZipfWords:
    """Draws words with probability proportional to 1 / rank (Zipf, s = 1)."""

    def __init__(self, words: list[str], rng: random.Random) -> None:
        self.words = words
        self.rng = rng
        self.cumulative = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(words))))

    def draw(self, n: int) -> list[str]:
        total = self.cumulative[-1]
        return [
            self.words[bisect.bisect_left(self.cumulative, self.rng.random() * total)]
            for _ in range(n)
        ]


def card_source(i: int, zipf: ZipfWords, rng: random.Random) -> tuple[str, str]:
    """(vault-relative path, file text) of card ``i``."""
    title_words = zipf.draw(3)
    title = " ".join(title_words).capitalize() + f" {i}"
    tags = sorted(rng.sample(TAG_POOL, 2))
    body_words = zipf.draw(BODY_WORDS)
    sentences = []
    for start in range(0, len(body_words), 15):
        chunk = body_words[start : start + 15]
        sentences.append(" ".join(chunk).capitalize() + ".")
    body = "\n".join(" ".join(sentences[k : k + 3]) for k in range(0, len(sentences), 3))
    text = (
        "---\n"
        f"title: {title}\n"
        f"tags: [{', '.join(tags)}]\n"
        "metadata:\n"
        f"  status: {rng.choice(STATUSES)}\n"
        f"  owner: {zipf.draw(1)[0]}\n"
        "  knowledge:\n"
        "    type: Concept\n"
        f"    confidence: {rng.randint(1, 5)}\n"
        "---\n"
        f"# {title}\n\n{body}\n"
    )
    return f"part-{i // CARDS_PER_FOLDER:03d}/card-{i:06d}.hmd", text


def generate_vault(root: str | Path, n: int, seed: int = 0) -> Path:
    """Write a vault of ``n`` cards under ``root`` (a `.hmd/` and an `hql.toml` included)."""
    root = Path(root)
    rng = random.Random(seed)
    zipf = ZipfWords(vocabulary(), rng)
    (root / ".hmd").mkdir(parents=True, exist_ok=True)
    (root / ".hmd" / "config.toml").write_text('wiki = "."\n')
    (root / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n')
    for i in range(n):
        rel, text = card_source(i, zipf, rng)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def random_unit_vectors(n: int, dimensions: int = 384, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dimensions)).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype("<f4")


def generate_index(root: str | Path, queries: list[str] = (), seed: int = 1) -> Path:
    """An index for the vault at ``root`` whose vectors are random unit vectors.

    Stored under the real model id and revision, so the reader treats it as a
    real index (no model run needed); every card is fresh.
    """
    from producer.embedders.local import DEFAULT_MODEL_ID, local_revision
    from producer.index_format import CardRow, IndexContents, MetaRow, ModelRow, QueryRow
    from producer.index_writer import write_index
    from producer.vault import load_vault

    root = Path(root)
    vault = load_vault(root)
    vectors = random_unit_vectors(len(vault.cards) + len(queries), seed=seed)
    cards = [
        CardRow(c.name, c.path, c.content_hash, vectors[i].tobytes())
        for i, c in enumerate(vault.cards)
    ]
    query_rows = [
        QueryRow(text, vectors[len(cards) + j].tobytes())
        for j, text in enumerate(sorted(set(queries)))
    ]
    contents = IndexContents(
        model=ModelRow(DEFAULT_MODEL_ID, local_revision(), 384),
        meta=MetaRow(vault=root.name, built_at="2026-01-01T00:00:00+00:00"),
        cards=cards,
        queries=query_rows,
    )
    out = root / ".hql" / "index.sqlite"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_index(out, contents)
    return out


def sample_queries(n: int = 24, seed: int = 3) -> list[str]:
    """Queries of 2–3 vocabulary words, drawn the same way as card text."""
    rng = random.Random(seed)
    zipf = ZipfWords(vocabulary(), rng)
    return [" ".join(zipf.draw(rng.randint(2, 3))) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index", action="store_true", help="also write a random-vector index")
    args = parser.parse_args()
    root = generate_vault(args.out, args.cards, args.seed)
    if args.index:
        generate_index(root, sample_queries())
    print(root)


if __name__ == "__main__":
    main()
