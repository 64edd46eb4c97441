"""Small vaults with hand-made indexes (vectors chosen by the test, no model run), and
the ways the retrieval tests break an index on purpose."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from producer.index_format import CardRow, IndexContents, MetaRow, ModelRow, QueryRow, pack
from producer.index_writer import write_index
from producer.vault import load_vault
from tests.helpers.vaults import write_cards

MODEL = "test/model"
REVISION = "rev-1"


def unit(values: list[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def write_vault(root: Path, cards: dict[str, str], *, index: str | None = ".hql/index.sqlite",
                extra_toml: str = "") -> Path:
    """Cards as ``name.hmd`` files whose body is the given text."""
    write_cards(root, {name: f"# {name}\n\n{body}\n" for name, body in cards.items()}, ".hmd")
    toml = f'[semantics]\nindex = "{index}"\n' if index else ""
    (root / "hql.toml").write_text(toml + extra_toml, encoding="utf-8")
    return root


def write_test_index(
    root: Path,
    vectors: dict[str, np.ndarray],
    queries: dict[str, np.ndarray] | None = None,
    *,
    out: str = ".hql/index.sqlite",
    vault_name: str | None = None,
    model: str = MODEL,
    revision: str = REVISION,
    hashes: dict[str, str] | None = None,
) -> Path:
    """An index for the cards now in ``root`` (hashes from the vault unless given)."""
    vault = load_vault(root)
    dims = len(next(iter(vectors.values()))) if vectors else 4
    rows = []
    for name, vec in vectors.items():
        card = vault.by_name.get(name)
        digest = (hashes or {}).get(name) or (card.content_hash if card else "0" * 64)
        path = card.path if card else f"{name}.hmd"
        rows.append(CardRow(name, path, digest, pack(vec)))
    contents = IndexContents(
        model=ModelRow(model, revision, dims),
        meta=MetaRow(vault=vault_name or root.name, built_at="2026-01-01T00:00:00+00:00"),
        cards=rows,
        queries=[QueryRow(t, pack(v)) for t, v in (queries or {}).items()],
    )
    target = root / out
    write_index(target, contents)
    return target


THREE_CARDS = {"alpha": "first card", "beta": "second card", "gamma": "third card"}
THREE_VECTORS = {
    "alpha": unit([1, 0, 0, 0]),
    "beta": unit([1, 1, 0, 0]),
    "gamma": unit([0, 0, 1, 1]),
}


def three_card_vault(root: Path, queries: dict[str, np.ndarray] | None = None,
                     extra_toml: str = "") -> Path:
    """alpha, beta and gamma with a hand-made index of ``THREE_VECTORS`` (and the stored
    ``queries``): the index reader's and the semantic arm's small vault."""
    write_vault(root, THREE_CARDS, extra_toml=extra_toml)
    write_test_index(root, THREE_VECTORS, queries)
    return root


OWLS_AND_HERON = {
    "barn-owl": "a pale owl that hunts voles in the dark",
    "tawny-owl": "an owl of woodland, active after dusk",
    "grey-heron": "a heron standing in reeds, catching fish",
}


def owl_vault(root: Path, fourth: dict[str, str] | None = None,
              queries: dict[str, np.ndarray] | None = None) -> Path:
    """Two owls and a heron (and a ``fourth`` card, on an axis of its own) with a hand-made
    index: the owls near each other, the heron apart, the query ``owl`` stored beside
    ``queries``. The retrieval tests' small vault, where each arm's answer is known."""
    cards = {**OWLS_AND_HERON, **(fourth or {})}
    write_vault(root, cards)
    vectors = {"barn-owl": unit([1, 0, 0, 0.1]), "tawny-owl": unit([1, 0.2, 0, 0]),
               "grey-heron": unit([0, 1, 0, 0])}
    vectors.update({name: unit([0, 0, 1, 0]) for name in fourth or {}})
    write_test_index(root, vectors, {"owl": unit([1, 0.1, 0, 0]), **(queries or {})})
    return root


def doctor(path: Path, *statements: str, params: tuple = ()) -> None:
    """Run SQL against an index to break it on purpose."""
    conn = sqlite3.connect(path)
    try:
        for sql in statements:
            conn.execute(sql, params) if params else conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


@contextmanager
def locked(index: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``BEGIN EXCLUSIVE`` on ``index`` for the ``with`` block
    (it has taken the lock when the block starts); the process is yielded for its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, time\n"
         f"c = sqlite3.connect({str(index)!r}, isolation_level=None)\n"
         "c.execute('BEGIN EXCLUSIVE')\n"
         "print('held', flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()
