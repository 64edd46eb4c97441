"""The whole product on real corpora: the machine's man pages as vaults (SPEC §11).

Converts ``man1`` (the main vault) and ``man2`` + ``man3`` (a second corpus for
the frozen query sets) with ``benchmarks.manpages``, then on the man1 vault:

* vault load (read, parse, text, hash), cold (empty parse cache) and warm;
* ``hql-tui VAULT --list`` and ``hql-tui query VAULT TEXT --mode all`` (whole
  processes, warm cache): seconds, exit status, every arm answered;
* a full ``hql-semantics build --full`` (the frozen queries stored with
  ``--query``): seconds, cards/s, the process's peak RSS;
* an unchanged rebuild, cold and warm (``bench_embed.rebuild_times``);
* each arm's median query latency over the frozen queries (one ``Session``);
* the app on a 120×36 pseudo-terminal (``bench_app.run_on_pty``): first paint,
  vault loaded, keystroke → three columns over typed frozen queries, the
  app's peak RSS; and the app's peak RSS on a generated 100k-card vault;
* ``hql-tui eval`` of both corpora's frozen sets (``benchmarks/queries/``);
* ours against sentence-transformers on a sample of man pages
  (``bench_embed.throughput_of``).

``--sample N`` converts about N man1 pages (every k-th) for a quick run; eval
then keeps the queries whose relevant pages are all in the sample, and says so.

    python -m benchmarks.realcorpus [--sample N] [--work DIR] [--man-dir DIR]
                                    [--steps build,cli,latency,app,eval,ratio] [--name NAME]
                                    [--ratio-sample 2000] [--ratio-repeats 3]

``--steps generated`` alone measures only the app at 100k generated cards (no man pages).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_app import run_on_pty
from benchmarks.bench_app import vault_for as generated_app_vault
from benchmarks.bench_embed import rebuild_times, throughput_of
from benchmarks.bench_retrieval import timed
from benchmarks.bench_vault import timed_load
from benchmarks.manpages import DEFAULT_MAN_DIR, page_files, write_vault
from benchmarks.report import median, write_report

QUERIES = Path(__file__).resolve().parent / "queries"
CORPORA = {"man1": ["1"], "man23": ["2", "3"]}
GIB = 1024**3
BUDGETS = {  # issue 13 acceptance, on the man1 vault
    "build_rss": 1.5 * GIB,
    "ratio": 1.0,
    "rebuild_warm": 3.0,
    "paint": 1.0,
    "cards_shown": 4.0,
    "ranking_ready": 8.0,
    "key_ms": 150.0,
    "app_rss": 1.0 * GIB,
}
ARMS = ("hashbag", "bm25", "semantic")
STEPS = ("build", "cli", "latency", "app", "generated", "eval", "ratio")
DEFAULT_STEPS = ("build", "cli", "latency", "app", "eval", "ratio")


def verdict(value: float, budget: float) -> str:
    return "met" if value <= budget else "MISSED"


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def cli(
    args: list[str], cache: Path, timeout: float = 3600
) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``python -m ...`` with the benchmark's parse cache; (seconds, the finished process)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", *args], env=env, capture_output=True,
                         text=True, timeout=timeout)
    return time.perf_counter() - start, out


def build(root: Path, queries: list[str], cache: Path, full: bool = True) -> dict[str, Any]:
    """``hql-semantics build`` as its own process (``--full``: everything re-embedded):
    seconds, its events, peak RSS."""
    cmd = [sys.executable, "-m", "producer", "build", "--vault", str(root), "--offline",
           *(["--full"] if full else []), "--drop-queries", "--progress", "jsonl"]
    for text in queries:
        cmd.append(f"--query={text}")  # "=": a query may start with "--"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    err = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    events: dict[str, dict[str, Any]] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        events[event.get("event", "?")] = event
        if event.get("event") == "start":
            event["at"] = time.perf_counter() - start
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    err.seek(0)
    if proc.returncode != 0 or "final" not in events:
        tail = err.read().decode("utf-8", "replace").strip().splitlines()[-3:]
        raise SystemExit(f"build of {root} failed (exit {proc.returncode}): {' | '.join(tail)}")
    return {"seconds": seconds, "rss": usage.ru_maxrss * 1024, **events}


def frozen(name: str) -> tuple[Path, list[dict[str, Any]], dict[str, str]]:
    path = QUERIES / f"{name}.toml"
    queries = tomllib.loads(path.read_text(encoding="utf-8"))["query"]
    titles = tomllib.loads((QUERIES / f"{name}.titles.toml").read_text(encoding="utf-8"))
    return path, queries, titles["titles"]


def recorded_titles(name: str) -> dict[str, str]:
    """The titles the frozen set and its held-out set record (the held-out file may be
    absent): a converter that changed either makes a query set mean something else."""
    titles = dict(frozen(name)[2])
    heldout = QUERIES / f"{name}.heldout.titles.toml"
    if heldout.exists():
        titles.update(tomllib.loads(heldout.read_text(encoding="utf-8"))["titles"])
    return titles


def cards_of(root: Path, cache: Path) -> list[Any]:
    from producer.parse_cache import ParseCache
    from producer.vault import load_vault

    return list(load_vault(root, cache=ParseCache(root, cache)).cards)


def check_titles(root: Path, titles: dict[str, str], cache: Path) -> list[str]:
    """Recorded titles that differ from the converted vault's (missing cards are not counted)."""
    cards = {c.name: c.title for c in cards_of(root, cache)}
    return [n for n, t in titles.items() if n in cards and cards[n] != t]


