"""Labelled queries and how well each arm ranks them: the one home of the metrics.

``hql-tui eval`` (``hqltui.commands.evaluate``) prints these figures; the app's
relevance workbench shows the same ones per column and per labelled query, so a
number on screen and a number in the report are computed by the same lines.

A labelled query (``[[query]]`` in a labels file): ``text``, ``relevant`` (card
names), optionally ``kind`` (``paraphrase``, ``keyword``, …) and ``decoys`` (card
names that write the query's words and are not relevant).

Per query and arm, on the top 10 (``DEPTH``): hit@1 and hit@5 (a relevant card in
the top 1 / top 5), MRR@10 (reciprocal rank of the first relevant card, else 0),
recall@10 (share of the relevant cards in the top 10) and decoys@5 (decoys in the
top 5). A refused query counts as a miss and is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hqltui.core.arms import ARMS, HYBRID, LEXICAL_ARMS
from producer.tomlfile import TomlFileError, read_toml

DEPTH = 10
DEFAULT_KIND = "query"  # the kind of an entry that names none


class QueriesError(ValueError):
    """A labels file that cannot be used: one line naming the file and the entry."""


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    relevant: tuple[str, ...]
    kind: str = DEFAULT_KIND
    decoys: tuple[str, ...] = ()


def parse_queries(data: dict[str, Any], path: Path, *, allow_none: bool = False
                  ) -> list[LabelledQuery]:
    """The ``[[query]]`` tables of a parsed labels file; ``QueriesError`` names the bad one.

    ``allow_none``: a file without any ``[[query]]`` yet is fine (the app creates
    entries in it); ``eval`` needs at least one."""
    raw = data.get("query")
    if raw is None and allow_none:
        return []
    if not isinstance(raw, list) or (not raw and not allow_none):
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
        kind = entry.get("kind", DEFAULT_KIND)
        if not isinstance(kind, str):
            raise QueriesError(f"{where}: `kind` must be a string")
        out.append(LabelledQuery(text, lists["relevant"], kind, lists["decoys"]))
    return out


def read_queries(path: Path) -> list[LabelledQuery]:
    """Every labelled query of ``path`` (at least one), or ``QueriesError``."""
    try:
        data = read_toml(path)
    except FileNotFoundError:
        raise QueriesError(f"{path}: no such file") from None
    except TomlFileError as exc:
        raise QueriesError(str(exc)) from None
    return parse_queries(data, path)


@dataclass(frozen=True)
class QueryScores:
    """One arm's figures on one labelled query (``refused``: every figure is 0)."""

    hit1: float
    hit5: float
    mrr10: float
    recall10: float
    decoys5: int
    first: int | None  # rank of the first relevant card in the top 10
    refused: bool = False


def query_scores(ranked: Sequence[str] | None, relevant: Sequence[str],
                 decoys: Sequence[str] = ()) -> QueryScores:
    """The figures of one ranking (card names, best first; None: the arm refused)."""
    if ranked is None:
        return QueryScores(0.0, 0.0, 0.0, 0.0, 0, None, refused=True)
    wanted = set(relevant)
    top = list(ranked[:DEPTH])
    first = next((i for i, name in enumerate(top, start=1) if name in wanted), None)
    return QueryScores(
        hit1=1.0 if top[:1] and top[0] in wanted else 0.0,
        hit5=1.0 if wanted.intersection(top[:5]) else 0.0,
        mrr10=1.0 / first if first else 0.0,
        recall10=len(wanted.intersection(top)) / len(wanted) if wanted else 0.0,
        decoys5=len(set(decoys).intersection(top[:5])),
        first=first,
    )


def winners(scores: dict[str, QueryScores]) -> list[str]:
    """The arms that rank a query best: highest MRR@10, then recall@10, then hit@1.
    Empty when every arm ties (nobody wins) or none found a relevant card."""
    if not scores:
        return []
    key = {arm: (s.mrr10, s.recall10, s.hit1) for arm, s in scores.items()}
    best = max(key.values())
    top = [arm for arm, k in key.items() if k == best]
    if best == (0.0, 0.0, 0.0) or len(top) == len(scores):
        return []
    return top


@dataclass
class Tally:
    queries: int = 0
    refused: int = 0
    hit1: float = 0.0
    hit5: float = 0.0
    mrr10: float = 0.0
    recall10: float = 0.0
    decoys5: float = 0.0

    def add(self, ranked: list[str] | None, q: LabelledQuery) -> QueryScores:
        scores = query_scores(ranked, q.relevant, q.decoys)
        self.queries += 1
        if scores.refused:
            self.refused += 1
            return scores
        self.hit1 += scores.hit1
        self.hit5 += scores.hit5
        self.mrr10 += scores.mrr10
        self.recall10 += scores.recall10
        self.decoys5 += scores.decoys5
        return scores

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


@dataclass
class Report:
    arms: list[str]
    overall: dict[str, Tally] = field(default_factory=dict)
    by_kind: dict[str, dict[str, Tally]] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, QueryScores]] = field(default_factory=list)  # per query, per arm


def hybrid_name(lexical: str) -> str:
    """The report's name of hybrid fusing ``lexical`` with semantic: ``hybrid[bm25]``."""
    return f"{HYBRID}[{lexical}]"


def report_arms(default_lexical: str) -> list[str]:
    """Every arm, then hybrid fusing each lexical arm (the configured one first)."""
    fused_with = [default_lexical, *(a for a in LEXICAL_ARMS if a != default_lexical)]
    return [*ARMS, *(hybrid_name(lex) for lex in fused_with)]


def evaluate(session: Any, queries: list[LabelledQuery], *, live: bool = False,
             cancelled: Any = None) -> Report:
    """Every arm on every query, on one ``Session`` snapshot (the app's own).

    ``cancelled()``, when given, is asked between queries: True stops early."""
    default = session.search.lexical
    fused_with = [default, *(a for a in LEXICAL_ARMS if a != default)]
    arms = report_arms(default)
    report = Report(arms, {a: Tally() for a in arms})
    for q in queries:
        if cancelled is not None and cancelled():
            break
        rankings: dict[str, Any] = {}
        for lex in fused_with:  # each query ranks its lexical arm, the semantic arms, hybrid
            answer = session.query(q.text, lexical=lex, limit=DEPTH, live=live)
            for arm, ranking in answer.items():
                name = hybrid_name(lex) if arm == HYBRID else arm
                rankings.setdefault(name, ranking)
        detail: dict[str, Any] = {"text": q.text, "kind": q.kind, "arms": {}}
        per_arm: dict[str, QueryScores] = {}
        for arm in arms:
            ranking = rankings[arm]
            ranked = None if ranking.refusal is not None else ranking.names()
            per_arm[arm] = report.overall[arm].add(ranked, q)
            report.by_kind.setdefault(q.kind, {a: Tally() for a in arms})[arm].add(ranked, q)
            detail["arms"][arm] = (
                {"refusal": ranking.refusal.message}
                if ranked is None
                else {"top": ranked[:5], "first_relevant": per_arm[arm].first}
            )
        report.per_query.append(detail)
        report.scores.append(per_arm)
    return report
