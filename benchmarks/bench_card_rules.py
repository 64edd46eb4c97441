"""Card score rules over the passages an index already holds, on labelled query sets.

No re-embedding: each rule is worked out exactly (float64 products of the stored
float32 vectors) from the card vectors, the passage vectors and the query vectors
the index holds (``--live`` embeds a query the index lacks). Per query set and kind
it reports, for the semantic arm and the default hybrid over it, hit@1 and MRR@10,
and the paired per-query difference of reciprocal rank against card vectors and
against the shipped rule (best passage): the mean and how many queries moved up and
down. The rules:

* ``card``: the card vector alone;
* ``best``: the best of the card vector and its passages (recipe 1's rule);
* ``passages``: the best passage alone (a card without passages: its vector);
* ``top2``, ``top3``: the mean of the best two (three) of the card vector and its
  passages (all of them when there are fewer);
* ``blend a``: ``a`` times ``best`` plus ``1 - a`` times the card vector;
* ``min L``: ``best`` over the card vector and the passages of at least ``L`` tokens
  (shorter ones do not count, the card vector always does);
* ``tail L``: ``best`` without a card's last passage when it is shorter than ``L``.

    python -m benchmarks.bench_card_rules VAULT --queries benchmarks/queries/man23.toml \\
        --queries benchmarks/queries/man23.heldout.toml [--name card_rules_man23]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.report import write_report
from hqltui.core.evaluation import read_queries
from hqltui.core.names import HYBRID
from hqltui.core.semantic import query_vector
from hqltui.core.session import Session
from producer.index_format import unpack
from producer.index_reader import read_index

CUT = 10


@dataclass
class Held:
    """The index's vectors, grouped by card in the vault's order."""

    cards: np.ndarray  # (n, d) float32, zero rows where a card has no vector
    has_card: np.ndarray  # (n,) bool
    rows: np.ndarray  # (m, d) float32 passage vectors, sorted by card then ordinal
    owner: np.ndarray  # (m,) card position of each passage
    tokens: np.ndarray  # (m,) tokens of each passage's own text (title prefix excluded)
    last: np.ndarray  # (m,) is this the card's last passage?


def _tokens_counter() -> Callable[[str], int]:
    from producer.embedders.local import default_model_dir
    from producer.embedders.model_tokenizer import fast_tokenizer, tokenizer_file

    path = tokenizer_file(default_model_dir())
    assert path is not None
    tok = fast_tokenizer(path)
    return lambda text: tok.count(text, 1 << 20) - 2  # without [CLS] and [SEP]


def index_file(session: Session) -> Path:
    """The file of the session's index (its path is relative to the vault when so given)."""
    assert session.index is not None
    path = Path(session.index.path)
    return path if path.is_absolute() else session.root / path


def held(session: Session) -> Held:
    ix = session.index
    assert ix is not None
    contents = read_index(index_file(session))
    position = {name: i for i, name in enumerate(session.names)}
    n, d = len(session.names), ix.dimensions
    cards = np.zeros((n, d), dtype=np.float32)
    has_card = np.zeros(n, dtype=bool)
    count = _tokens_counter()
    for row in contents.cards:
        if row.name in position:
            cards[position[row.name]] = unpack(row.embedding)
            has_card[position[row.name]] = True
    found = sorted(((position[c.card], c) for c in contents.chunks if c.card in position),
                   key=lambda r: (r[0], r[1].ordinal))
    owner = np.array([at for at, _ in found], dtype=np.int64)
    rows = np.stack([unpack(c.embedding) for _, c in found]).astype(np.float32)
    tokens = np.array([count(session.vault.cards[at].text[c.start:c.end]) for at, c in found])
    last = np.append(owner[1:] != owner[:-1], True)
    return Held(cards, has_card, rows, owner, tokens, last)


def _group_best(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, values)
    return out


