"""`hql-tui eval VAULT QUERIES.toml`: how well each arm ranks labelled queries.

``QUERIES.toml`` holds ``[[query]]`` tables: ``text`` (string), ``relevant``
(card names), optionally ``kind`` (e.g. ``paraphrase``, ``keyword``) and
``decoys`` (card names that write the query's words and are not relevant).

Per arm (``hashbag``, ``bm25``, ``semantic``, and hybrid fusing each lexical
arm; where the index holds passages, ``semantic`` scores by best passage and
``semantic[cards]`` is the same arm on card vectors alone), over all queries
and per kind: hit@1 and hit@5 (share of queries with a relevant card in the
top 1 / top 5), MRR@10 (mean reciprocal rank of the first relevant card within
the top 10, else 0), recall@10 (share of a query's
relevant cards in its top 10, averaged over queries), and decoys@5 (mean number
of decoys in the top 5). A refused query counts as a miss and is counted.
Everything runs on one ``Session`` snapshot, the one the app uses.

Exit status: 0 when every arm answered every query, 1 when any refused (or
the files cannot be used), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hqltui.commands.common import Parser, refuse, run_command
from hqltui.core.arms import ARMS, HYBRID, LEXICAL_ARMS
from producer.terminal import shown, shown_lines
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
        first = next((i for i, name in enumerate(top, start=1) if name in relevant), None)
        self.mrr10 += 1.0 / first if first else 0.0
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


@dataclass
class Report:
    arms: list[str]
    overall: dict[str, Tally] = field(default_factory=dict)
    by_kind: dict[str, dict[str, Tally]] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)


CARD_LEVEL = "semantic[cards]"  # the semantic arm on card vectors, where it scores passages


def evaluate(session: Any, queries: list[LabelledQuery], *, live: bool = False) -> Report:
    # Every arm, then hybrid fusing each lexical arm (the configured one first); with
    # passages, the semantic arm on card vectors alone too, to compare the two.
    default = session.search.lexical
    fused_with = [default, *(a for a in LEXICAL_ARMS if a != default)]
    card_level = session.card_level() if session.scores_passages else None
    arms = [*ARMS, *([CARD_LEVEL] if card_level else []),
            *(f"{HYBRID}[{lex}]" for lex in fused_with)]
    report = Report(arms, {a: Tally() for a in arms})
    for q in queries:
        rankings: dict[str, Any] = {}
        for lex in fused_with:  # each query ranks its lexical arm, the semantic arms, hybrid
            answer = session.query(q.text, lexical=lex, limit=DEPTH, live=live)
            for arm, ranking in answer.items():
                name = f"{HYBRID}[{lex}]" if arm == HYBRID else arm
                rankings.setdefault(name, ranking)
        if card_level is not None:
            rankings[CARD_LEVEL] = card_level.rank(q.text, "semantic", limit=DEPTH, live=live)
        detail: dict[str, Any] = {"text": q.text, "kind": q.kind, "arms": {}}
        for arm in arms:
            ranking = rankings[arm]
            ranked = None if ranking.refusal is not None else ranking.names()
            report.overall[arm].add(ranked, q)
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
        report.per_query.append(detail)
    return report


COLUMNS = ("hit@1", "hit@5", "mrr@10", "recall@10", "decoys@5")


def table(tallies: dict[str, Tally]) -> list[str]:
    width = max(len(a) for a in tallies)
    head = "| " + "arm".ljust(width) + " | " + " | ".join(COLUMNS) + " | refused |"
    rule = "|" + "-" * (width + 2) + "|" + "|".join("-" * (len(c) + 2) for c in COLUMNS)
    lines = [head, rule + "|---------|"]
    for arm, tally in tallies.items():
        row = tally.row()
        cells = " | ".join(f"{row[c]:.3f}".rjust(len(c)) for c in COLUMNS)
        refused = f"{row['refused']}/{row['queries']}".rjust(7)
        lines.append(f"| {arm.ljust(width)} | {cells} | {refused} |")
    return lines


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="hql-tui eval", description="Score each retrieval arm on labelled queries.")
    p.add_argument("vault", help="the vault directory")
    p.add_argument("queries", help="a TOML file of [[query]] text, relevant, kind, decoys")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--live", action="store_true", help="allow live http query embedding")
    return p


def run(args: argparse.Namespace) -> int:
    from hqltui.core.session import Session

    try:
        queries = read_queries(Path(args.queries))
        session = Session.load(args.vault)
    except QueriesError as exc:
        return refuse(args, "hql-tui", str(exc), f"fix {args.queries}")
    except (NotADirectoryError, FileNotFoundError) as exc:
        return refuse(args, "hql-tui", str(exc), "name an existing vault directory")
    if "search" in session.config.errors:
        config = session.config
        fix = config.file_fix or f"edit [search] in {config.file.name}"
        return refuse(args, "hql-tui", config.errors["search"], fix)
    unknown = sorted(
        {n for q in queries for n in q.relevant + q.decoys if n not in session.vault.by_name}
    )
    report = evaluate(session, queries, live=args.live)
    refused = any(t.refused for t in report.overall.values())
    if args.json:
        data = {
            "vault": str(args.vault),
            "queries": len(queries),
            "unknown_cards": unknown,
            "overall": {a: t.row() for a, t in report.overall.items()},
            "by_kind": {
                k: {a: t.row() for a, t in tallies.items()} for k, tallies in report.by_kind.items()
            },
            "per_query": report.per_query,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        out = [f"{len(queries)} queries on {args.vault}", ""]
        out += table(report.overall)
        for kind, tallies in report.by_kind.items():
            n = next(iter(tallies.values())).queries
            out += ["", f"{kind} ({n} quer{'y' if n == 1 else 'ies'})"] + table(tallies)
        refusals = {
            d["arms"][a]["refusal"]
            for d in report.per_query
            for a in report.arms
            if "refusal" in d["arms"][a]
        }
        if refusals:
            out += ["", "refusals:"] + [f"  {m}" for m in sorted(refusals)]
        print(shown_lines("\n".join(out)))
    if unknown:
        print(
            shown(f"hql-tui: {args.queries} names cards not in the vault: {', '.join(unknown)}"),
            file=sys.stderr,
        )
    return 1 if refused else 0


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(), run, argv, "hql-tui eval")