def present_queries(name: str, root: Path, work: Path) -> tuple[Path, int, int]:
    """The frozen set, or (sampled vault) a copy keeping queries whose relevant cards exist."""
    path, queries, _ = frozen(name)
    names = {p.name[: -len(".md")] for p in root.rglob("*.md")}
    kept = [q for q in queries if all(r in names for r in q["relevant"])]
    if len(kept) == len(queries):
        return path, len(kept), len(queries)
    out = work / f"{name}.present.toml"
    blocks = []
    for q in kept:
        rel = ", ".join(json.dumps(r, ensure_ascii=False) for r in q["relevant"])
        blocks.append(f'[[query]]\ntext = {json.dumps(q["text"], ensure_ascii=False)}\n'
                      f'kind = "{q["kind"]}"\nrelevant = [{rel}]\n')
    out.write_text("\n".join(blocks), encoding="utf-8")
    return out, len(kept), len(queries)


def evaluate(root: Path, name: str, work: Path, cache: Path) -> dict[str, Any]:
    path, kept, total = present_queries(name, root, work)
    if not kept:
        return {"kept": 0, "total": total}
    seconds, out = cli(["hqltui.cli", "eval", str(root), str(path), "--json"], cache)
    if out.returncode not in (0, 1) or not out.stdout.strip():
        raise SystemExit(f"eval on {root} failed (exit {out.returncode}): {out.stderr.strip()}")
    data = json.loads(out.stdout)
    return {"kept": kept, "total": total, "seconds": seconds, "exit": out.returncode, **data}