def _top_mean(card: np.ndarray, ps: np.ndarray, owner: np.ndarray, k: int) -> np.ndarray:
    """Mean of the best ``k`` of each card's vector score and passage scores."""
    n = card.size
    every = np.concatenate([card, ps])
    who = np.concatenate([np.arange(n), owner])
    keep = np.isfinite(every)
    every, who = every[keep], who[keep]
    order = np.lexsort((-every, who))
    every, who = every[order], who[order]
    starts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
    rank_in = np.arange(who.size) - np.repeat(starts, np.diff(np.r_[starts, who.size]))
    top = rank_in < k
    sums = np.bincount(who[top], weights=every[top], minlength=n)
    counts = np.bincount(who[top], minlength=n)
    out = np.full(n, -np.inf)
    out[counts > 0] = sums[counts > 0] / counts[counts > 0]
    return out


def rules(h: Held) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    n = h.cards.shape[0]

    def parts(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        card = np.where(h.has_card, h.cards.astype(np.float64) @ q, -np.inf)
        return card, h.rows.astype(np.float64) @ q

    def best_of(card: np.ndarray, ps: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        use = ps if mask is None else np.where(mask, ps, -np.inf)
        return np.maximum(card, _group_best(use, h.owner, n))

    def card_rule(q: np.ndarray) -> np.ndarray:
        return parts(q)[0]

    def best(q: np.ndarray) -> np.ndarray:
        return best_of(*parts(q))

    def passages(q: np.ndarray) -> np.ndarray:
        card, ps = parts(q)
        alone = _group_best(ps, h.owner, n)
        return np.where(np.isfinite(alone), alone, card)

    def top(k: int) -> Callable[[np.ndarray], np.ndarray]:
        return lambda q: _top_mean(*parts(q), h.owner, k)

    def blend(a: float) -> Callable[[np.ndarray], np.ndarray]:
        def rule(q: np.ndarray) -> np.ndarray:
            card, ps = parts(q)
            return a * best_of(card, ps) + (1 - a) * card
        return rule

    def minimum(length: int) -> Callable[[np.ndarray], np.ndarray]:
        return lambda q: best_of(*parts(q), mask=h.tokens >= length)

    def tail(length: int) -> Callable[[np.ndarray], np.ndarray]:
        return lambda q: best_of(*parts(q), mask=~h.last | (h.tokens >= length))

    made: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "card": card_rule, "best": best, "passages": passages, "top2": top(2),
        "top3": top(3), **{f"blend {a}": blend(a) for a in (0.5, 0.6, 0.7, 0.8, 0.9)},
    }
    for length in (50, 100, 150):
        made[f"min {length}"] = minimum(length)
    for length in (50, 100):
        made[f"tail {length}"] = tail(length)
    return made


def _rr(names: list[str], relevant: set[str]) -> float:
    for i, name in enumerate(names[:CUT]):
        if name in relevant:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(session: Session, h: Held, queries: list, live: bool) -> dict:
    """{(rule, arm): [rr per query]}, in the order of ``queries``."""
    ix = session.index
    assert ix is not None
    made = rules(h)
    out: dict[tuple[str, str], list[float]] = {}
    lexical = session.search.lexical
    for q in queries:
        qv = query_vector(ix, session.vault, session.config, q.text, live=live,
                          embedders=session.embedders)
        if qv.vector is None:
            raise SystemExit(f"no vector for {q.text!r}: {qv.refusal}")
        vector = np.asarray(qv.vector, dtype=np.float64)
        windows = session.card_level().arm_windows(q.text, lexical=lexical, limit=CUT,
                                                   live=live)
        lex, sem = windows[lexical], windows["semantic"]
        cut = max(CUT, session.search.window)
        relevant = set(q.relevant)
        for name, rule in made.items():
            scores = rule(vector)
            scores = np.where(np.isfinite(scores), scores, 0.0)
            mine = Session._ranked(replace(sem, scores=scores, top=None, total=None,
                                           passages=None), cut)
            ranked = session.ranking_of(mine, CUT).names()
            fused = session.fuse(q.text, [lex, mine], CUT).names()
            out.setdefault((name, "semantic"), []).append(_rr(ranked, relevant))
            out.setdefault((name, HYBRID), []).append(_rr(fused, relevant))
    return out


def _paired(a: list[float], b: list[float]) -> str:
    diff = np.array(a) - np.array(b)
    return f"{diff.mean():+.3f} ({int((diff > 1e-12).sum())}↑ {int((diff < -1e-12).sum())}↓)"


COLUMNS = ["set", "kind", "arm", "rule", "n", "hit@1", "mrr@10", "Δ vs card (↑↓)",
           "Δ vs best (↑↓)"]


def table(session: Session, h: Held, query_files: list[Path], live: bool,
          only: set[str] | None = None) -> tuple[list[list[object]], dict]:
    """The report's rows (``only``: these rules, beside card and best) and the per-query
    reciprocal ranks."""
    names = set(session.names)
    rows: list[list[object]] = []
    per_query = {}
    for path in query_files:
        labelled = [q for q in read_queries(path) if all(r in names for r in q.relevant)]
        scored = evaluate(session, h, labelled, live)
        per_query[path.name] = {f"{r}|{a}": v for (r, a), v in scored.items()}
        for kind in ("paraphrase", "keyword"):
            at = [i for i, q in enumerate(labelled) if q.kind == kind]
            for arm in ("semantic", HYBRID):
                base = [scored[("card", arm)][i] for i in at]
                shipped = [scored[("best", arm)][i] for i in at]
                for rule in rules(h):
                    if only is not None and rule not in only | {"card", "best"}:
                        continue
                    rr = [scored[(rule, arm)][i] for i in at]
                    rows.append([path.stem, kind, arm, rule, len(at),
                                 round(float(np.mean([r == 1.0 for r in rr])), 3),
                                 round(float(np.mean(rr)), 3), _paired(rr, base),
                                 _paired(rr, shipped)])
    return rows, per_query


def describe(h: Held) -> str:
    return (f"{h.rows.shape[0]} passages over {int(np.unique(h.owner).size)} cards; "
            f"{int((h.last & (h.tokens < 100)).sum())} last passages under 100 tokens, "
            f"{int((h.tokens < 50).sum())} passages under 50")


def _compact(tree: object, depth: int = 0) -> str:
    """JSON with one line per list of reciprocal ranks (the per-query file stays readable
    in a diff)."""
    if not isinstance(tree, dict):
        return json.dumps(tree)
    pad = " " * (depth + 1)
    items = ",\n".join(f"{pad}{json.dumps(k)}: {_compact(v, depth + 1)}" for k, v in tree.items())
    return "{\n" + items + "\n" + " " * depth + "}"


def passage_session(vault: Path) -> Session:
    """The vault's session, refused (one line) when its index holds no passages."""
    session = Session.load(vault)
    if not session.scores_passages:
        raise SystemExit(f"{vault}: the index holds no passages")
    return session


def publish(name: str | None, title: str, rows: list[list[object]], per_query: dict,
            notes: list[str]) -> None:
    """``results/NAME.md`` and ``.json`` (and the per-query ranks), or stdout."""
    if name:
        path = write_report(name, title, COLUMNS, rows, notes)
        path.with_suffix(".per_query.json").write_text(_compact(per_query) + "\n")
        print(path.read_text())
        return
    print("| " + " | ".join(COLUMNS) + " |")
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    print("\n".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--queries", type=Path, action="append", required=True)
    parser.add_argument("--live", action="store_true",
                        help="embed a query the index does not hold (else refuse)")
    parser.add_argument("--name", help="the report's name in results/")
    args = parser.parse_args()
    started = time.perf_counter()
    session = passage_session(args.vault)
    h = held(session)
    rows, per_query = table(session, h, args.queries, args.live)
    notes = [
        describe(h),
        f"default fusion `{session.search.fusion_config().label()}`",
        f"{time.perf_counter() - started:.1f} s; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    ]
    publish(args.name, f"Card score rules over stored passages: {args.vault.name}", rows,
            per_query, notes)


if __name__ == "__main__":
    main()
