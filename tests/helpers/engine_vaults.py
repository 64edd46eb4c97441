"""The birds vault as the engine tests use it: its queries, an index made fresh
without a model run, an ``[engine]`` table, and a recorder of the client's events and
sleeps (nothing waits for real)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from hqltui.commands.engine import perform
from hqltui.core.engine import Options
from producer.vault import load_vault
from tests.helpers.vaults import FIXTURES, copy_vault

BIRDS = FIXTURES / "birds"
RANDOM_REVISION = "test-random-unit-vectors"


def birds_queries() -> list[str]:
    data = tomllib.loads((BIRDS / "queries.toml").read_text())
    return [q["text"] for q in data["query"]]


def fresh_index(root: Path, queries: list[str] | None = None) -> None:
    """Make the copy's index fresh the way an incremental build does: an unchanged card keeps
    its vector; a new or edited card gets a new random unit vector (no model run), stored under
    the index's model and revision. Without an index, one is written by benchmarks.generate."""
    from benchmarks.generate import generate_index, random_unit_vectors
    from producer.index_format import CardRow, IndexContents, QueryRow
    from producer.index_reader import read_index
    from producer.index_writer import write_index

    target = root / ".hql" / "index.sqlite"
    wanted = sorted(set(queries or []))
    if not target.exists():
        generate_index(root, wanted)
    old = read_index(target)
    kept = {c.name: c for c in old.cards}
    cards = load_vault(root).cards
    fresh = random_unit_vectors(len(cards) + len(wanted), seed=len(old.cards) + 11)
    rows = []
    for i, card in enumerate(cards):
        prev = kept.get(card.name)
        if prev is not None and prev.content_hash == card.content_hash:
            rows.append(CardRow(card.name, card.path, card.content_hash, prev.embedding))
        else:
            rows.append(CardRow(card.name, card.path, card.content_hash, fresh[i].tobytes()))
    stored = {q.text: q for q in old.queries}
    query_rows = [stored.get(t) or QueryRow(t, fresh[len(cards) + j].tobytes())
                  for j, t in enumerate(wanted)]
    # A revision no model has: these vectors are random, and no live embedding may pass for
    # them (a query outside the query table is then refused, never embedded by a real model).
    model = dataclasses.replace(old.model, revision=RANDOM_REVISION)
    write_index(target, IndexContents(model=model, meta=old.meta, cards=rows,
                                      queries=query_rows))


def add_engine(root: Path, database: str, extra: str = "") -> None:
    """``[engine]`` on ``database`` (and ``extra`` lines of the table) in the vault's hql.toml."""
    with (root / "hql.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[engine]\nprovider = "hotdata"\ndatabase = "{database}"\n{extra}')


def copy_engine_birds(root: Path, database: str, extra: str = "") -> Path:
    """A copy of the birds vault at ``root``, its index fresh (random vectors, no model
    run), its ``[engine]`` table on ``database``: the vault every engine test starts from."""
    copy_vault("birds", root)
    fresh_index(root, birds_queries())
    add_engine(root, database, extra)
    return root


class Recorder:
    def __init__(self) -> None:
        self.events: list = []
        self.sleeps: list[float] = []
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now

    def options(self, **kw: Any) -> Options:
        return Options(on_event=self.events.append, sleep=self.sleep, clock=self.clock,
                       poll_interval=0.5, **kw)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def run(kind: str, root: Path, env: Any, rec: Recorder | None = None, **kw: Any) -> Any:
    """One engine operation (sync, build, verify or a search of ``text``) on ``root``."""
    return perform(kind, root, (rec or Recorder()).options(), env, **kw)


def count(fake: Any, method: str, pattern: str) -> int:
    """How many requests the fake server took of ``method`` to paths matching ``pattern``."""
    import fnmatch

    return sum(1 for mm, p in fake.requests if mm == method and fnmatch.fnmatchcase(p, pattern))


LOADS = "/v1/databases/*/tables/*/loads"
CREATES = "/v1/connections/*/indexes"