def eval_rows(result: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for scope, tallies in [("all", result["overall"]), *sorted(result["by_kind"].items())]:
        for arm, t in tallies.items():
            ratio = f"{t['ratio']:.2f}" if "ratio" in t else ""  # hybrid rows: / better arm
            rows.append([scope, arm, t["queries"], t["hit@1"], t["hit@5"], t["mrr@10"], ratio,
                         t["recall@10"], f"{t['refused']}/{t['queries']}"])
    return rows


def arm_latency(root: Path, texts: list[str], cache: Path, repeats: int = 3) -> dict[str, float]:
    """Median ms per arm (``Session.rank``; hybrid = ``Session.query``) over ``texts``."""
    from hqltui.core.session import Session

    gc.collect()
    session = Session.load(root, cache_dir=cache)
    per: dict[str, list[float]] = {a: [] for a in (*ARMS, "hybrid")}
    for text in texts:
        for arm in ARMS:
            ranking = session.rank(text, arm, limit=20)
            if ranking.refusal is not None:
                raise SystemExit(f"{arm} refused {text!r}: {ranking.refusal.message}")
            per[arm].append(timed(lambda a=arm, t=text: session.rank(t, a, limit=20), repeats))
        per["hybrid"].append(timed(lambda t=text: session.query(t, limit=20).hybrid, repeats))
    return {arm: median(v) for arm, v in per.items()}


class Rows:
    """The report's rows, each printed as it is measured (a long run shows progress)."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []

    def add(self, measure: str, value: Any, budget: str = "—", met: str = "") -> None:
        self.rows.append([measure, value, budget, met])
        print(self.rows[-1], flush=True)


def generated(n: int, work: Path, row: Callable[..., None]) -> None:
    """The app's peak RSS on a generated vault of ``n`` cards (bench_app's vault and index)."""
    gen_root = generated_app_vault(n, work / "generated")
    gen_cache = Path(tempfile.mkdtemp(prefix="hql-gen-cache-", dir=work))
    cold = run_on_pty(gen_root, gen_cache, timeout=900)  # fills the parse cache
    warm = run_on_pty(gen_root, gen_cache, timeout=900)
    for label, run in (("cold", cold), ("warm", warm)):
        row(f"app at {n:,} generated cards: peak RSS (MiB), {label} start",
            run.peak_rss / 2**20, "reported")
        row(f"app at {n:,} generated cards: ranking ready (s), {label}",
            run.events.get("ranking-ready", (float("nan"),))[0])


def convert(name: str, man_dir: Path, work: Path, every: int) -> tuple[Path, int]:
    root = work / (name if every == 1 else f"{name}-every{every}")
    stamp = root / ".hmd" / "converted"
    if not stamp.exists():
        if root.exists():
            shutil.rmtree(root)
        tally = write_vault(root, man_dir, CORPORA[name], every)
        stamp.write_text(str(tally.written))
    return root, int(stamp.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="about N man1 pages (every k-th)")
    parser.add_argument("--work", default=None, help="where vaults, indexes and caches are kept")
    parser.add_argument("--man-dir", type=Path, default=DEFAULT_MAN_DIR)
    parser.add_argument("--ratio-sample", type=int, default=2000, help="pages for the ratio")
    parser.add_argument("--ratio-repeats", type=int, default=3)
    parser.add_argument("--steps", default=",".join(DEFAULT_STEPS),
                        help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--name", default=None,
                        help="report name (default realcorpus; realcorpus_<steps> for some steps)")
    parser.add_argument("--generated-cards", type=int, default=100_000)
    parser.add_argument("--app-runs", type=int, default=4, help="warm app starts")
    parser.add_argument("--keys", type=int, default=24, help="typed queries")
    args = parser.parse_args()
    steps = [x.strip() for x in args.steps.split(",") if x.strip()]
    if set(steps) - set(STEPS):
        parser.error(f"unknown steps {sorted(set(steps) - set(STEPS))}; accepted: {STEPS}")
    if steps == ["generated"]:
        work = Path(args.work or Path(tempfile.gettempdir()) / "hql-bench-realcorpus")
        table = Rows()
        before = loadavg()
        generated(args.generated_cards, work, table.add)
        md = write_report(
            "app_generated", f"The app's peak RSS at {args.generated_cards:,} generated cards",
            ["measure", "value", "budget", "verdict"], table.rows,
            ["the app on a 120×36 pseudo-terminal until the ranking-ready marker, then ctrl+q; "
             "peak RSS = the process's ru_maxrss; vault and random-unit-vector index from "
             "benchmarks.generate (bench_app's)",
             f"load average (1 / 5 / 15 min) {before} at the start, {loadavg()} at the end"])
        print(md.read_text())
        return
    if not page_files(args.man_dir, "1"):
        raise SystemExit(f"{args.man_dir}: no man1 pages (*.gz): nothing to measure")
    work = Path(args.work or Path(tempfile.gettempdir()) / "hql-bench-realcorpus")
    work.mkdir(parents=True, exist_ok=True)
    load_before = loadavg()
    started = time.time()
    pages = sum(1 for p in page_files(args.man_dir, "1") if not p.is_symlink())
    every = max(1, math.ceil(pages / args.sample)) if args.sample else 1
    table = Rows()
    row = table.add
    notes: list[str] = []

    root, cards = convert("man1", args.man_dir, work, every)
    second, second_cards = convert("man23", args.man_dir, work, 1)
    row("man1 cards (pages, symlinks and .so skipped)", cards,
        "—" if every == 1 else f"every {every}th page")
    load_cache = Path(tempfile.mkdtemp(prefix="hql-real-load-", dir=work))
    row("vault load, cold (s)", timed_load(root, load_cache)[0])
    row("vault load, warm (s)", timed_load(root, load_cache)[0])
    shutil.rmtree(load_cache)

    cache = work / f"cache-{root.name}"
    cache.mkdir(exist_ok=True)
    for name, vault, where in (("man1", root, cache), ("man23", second, work / "cache-man23")):
        wrong = check_titles(vault, recorded_titles(name), where)
        if wrong:
            raise SystemExit(f"{name}: the converter's titles differ from the recorded ones "
                             f"for {', '.join(wrong[:5])}; the query sets need a new file")
    texts1 = [q["text"] for q in frozen("man1")[1]]
    texts23 = [q["text"] for q in frozen("man23")[1]]

    typed_texts = [t for t in texts1 if len(t) > 1][: args.keys]
    prefixes = sorted({t[:i] for t in typed_texts for i in range(1, len(t))} - set(texts1))
    if "build" in steps:
        full_build(root, texts1 + prefixes, cache, row, notes)
    elif {"cli", "latency", "app", "eval"} & set(steps):  # these need a current index:
        build(root, texts1 + prefixes, cache, full=False)  # keep an earlier one, or build it
    if "cli" in steps:
        commands(root, texts1[0], cache, row, notes)
    if "latency" in steps:
        for arm, ms in arm_latency(root, texts1, cache).items():
            row(f"query latency, {arm} (ms, median)", ms)
    if "app" in steps:
        app(root, typed_texts, len(prefixes), cache, work, args.app_runs, row, notes)
    if "generated" in steps:
        generated(args.generated_cards, work, row)
    evals = {}
    if "eval" in steps:
        built23 = build(second, texts23, work / "cache-man23", full=False)  # keeps a current one
        done = "up to date" if built23["final"].get("up_to_date") else "built"
        notes.append(f"man2+man3 vault: {second_cards} cards, {done} in "
                     f"{built23['seconds']:.0f} s (incremental), peak RSS "
                     f"{built23['rss'] / 2**20:.0f} MiB")
        evals = {"man1": evaluate(root, "man1", work, cache),
                 "man23": evaluate(second, "man23", work, work / "cache-man23")}
    if "ratio" in steps:
        ratio(root, cache, args.ratio_sample, args.ratio_repeats, row, notes)
    write_all(args.name or default_name(every, steps), every, table, notes, evals,
              load_before, started)


def default_name(every: int, steps: list[str]) -> str:
    """``realcorpus`` (or ``realcorpus_sample``) for the whole run; a run of some steps
    gets them in its name, so it never overwrites the whole run's report."""
    name = "realcorpus" if every == 1 else "realcorpus_sample"
    return name if set(steps) >= set(DEFAULT_STEPS) else "_".join([name, *steps])


