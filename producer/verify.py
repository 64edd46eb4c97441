"""``verify`` (does the index still describe the vault?) and ``inspect`` (what does
the index say about itself?)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

from producer.index_checks import (
    NO_METADATA,
    IndexProblem,
    absent_message,
    content_problems,
    doubled_passage_problem,
    foreign_vault_problem,
    identity_problem,
    model_problems,
    offsets_problem,
    ordinal_problem,
    orphan_message,
    passage_problems,
    recipe_problem,
    schema_problem,
    stale_message,
)
from producer.index_format import StoreError, sql_value
from producer.index_reader import connect_readonly, read_index
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
    passages: int | None = None  # None: the index holds no passages
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
            **({} if self.passages is None else {"passages": self.passages}),
            "problems": [asdict(p) for p in self.problems],
        }


def _problem(found: IndexProblem) -> Problem:
    return Problem(found.kind, found.message, found.name)


def verify(vault_dir: str | os.PathLike[str], index_path: str | os.PathLike[str]) -> VerifyReport:
    """Every way the index fails to describe the vault. Raises ``StoreError`` only when
    the file cannot be opened as SQLite at all."""
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
            problems.append(Problem("no_metadata", f"{NO_METADATA}: {exc}"))
            return report
    finally:
        conn.close()
    if meta is None:
        problems.append(Problem("no_metadata", NO_METADATA))
        return report
    found = schema_problem(meta[0])
    if found:
        problems.append(_problem(found))
        return report
    try:
        contents = read_index(index_path)
    except StoreError as exc:
        problems.append(Problem("unreadable", str(exc)))
        return report
    report.cards = len(contents.cards)
    report.queries = len(contents.queries)

    root = Path(vault_dir)
    foreign = foreign_vault_problem(contents.meta.vault, root)
    if foreign:
        problems.append(_problem(foreign))
    vault = load_vault(root)
    stored = {c.name: c for c in contents.cards}
    for card in vault.cards:
        row = stored.get(card.name)
        if row is None:
            problems.append(Problem("absent", absent_message([card.name]), card.name))
        elif row.content_hash != card.content_hash:
            problems.append(Problem("stale", stale_message(card.name), card.name))
    names = {c.name for c in vault.cards}
    for name in sorted(stored.keys() - names):
        problems.append(Problem("orphan", orphan_message([name]), name))

    model = contents.model
    header = model_problems(model.dimensions, model.metric, model.normalized)
    identity = identity_problem(model.id, model.revision)
    header = header if identity is None else [identity, *header]
    problems.extend(_problem(p) for p in header)
    if any(p.kind == "dimensions" for p in header):
        return report  # vectors cannot be measured against an unreadable width
    problems.extend(_problem(p) for p in content_problems(
        [(c.name, c.embedding) for c in contents.cards],
        [(q.text, q.embedding) for q in contents.queries],
        model.dimensions,
    ))
    if contents.recipe is not None:
        report.passages = len(contents.chunks)
        problems.extend(_problem(p) for p in _passage_checks(contents, vault, model.dimensions))
    return report


def _passage_checks(contents, vault, dims: int) -> list[IndexProblem]:  # noqa: ANN001
    """The chunk table: a known recipe, every card covered, offsets inside the (unchanged)
    card's text, vectors of the model's width, finite and unit."""
    out: list[IndexProblem] = []
    found = recipe_problem(contents.recipe.known, contents.recipe.rows)
    if found:
        out.append(found)
    out += passage_problems(
        [(c.card, c.ordinal, c.embedding) for c in contents.chunks],
        [c.name for c in contents.cards],
        dims,
    )
    out += [doubled_passage_problem(str(c), o, n) for c, o, n in contents.doubled_chunks]
    hashes = {c.name: c.content_hash for c in contents.cards}
    for chunk in contents.chunks:
        card = vault.by_name.get(chunk.card)
        # an orphan's or a stale card's old text is not at hand: only the span is checked
        fresh = card is not None and hashes.get(chunk.card) == card.content_hash
        length = len(card.text) if card is not None and fresh else None
        for found in (
            ordinal_problem(chunk.card, chunk.ordinal),
            offsets_problem(chunk.card, chunk.ordinal, chunk.start, chunk.end, length),
        ):
            if found:
                out.append(found)
    return out


def inspect(index_path: str | os.PathLike[str]) -> dict[str, object]:
    """What the index records about itself (never a credential: it holds none)."""
    c = read_index(index_path)
    info: dict[str, object] = {
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
    if c.recipe is not None:  # an index without passages reads as it always did
        info["passages"] = _passages_summary(c)
    return info


def _passages_summary(c) -> dict[str, object]:  # noqa: ANN001
    """The chunk table in brief: the recipe, how many passages, per card mean and max."""
    per_card: dict[str, int] = {}
    for row in c.chunks:
        per_card[row.card] = per_card.get(row.card, 0) + 1
    stored = c.recipe
    recipe = stored.recipe.to_json() if stored.recipe is not None else None
    return {
        "recipe": recipe,
        "recipe_known": stored.known,
        "digest": stored.digest,
        "count": len(c.chunks),
        "cards": len(per_card),
        "per_card_mean": round(len(c.chunks) / len(per_card), 2) if per_card else 0,
        "per_card_max": max(per_card.values(), default=0),
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
    passages = info.get("passages")
    if isinstance(passages, dict):
        recipe = passages["recipe"] or {}
        rows.append((
            "passages",
            f"{passages['count']} over {passages['cards']} cards (mean "
            f"{passages['per_card_mean']}, max {passages['per_card_max']} per card)",
        ))
        rows.append((
            "recipe",
            f"window {recipe.get('window')} tokens, overlap {recipe.get('overlap')}, title "
            f"{'prefixed' if recipe.get('title_prefix') else 'not prefixed'}, at most "
            f"{recipe.get('max_per_card')} per card, breaks {recipe.get('breaks')}"
            + ("" if passages["recipe_known"] else " (not a recipe this tool knows)"),
        ))
    # a value as stored: text as it is, anything else (NULL, a number where text belongs)
    # as a user reads it, never Python's ``None``
    lines = [f"{label:<{LABEL_WIDTH}}{value if isinstance(value, str) else sql_value(value)}"
             for label, value in rows]
    queries = info["queries"]
    assert isinstance(queries, list)
    lines += [" " * LABEL_WIDTH + str(q) for q in queries]
    return "\n".join(lines)
