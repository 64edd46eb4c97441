"""Labelled queries and their metrics: what ``eval`` and ``tune`` score with (one home).

``read_queries(path)`` reads ``[[query]]`` tables (``text``, ``relevant``, optional
``kind`` and ``decoys``) or raises ``QueriesError`` with one line. ``Tally`` sums
one row's hit@1, hit@5, MRR@10, recall@10 and decoys@5 over queries;
``reciprocal_rank`` is MRR@10's term for one query.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from producer.tomlfile import TomlFileError, read_toml

DEPTH = 10


class QueriesError(ValueError):
    pass


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    relevant: tuple[str, ...]
    kind: str = "query"
    decoys: tuple[str, ...] = ()


def read_queries(path: Path) -> list[LabelledQuery]:
    try:
        data = read_toml(path)
    except FileNotFoundError:
        raise QueriesError(f"{path}: no such file") from None
    except TomlFileError as exc:
        raise QueriesError(str(exc)) from None
    raw = data.get("query")
    if not isinstance(raw, list) or not raw:
        raise QueriesError(f"{path}: needs [[query]] tables, each with `text` and `relevant`")
    out = []
    for i, entry in enumerate(raw, start=1):
        where = f"{path}: query {i}"
        if not isinstance(entry, dict):
            raise QueriesError(f"{where} is not a table")
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            raise QueriesError(f"{where}: `text` must be a non-empty string")
        lists = {}
        for key in ("relevant", "decoys"):
            value = entry.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise QueriesError(f"{where}: `{key}` must be a list of card names")
            lists[key] = tuple(value)
        if not lists["relevant"]:
            raise QueriesError(f"{where}: `relevant` names no card")
        kind = entry.get("kind", "query")
        if not isinstance(kind, str):
            raise QueriesError(f"{where}: `kind` must be a string")
        out.append(LabelledQuery(text, lists["relevant"], kind, lists["decoys"]))
    return out


@dataclass
class Tally:
    queries: int = 0
    refused: int = 0
    hit1: float = 0.0
    hit5: float = 0.0
    mrr10: float = 0.0
    recall10: float = 0.0
    decoys5: float = 0.0

    def add(self, ranked: list[str] | None, q: LabelledQuery) -> None:
        self.queries += 1
        if ranked is None:
            self.refused += 1
            return
        relevant = set(q.relevant)
        top = ranked[:DEPTH]
        self.hit1 += 1.0 if top[:1] and top[0] in relevant else 0.0
        self.hit5 += 1.0 if relevant.intersection(top[:5]) else 0.0
        self.mrr10 += reciprocal_rank(top, q.relevant)
        self.recall10 += len(relevant.intersection(top)) / len(relevant)
        self.decoys5 += len(set(q.decoys).intersection(top[:5]))

    def row(self) -> dict[str, Any]:
        n = self.queries or 1
        return {
            "queries": self.queries,
            "refused": self.refused,
            "hit@1": self.hit1 / n,
            "hit@5": self.hit5 / n,
            "mrr@10": self.mrr10 / n,
            "recall@10": self.recall10 / n,
            "decoys@5": self.decoys5 / n,
        }




def reciprocal_rank(ranked: list[str], relevant: tuple[str, ...] | set[str]) -> float:
    """1 / the rank of the first relevant card within the top ``DEPTH``, else 0."""
    wanted = set(relevant)
    first = next((i for i, n in enumerate(ranked[:DEPTH], start=1) if n in wanted), None)
    return 1.0 / first if first else 0.0