def full_build(root: Path, queries: list[str], cache: Path, row: Callable[..., None],
               notes: list[str]) -> None:
    built = build(root, queries, cache)
    final = built["final"]
    row("full build (s), whole process", built["seconds"])
    row("full build, cards/s (whole process)", final["cards"] / built["seconds"])
    row("full build, peak RSS (MiB)", built["rss"] / 2**20, "≤ 1536 MiB",
        verdict(built["rss"], BUDGETS["build_rss"]))
    notes.append(f"full build (--full --offline): {final['embedded']} cards and "
                 f"{final['queries_embedded']} queries embedded; the producer's start event "
                 f"(vault read, before embedding) came {built['start']['at']:.1f} s after spawn; "
                 "peak RSS is the build process's ru_maxrss")
    cold, warm = rebuild_times(root, 3)
    row("unchanged rebuild, cold (s)", cold)
    row("unchanged rebuild, warm (s)", warm, "≤ 3 s", verdict(warm, BUDGETS["rebuild_warm"]))


def commands(root: Path, text: str, cache: Path, row: Callable[..., None],
             notes: list[str]) -> None:
    """``--list`` and ``query --mode all`` as a user runs them (warm parse and term caches:
    one uncounted ``query`` fills them first)."""
    cli(["hqltui.cli", "query", str(root), text, "--mode", "all", "--json"], cache)
    seconds, out = cli(["hqltui.cli", str(root), "--list"], cache)
    row("hql-tui VAULT --list (s), warm", seconds, "exit 0",
        "met" if out.returncode == 0 else f"MISSED (exit {out.returncode})")
    notes.append(f"--list printed {out.stdout.count(chr(10))} lines; stderr "
                 f"{len(out.stderr.splitlines())} lines")
    seconds, out = cli(["hqltui.cli", "query", str(root), text, "--mode", "all", "--json"], cache)
    answered = []
    if out.stdout.strip():
        answered = [a for a, r in json.loads(out.stdout)["arms"].items() if r["refusal"] is None]
    row("hql-tui query VAULT TEXT --mode all (s), warm", seconds, "4 arms answer",
        "met" if out.returncode == 0 and len(answered) == 4 else
        f"MISSED (exit {out.returncode}, answered {answered})")


