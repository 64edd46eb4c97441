"""Choosing the default fusion: every configuration of ``eval``'s grid against the better
arm, on the frozen real-corpus sets and the birds fixture, split by kind.

Each vault loads once and each query's arms are scored once (``hqltui eval``'s own
code, ``commands.evaluate.evaluate``); every configuration re-fuses the same windows.
The selection rule (issue "hybrid that earns its place"): on every set the default's
MRR@10 is at least 0.95 × the better of its two arms, above it on at least two real
sets, and on birds every paraphrase query has at least 2 of its group in the top 3.

    python -m benchmarks.bench_fusion --man1 VAULT --man23 VAULT [--set NAME=VAULT::QUERIES]...

``--man1`` / ``--man23`` are vaults made by ``benchmarks.manpages`` with the frozen
queries stored in their indexes (``benchmarks.realcorpus`` builds them); without them
only birds runs. ``--set`` adds a labelled set kept outside the repository (held-out
checks): only its NAME is written to the report. Writes ``results/fusion.{json,md}``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_report
from hqltui.commands.evaluate import DEPTH, evaluate, read_queries
from hqltui.core.arms import DEFAULT_FUSION
from hqltui.core.fusion import grid, parse_fusion
from hqltui.core.names import HYBRID
from hqltui.core.session import Session

ROOT = Path(__file__).resolve().parent.parent
QUERIES = Path(__file__).resolve().parent / "queries"
FLOOR, ABOVE = 0.95, 2  # at least 0.95 × the better arm everywhere; above it on two sets


def run_set(vault: Path, queries: Path, fusions: list[Any]) -> dict[str, Any]:
    """One vault's labelled queries under every fusion: per kind, MRR@10 and ratios."""
    started = time.perf_counter()
    session = Session.load(vault)
    labelled = read_queries(queries)
    report = evaluate(session, labelled, fusions=fusions)
    out: dict[str, Any] = {"seconds": time.perf_counter() - started, "kinds": {}}
    lexical = session.search.lexical
    for kind, tallies in report.by_kind.items():
        rows = {arm: t.row() for arm, t in tallies.items()}
        arms = {"lexical": rows[lexical]["mrr@10"], "semantic": rows["semantic"]["mrr@10"]}
        better = max(arms.values())
        configs = {}
        for f in fusions:
            mrr = rows[f"{HYBRID}:{f.label()}"]["mrr@10"]
            configs[f.label()] = {"mrr@10": mrr, "ratio": mrr / better if better else 1.0}
        out["kinds"][kind] = {"queries": rows["semantic"]["queries"], "lexical_arm": lexical,
                              **arms, "configs": configs}
    out["group_top3"] = group_top3(report, labelled, fusions)
    return out


def group_top3(report: Any, labelled: list[Any], fusions: list[Any]) -> dict[str, int]:
    """Per configuration, the fewest relevant cards in the top 3 over paraphrase queries."""
    fewest: dict[str, int] = {}
    for q, detail in zip(labelled, report.per_query, strict=True):
        if q.kind != "paraphrase":
            continue
        for f in fusions:
            top = detail["arms"][f"{HYBRID}:{f.label()}"].get("top", [])[:3]
            found = len(set(top) & set(q.relevant))
            fewest[f.label()] = min(fewest.get(f.label(), found), found)
    return fewest


def verdict(results: dict[str, dict[str, Any]], label: str) -> tuple[bool, float, int]:
    """(passes, worst ratio, sets above the better arm) of one configuration."""
    ratios, above, ok = [], 0, True
    for name, result in results.items():
        for kind in result["kinds"].values():
            ratio = kind["configs"][label]["ratio"]
            ratios.append(ratio)
            above += ratio > 1.0 and name != "birds"
        if name == "birds" and result["group_top3"].get(label, 2) < 2:
            ok = False
    worst = min(ratios)
    return ok and worst >= FLOOR and above >= ABOVE, worst, above


