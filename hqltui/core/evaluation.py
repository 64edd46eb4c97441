"""Labelled queries and their metrics: what ``eval``, ``tune`` and the app score with.

One home: ``hql-tui eval`` prints these figures, ``tune`` optimises them, and the
app's relevance workbench shows the same ones per column and per labelled query,
so a number on screen and a number in the report come from the same lines.

``read_queries(path)`` reads ``[[query]]`` tables (``text``, ``relevant``, optional
``kind`` and ``decoys``) or raises ``QueriesError`` with one line (``parse_queries``
also accepts a file without any entry yet: the app creates them). Per query and
arm, on the top 10 (``DEPTH``), ``query_scores`` gives hit@1 and hit@5, MRR@10's
reciprocal rank, recall@10 and decoys@5; ``Tally`` sums them over queries;
``winners`` names the arms that rank a query best. ``evaluate`` scores every arm
and hybrid row on one ``Session`` snapshot (``Report``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hqltui.core.arms import ARMS
from hqltui.core.fusion import FusionConfig
from hqltui.core.names import HYBRID, LEXICAL_ARMS, SEMANTIC_ARMS
from producer.tomlfile import TomlFileError, read_toml
from producer.vault import read_regular
from producer.wording import SHOWN

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hqltui.core.session import Session

DEPTH = 10
DEFAULT_KIND = "query"  # the kind of an entry that names none


class QueriesError(ValueError):
    """A labels file that cannot be used: one line naming the file and the entry;
    ``fix`` what to do, when it is more than fixing that file (a TOML error's line)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


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
    """Every labelled query of ``path`` (at least one, each text once), or ``QueriesError``."""
    return read_labelled(path)[0]


def read_labelled(path: Path) -> tuple[list[LabelledQuery], list[str]]:
    """``read_queries`` and its warnings: a query written more than once with the same
    labels counts once (25 copies would weigh 25 times and fake a tiny standard error
    in ``tune``); written with different labels it is refused, naming both entries."""
    try:
        data = read_toml(path)
    except FileNotFoundError:
        raise QueriesError(f"{path}: no such file") from None
    except TomlFileError as exc:
        raise QueriesError(exc.message, exc.fix) from None
    return distinct_queries(parse_queries(data, path), path)


def distinct_queries(queries: list[LabelledQuery], path: Path
                     ) -> tuple[list[LabelledQuery], list[str]]:
    """Each text's first entry, and a warning per text written more than once with the
    same labels; ``QueriesError`` when two entries of one text disagree."""
    first: dict[str, int] = {}
    copies: dict[str, list[int]] = {}
    for i, query in enumerate(queries):
        at = first.setdefault(query.text, i)
        if at == i:
            continue
        if _labels_of(queries[at]) != _labels_of(query):
            where = _entry_places(path, len(queries))
            raise QueriesError(
                f"{path}: query {query.text!r} is labelled differently in {where(at)} and "
                f"{where(i)}", f"keep one of the two entries in {path.name}")
        copies.setdefault(query.text, [at]).append(i)
    warnings = []
    if copies:
        where = _entry_places(path, len(queries))
        named = [f"{text!r} {len(at)} times ({', '.join(where(i) for i in at[:2])}, …)"
                 for text, at in copies.items()]
        rest = len(named) - SHOWN
        noun = "a query is" if len(named) == 1 else f"{len(named)} queries are"
        warnings = [f"{path}: {noun} written more than once with the same labels, each "
                    f"counted once: {', '.join(named[:SHOWN])}"
                    + (f" and {rest} more" if rest > 0 else "")]
    return [queries[i] for i in sorted(first.values())], warnings


def _labels_of(query: LabelledQuery) -> tuple[Any, ...]:
    """What an entry says about its text (the order of its cards says nothing)."""
    return (frozenset(query.relevant), frozenset(query.decoys), query.kind)


_ENTRY_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*query[ \t]*\]\]", re.MULTILINE)


def _entry_places(path: Path, count: int) -> Callable[[int], str]:
    """Entry ``i`` (from 0) as ``line N`` of its ``[[query]]`` header, read again from the
    file (only when a duplicate is reported), else as ``entry i+1``."""
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    starts = [text.count("\n", 0, m.start()) + 1 for m in _ENTRY_HEADER.finditer(text)]
    if len(starts) != count:  # entries written inline (query = [{…}]): no header lines
        return lambda i: f"entry {i + 1}"
    return lambda i: f"line {starts[i]}"


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
    fused: dict[str, tuple[str, str]] = field(default_factory=dict)  # hybrid row -> its arms
    scores: list[dict[str, QueryScores]] = field(default_factory=list)  # per query, per arm

    def ratio(self, row: str, tallies: dict[str, Tally]) -> float | None:
        """A hybrid row's MRR@10 over the better MRR@10 of the arms it fuses."""
        if row not in self.fused:
            return None
        better = max(tallies[a].row()["mrr@10"] for a in self.fused[row])
        mine = tallies[row].row()["mrr@10"]
        return mine / better if better > 0 else (1.0 if mine == 0 else float("inf"))

    def lost(self, row: str) -> list[dict[str, Any]]:
        """Queries where ``row`` ranked its first relevant card below the better arm of
        that query's kind (by reciprocal rank in the top 10)."""
        out = []
        for detail in self.per_query:
            tallies = self.by_kind[detail["kind"]]
            better = max(self.fused[row], key=lambda a: (tallies[a].row()["mrr@10"], a))
            mine, theirs = _rr(detail["arms"][row]), _rr(detail["arms"][better])
            if mine < theirs:
                out.append({"text": detail["text"], "kind": detail["kind"], "arm": better,
                            "rank": detail["arms"][row].get("first_relevant"),
                            "arm_rank": detail["arms"][better].get("first_relevant")})
        return out