def app(root: Path, typed_texts: list[str], prefixes: int, cache: Path, work: Path,
        app_runs: int, row: Callable[..., None], notes: list[str]) -> None:
    """The app on a pseudo-terminal: start-up markers, typed queries, peak RSS."""
    fresh = Path(tempfile.mkdtemp(prefix="hql-app-cold-", dir=work))
    cold_run = run_on_pty(root, fresh, timeout=600)  # an empty parse cache
    row("app: process start → first paint (s, cold)", cold_run.events["first-paint"][0])
    for event, label in (("cards-shown", "card list shown"), ("ranking-ready", "ranking ready")):
        row(f"app: process start → {label} (s, cold)",
            cold_run.events.get(event, (float("nan"),))[0])
    shutil.rmtree(fresh)
    run_on_pty(root, cache)  # not counted: fills the parse and term caches if still empty
    runs = [run_on_pty(root, cache) for _ in range(max(1, app_runs))]  # warm caches
    paint = median([r.events["first-paint"][0] for r in runs])
    shown = median([r.events["cards-shown"][0] for r in runs])
    ready = median([r.events["ranking-ready"][0] for r in runs])
    row("app: process start → first paint (s, warm)", paint, "≤ 1 s",
        verdict(paint, BUDGETS["paint"]))
    row("app: process start → card list shown (s, warm)", shown, "≤ 4 s",
        verdict(shown, BUDGETS["cards_shown"]))
    row("app: process start → ranking ready (s, warm)", ready, "≤ 8 s",
        verdict(ready, BUDGETS["ranking_ready"]))
    floor = median([bare_textual_paint() for _ in range(max(1, app_runs))])
    row("a bare Textual app (one Input, one Static): process start → first paint (s)", floor,
        "reported")
    typed = run_on_pty(root, cache, typed_texts)
    key_ms = median(typed.keys_ms)
    row("app: keystroke → three columns (ms, median)", key_ms, "≤ 150 ms",
        verdict(key_ms, BUDGETS["key_ms"]))
    app_rss = max([typed.peak_rss, cold_run.peak_rss] + [r.peak_rss for r in runs])
    row("app: peak RSS (MiB), start + typed queries", app_rss / 2**20, "≤ 1024 MiB",
        verdict(app_rss, BUDGETS["app_rss"]))
    torch = any(t for r in [cold_run, *runs, typed] for _, t in r.events.values())
    row("app: torch or transformers imported", "yes" if torch else "no", "no",
        "MISSED" if torch else "met")
    notes.append(
        "app markers (HQL_TUI_READY_FILE), each stamped at the refresh after what it names was "
        "drawn: first-paint = the main screen saying 'loading vault…' (before the vault is "
        "read); card list shown = cards-shown, the card list, header and warnings of the read "
        "vault (parse cache when warm; the header says 'index opening…' and the columns "
        "'ranking… opening the index'); ranking ready = ranking-ready, the index open and the "
        "configured lexical arm (bm25) built, its term counts from the term cache when warm, "
        "the columns inviting a query (hashbag's structures are not built until F2 asks)"
    )
    notes.append(
        "the bare Textual app is the floor of first paint on this machine at this load: an "
        "App with one Input and one Static, the same pseudo-terminal, stamped at its first "
        "refresh the same way (run between the app's starts)"
    )
    notes.append(
        f"app: median of {len(runs)} warm starts (parse cache, term-count cache and Python's "
        "bytecode cache filled by an uncounted start before them; the app's process may write "
        "bytecode even where PYTHONDONTWRITEBYTECODE is set, as an installed app has it); "
        "keystroke: "
        f"{len(typed.keys_ms)} frozen queries typed on the pseudo-terminal: all but the last "
        "key in one burst, its answer awaited, then the last key timed from its write to the "
        "first answer-painted marker naming the whole query (50 ms debounce included), "
        f"min {min(typed.keys_ms):.0f} ms, max {max(typed.keys_ms):.0f} ms; the queries and "
        f"their {prefixes} prefixes are stored in the index (built with --query), so the "
        "app loads no model"
    )


