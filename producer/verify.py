"""``verify`` (does the index still describe the vault?) and ``inspect`` (what does
the index say about itself?)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

from producer.index import (
    MAX_DIMENSIONS,
    METRIC,
    SCHEMA_VERSION,
    UNIT_TOLERANCE,
    StoreError,
    connect_readonly,
    read_index,
    sql_value,
    vector_norm,
)
from producer.vault import load_vault


@dataclass(frozen=True)
class Problem:
    kind: str
    message: str
    name: str | None = None


@dataclass
class VerifyReport:
    index: str
    cards: int = 0
    queries: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "clean": self.clean,
            "cards": self.cards,
            "queries": self.queries,
            "problems": [asdict(p) for p in self.problems],
        }


def _vector_problems(label: str, blob: bytes, dims: int) -> tuple[str, str] | None:
    if len(blob) != dims * 4:
        return "blob_length", f"{label}: embedding is {len(blob)} bytes, not {dims * 4}"
    norm = vector_norm(blob)
    if not abs(norm - 1.0) <= UNIT_TOLERANCE:
        return "not_unit", f"{label}: embedding has length {norm:.6f}, not 1"
    return None


def verify(vault_dir: str | os.PathLike[str], index_path: str | os.PathLike[str]) -> VerifyReport:
    """Every way the index fails to describe the vault. Raises ``StoreError`` only when
    the file cannot be opened as SQLite at all."""
    from producer.index import same_vault

    report = VerifyReport(index=str(index_path))
    problems = report.problems
    if not Path(index_path).exists():
        problems.append(
            Problem("absent_index", f"{index_path}: no index; build it with `hql-semantics build`")
        )
        return report
    conn = connect_readonly(index_path)
    try:
        try:
            meta = conn.execute("SELECT schema_version, vault FROM index_meta").fetchone()
        except sqlite3.Error as exc:
            problems.append(Problem("no_metadata", f"the index has no readable metadata: {exc}"))
            return report
    finally:
        conn.close()
    if meta is None:
        problems.append(Problem("no_metadata", "the index has no readable metadata"))
        return report
    if meta[0] != SCHEMA_VERSION:
        problems.append(
            Problem(
                "unknown_schema",
                f"unknown index schema: {sql_value(meta[0])}, and this tool knows {SCHEMA_VERSION}",
            )
        )
        return report
    try:
        contents = read_index(index_path)
    except StoreError as exc:
        problems.append(Problem("unreadable", str(exc)))
        return report
    report.cards = len(contents.cards)
    report.queries = len(contents.queries)

    root = Path(vault_dir)
    if not same_vault(contents.meta.vault, root):
        problems.append(
            Problem(
                "foreign_vault",
                f"the index was built for `{contents.meta.vault}` and this vault is "
                f"`{root.resolve().name}`",
            )
        )
    vault = load_vault(root)
    rows: dict[str, int] = {}
    for c in contents.cards:
        rows[c.name] = rows.get(c.name, 0) + 1
    for name, count in rows.items():
        if count > 1:
            problems.append(
                Problem("duplicate", f"{name}: {count} rows in the index for one card", name)
            )
    stored = {c.name: c for c in contents.cards}
    for card in vault.cards:
        row = stored.get(card.name)
        if row is None:
            problems.append(Problem("absent", f"{card.name}: absent from the index", card.name))
        elif row.content_hash != card.content_hash:
            problems.append(
                Problem(
                    "stale", f"{card.name}: stale, the text has changed since the build", card.name
                )
            )
    names = {c.name for c in vault.cards}
    for name in sorted(stored.keys() - names):
        problems.append(Problem("orphan", f"{name}: in the index and not in the vault", name))

    model = contents.model
    if model.metric != METRIC:
        problems.append(
            Problem(
                "metric",
                f"the index declares metric {model.metric!r}, and the reader computes cosine",
            )
        )
    if model.normalized == 0:
        problems.append(
            Problem(
                "not_normalized",
                "the index declares normalized = 0, and the reader scores with a dot product, "
                "which is cosine only for unit-length vectors",
            )
        )
    dims = model.dimensions
    if not (isinstance(dims, int) and 0 < dims <= MAX_DIMENSIONS):
        problems.append(
            Problem(
                "dimensions",
                f"the index declares {sql_value(dims)} dimensions; 1..{MAX_DIMENSIONS} are read",
            )
        )
        return report
    for card in contents.cards:
        found = _vector_problems(card.name, card.embedding, dims)
        if found:
            problems.append(Problem(found[0], found[1], card.name))
    for query in contents.queries:
        found = _vector_problems(f"query {query.text!r}", query.embedding, dims)
        if found:
            problems.append(Problem("query_" + found[0], found[1], query.text))
    return report


def inspect(index_path: str | os.PathLike[str]) -> dict[str, object]:
    """What the index records about itself (never a credential: it holds none)."""
    c = read_index(index_path)
    return {
        "schema": c.meta.schema_version,
        "vault": c.meta.vault,
        "built_at": c.meta.built_at,
        "tool": c.meta.tool_version,
        "model": c.model.id,
        "revision": c.model.revision,
        "dimensions": c.model.dimensions,
        "metric": c.model.metric,
        "normalized": bool(c.model.normalized),
        "cards": len(c.cards),
        "queries": [q.text for q in c.queries],
    }


LABEL_WIDTH = 14


def format_inspect(info: dict[str, object]) -> str:
    rows = [
        ("schema", info["schema"]),
        ("vault", info["vault"]),
        ("built at", info["built_at"]),
        ("tool", info["tool"]),
        ("model", info["model"]),
        ("revision", info["revision"]),
        ("dimensions", info["dimensions"]),
        ("metric", info["metric"]),
        ("normalized", "true" if info["normalized"] else "false"),
        ("cards", info["cards"]),
        ("queries", len(info["queries"])),  # type: ignore[arg-type]
    ]
    lines = [f"{label:<{LABEL_WIDTH}}{value}" for label, value in rows]
    lines += [" " * LABEL_WIDTH + str(q) for q in info["queries"]]  # type: ignore[union-attr]
    return "\n".join(lines)