def _rr(arm: dict[str, Any]) -> float:
    first = arm.get("first_relevant")
    return 1.0 / first if first and first <= DEPTH else 0.0


CARD_LEVEL = "semantic[cards]"  # the semantic arm on card vectors, where it scores passages


def evaluate(
    session: Session,
    queries: list[LabelledQuery],
    *,
    live: bool = False,
    fusions: Sequence[FusionConfig] = (),
    cancelled: Callable[[], bool] | None = None,
) -> Report:
    """Every arm and hybrid row on every query; ``cancelled()`` (when given) is asked
    between queries: True stops early (the app's screen was closed)."""
    default = session.search.lexical
    others = [a for a in LEXICAL_ARMS if a != default]
    semantic = SEMANTIC_ARMS[0]
    config = session.search.fusion_config()
    rows: dict[str, tuple[str, FusionConfig]] = {HYBRID: (default, config)}
    rows.update({f"{HYBRID}:lexical={lex}": (lex, config) for lex in others})
    rows.update({f"{HYBRID}:{f.label()}": (default, f) for f in fusions})
    # With passages, the semantic arm on card vectors alone too, to compare the two.
    card_level = session.card_level() if getattr(session, "scores_passages", False) else None
    arms = [*ARMS, *([CARD_LEVEL] if card_level is not None else []), *rows]
    report = Report(arms, {a: Tally() for a in arms},
                    fused={row: (lex, semantic) for row, (lex, _) in rows.items()})
    for q in queries:
        if cancelled is not None and cancelled():
            break
        rankings: dict[str, Any] = {}
        windows: dict[str, Any] = {}
        for lex in (default, *others):  # each lexical arm and semantic are scored once
            windows[lex] = session.arm_windows(q.text, lexical=lex, limit=DEPTH, live=live)
            for arm, scored in windows[lex].items():
                rankings.setdefault(arm, session.ranking_of(scored, DEPTH))
        for row, (lex, fusion) in rows.items():
            rankings[row] = session.fuse(q.text, list(windows[lex].values()), DEPTH, fusion)
        if card_level is not None:
            rankings[CARD_LEVEL] = card_level.rank(q.text, semantic, limit=DEPTH, live=live)
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
                else {
                    "top": ranked[:5],
                    "first_relevant": next(
                        (i for i, n in enumerate(ranked, start=1) if n in q.relevant), None
                    ),
                }
            )
            if ranked is not None:
                detail["arms"][arm].update(passages_detail(ranking, q.relevant))
            if arm in report.fused and ranking.retrieval is not None:
                if ranking.retrieval.alpha is not None and ranking.retrieval.signals:
                    detail["arms"][arm]["alpha"] = ranking.retrieval.alpha
        report.per_query.append(detail)
        report.scores.append(per_arm)
    return report


def passages_detail(ranking: Any, relevant: tuple[str, ...]) -> dict[str, Any]:
    """Where a ranking scored passages: which answered for each of its top five (None: no
    passage, e.g. hybrid's lexical-only hits) and for its first relevant card."""
    hits = ranking.hits[:DEPTH]
    if not any(hit.passage is not None for hit in hits):
        return {}

    def of(hit: Any) -> dict[str, Any] | None:
        return None if hit is None or hit.passage is None else hit.passage.to_json()

    first = next((hit for hit in hits if hit.card in relevant), None)
    return {"passages": [of(hit) for hit in hits[:5]], "first_relevant_passage": of(first)}


def reciprocal_rank(ranked: list[str], relevant: tuple[str, ...] | set[str]) -> float:
    """1 / the rank of the first relevant card within the top ``DEPTH``, else 0."""
    return query_scores(ranked, tuple(relevant)).mrr10


def hybrid_row(lexical: str, default_lexical: str) -> str:
    """The report's row of hybrid over ``lexical`` with the configured fusion: ``hybrid``
    for the configured lexical arm, else ``hybrid:lexical=<arm>``."""
    return HYBRID if lexical == default_lexical else f"{HYBRID}:lexical={lexical}"