BARE_APP = """
import os, time
from textual.app import App
from textual.widgets import Input, Static

class Bare(App):
    def compose(self):
        yield Input()
        yield Static("loading vault…")

    def on_mount(self):
        self.call_after_refresh(self.painted)

    def painted(self):
        with open(os.environ["HQL_TUI_READY_FILE"], "a") as fh:
            fh.write(f"first-paint {time.time():.6f} torch=0\\n")

Bare().run()
"""


def bare_textual_paint(timeout: float = 60.0) -> float:
    """Seconds from spawn to the first refresh of a bare Textual app on the same terminal."""
    return run_on_pty(Path("."), Path(tempfile.gettempdir()), timeout=timeout,
                      command=[sys.executable, "-c", BARE_APP],
                      until=("first-paint",)).events["first-paint"][0]


def ratio(root: Path, cache: Path, size: int, repeats: int, row: Callable[..., None],
          notes: list[str]) -> None:
    """Ours against sentence-transformers on every k-th man1 card's text."""
    texts = [c.text for c in cards_of(root, cache)]
    step = max(1, len(texts) // size)
    sample = texts[::step][:size]
    rows, ratio_notes = throughput_of(sample, repeats)
    value = float(rows[-1][-1].split()[0])
    row(f"float32 build ÷ sentence-transformers ({len(sample)} man pages)", value, "≥ 1.0",
        "met" if value >= BUDGETS["ratio"] else "MISSED")
    notes.append(
        f"ratio: every {step}th man1 card; ours {rows[0][3]:.1f} cards/s, "
        f"sentence-transformers {rows[1][3]:.1f} cards/s (median of rounds); "
        + "; ".join(ratio_notes)
    )


def write_all(name: str, every: int, table: Rows, notes: list[str],
              evals: dict[str, dict[str, Any]], load_before: str, started: float) -> None:
    notes.append(
        f"load average (1 / 5 / 15 min) {load_before} at the start, {loadavg()} at the end: "
        "the 2 CPUs are shared with other work, so timings carry that load"
    )
    notes.append(f"total benchmark time {(time.time() - started) / 60:.1f} min")
    title = "Real corpus: the man1 pages"
    title += f" (sample: every {every}th page)" if every > 1 else ""
    md = write_report(name, title, ["measure", "value", "budget", "verdict"], table.rows, notes)
    print(md.read_text())
    write_evals(name, evals)


def write_evals(name: str, evals: dict[str, dict[str, Any]]) -> None:
    """One report per corpus: ``<name>_eval_<corpus>``."""
    for corpus, result in evals.items():
        label = {"man1": "man1", "man23": "man2 + man3"}[corpus]
        if not result["kept"]:
            print(f"{corpus}: no frozen query has all its pages in the sample")
            continue
        md = write_report(
            f"{name}_eval_{corpus}",
            f"eval on the {label} vault, frozen set benchmarks/queries/{corpus}.toml",
            ["queries", "arm", "n", "hit@1", "hit@5", "mrr@10", "ratio", "recall@10",
             "refused"],
            eval_rows(result),
            [f"{result['kept']} of {result['total']} frozen queries (those whose relevant pages "
             "are all in the vault); semantic query vectors stored by the build (--query)",
             f"eval took {result['seconds']:.1f} s (whole process); exit {result['exit']}"],
        )
        print(md.read_text())


if __name__ == "__main__":
    main()