def neighbours(config: Any) -> list[Any]:
    """The default with one adaptive parameter moved a step either way: is it a plateau?"""
    steps = {"alpha_keyword": 0.1, "alpha_prose": 0.1, "words_short": 1.0, "words_long": 1.0}
    out = []
    for key, step in steps.items():
        value = getattr(config.adaptive, key)
        for moved in (value - step, value + step):
            try:
                out.append(parse_fusion(f"adaptive:{key}={moved:g}", config))
            except ValueError:
                continue  # e.g. words_short reaching words_long
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--man1", type=Path, help="the man1 vault (frozen queries indexed)")
    parser.add_argument("--man23", type=Path, help="the man2 + man3 vault")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VAULT::QUERIES",
                        help="a labelled set outside the repository (reported by NAME only)")
    parser.add_argument("--name", default="fusion")
    args = parser.parse_args()
    fusions = [DEFAULT_FUSION, *neighbours(DEFAULT_FUSION), *grid("default")]
    fusions = list(dict.fromkeys(fusions))
    sets: dict[str, tuple[Path, Path]] = {"birds": (ROOT / "fixtures/birds",
                                                    ROOT / "fixtures/birds/queries.toml")}
    if args.man1:
        sets["man1"] = (args.man1, QUERIES / "man1.toml")
    if args.man23:
        sets["man23"] = (args.man23, QUERIES / "man23.toml")
    frozen = dict(sets)
    held: dict[str, tuple[Path, Path]] = {}
    for entry in args.set:
        name, _, rest = entry.partition("=")
        vault, _, queries = rest.partition("::")
        held[name] = (Path(vault), Path(queries))
    results = {name: run_set(v, q, fusions) for name, (v, q) in frozen.items()}
    held_results = {name: run_set(v, q, [DEFAULT_FUSION]) for name, (v, q) in held.items()}
    write(args.name, results, held_results, fusions)


def write(name: str, results: dict[str, Any], held: dict[str, Any], fusions: list[Any]) -> None:
    default = DEFAULT_FUSION.label()
    columns = ["set", "kind", "n", "lexical", "semantic", "better", "default hybrid", "ratio",
               "rrf k=60", "ratio"]
    rows = []
    rrf = parse_fusion("rrf:k=60").label()
    for set_name, result in [*results.items(), *((f"{n} (held out)", r) for n, r in held.items())]:
        for kind, k in sorted(result["kinds"].items()):
            d = k["configs"][default]
            r = k["configs"].get(rrf)
            rows.append([set_name, kind, k["queries"], k["lexical"], k["semantic"],
                         max(k["lexical"], k["semantic"]), d["mrr@10"], f"{d['ratio']:.2f}",
                         "" if r is None else r["mrr@10"],
                         "" if r is None else f"{r['ratio']:.2f}"])
    ranked = sorted(((verdict(results, f.label()), f.label()) for f in fusions),
                    key=lambda x: (x[0][0], x[0][1]), reverse=True)
    notes = [f"default: `{default}` over the configured lexical arm (bm25) + semantic; "
             f"MRR@{DEPTH}; ratio = hybrid / the better arm of that set and kind",
             "selection rule: ratio ≥ 0.95 on every set, > 1 on at least two real sets, and on "
             "birds ≥ 2 group cards in the top 3 of every paraphrase query"]
    for label, result in results.items():
        if label == "birds":
            notes.append(f"birds, fewest group cards in a paraphrase query's top 3: default "
                         f"{result['group_top3'][default]}, rrf k=60 "
                         f"{result['group_top3'].get(rrf, '-')}")
    notes.append("every configuration (grid of `hql-tui eval --fusion grid`), best first: "
                 "passes, worst ratio, real sets above the better arm")
    for (ok, worst, above), label in ranked:
        notes.append(f"`{label}`: {'passes' if ok else 'fails'}, worst {worst:.2f}, "
                     f"above on {above}")
    seconds = sum(r["seconds"] for r in [*results.values(), *held.values()])
    notes.append(f"{seconds:.0f} s in all (vault loads included; the machine's 2 CPUs are "
                 "shared, so timings carry its load)")
    md = write_report(name, "Choosing the default fusion", columns, rows, notes)
    print(md.read_text())


if __name__ == "__main__":
    main()
