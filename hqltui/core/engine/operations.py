"""sync, build and verify: rows and indexes on the engine kept in step with the vault.

* ``sync`` refuses unless every vault card has a fresh vector in the local
  index; then it reads the engine's rows (name, content_hash, model, revision),
  and when any differ it first drops the table's search indexes (so no index
  silently covers an older set of rows) and writes only what changed: a first
  upload is one ``replace``; afterwards cards gone from the vault are removed
  with a ``delete`` load, changed cards rewritten with an ``upsert`` holding
  only existing names, new cards added with an ``upsert`` holding only new
  names -- never one load that rewrites and adds (the engine can then fail the
  next vector index build). It re-reads the rows until they match; a dropped
  connection is recovered by re-reading, never by resending.
* ``build`` creates a BM25 index on ``text`` and a cosine vector index on
  ``embedding``, polling each job; an index of the right type, columns and
  metric that is ready is "up to date"; a wrong one is dropped and replaced.
* ``verify`` lists every problem: missing, pending or unexpected indexes;
  engine-side stale / missing / orphan rows; failed probes.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hqltui.core.engine import sql
from hqltui.core.engine.client import EngineClient, IndexInfo
from hqltui.core.engine.errors import EngineFailure, EngineRefused
from hqltui.core.engine.events import EventSink, RowsUploaded, ignore
from hqltui.core.engine.local import ROW_COLUMNS, LocalCards, names_table, parquet_bytes
from hqltui.core.engine.provenance import forget_models
from hqltui.core.engine.retry import RetryPolicy
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.lexical import tokens
from hqltui.core.ranking import Refusal

MAX_ROUNDS = 4
SEARCH_TYPES = ("bm25", "vector")


@dataclass(frozen=True)
class IndexSpec:
    index_type: str
    columns: tuple[str, ...]
    metric: str | None
    suffix: str
    label: str

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str | None]:
        return (self.index_type, self.columns, self.metric)

    def name(self, table: str) -> str:
        return f"{table}_{self.suffix}"


EXPECTED = (
    IndexSpec("bm25", (sql.TEXT_COLUMN,), None, "text_bm25", "bm25 index on text"),
    IndexSpec("vector", (sql.VECTOR_COLUMN,), "cosine", "embedding_vector",
              "vector index (cosine) on embedding"),
)


@dataclass
class Options:
    """How an operation talks to the engine; every field has a production default."""

    on_event: EventSink = ignore
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], None] | None = None  # None: time.sleep, or cancel.wait with a cancel
    clock: Callable[[], float] = time.monotonic
    poll_interval: float = 1.0
    job_timeout: float = 1800.0
    request_timeout: float = 120.0  # seconds one request may wait for its reply
    cancel: threading.Event | None = None

    def client(self, settings: EngineSettings, operation: str) -> EngineClient:
        return EngineClient(
            settings, operation=operation, on_event=self.on_event, policy=self.policy,
            sleep=self.sleep, clock=self.clock, poll_interval=self.poll_interval,
            job_timeout=self.job_timeout, cancel=self.cancel,
            request_timeout=self.request_timeout,
        )


# ---------------------------------------------------------------------- parity


@dataclass(frozen=True)
class Parity:
    stale: tuple[str, ...]  # on the engine with another content_hash, model or revision
    missing: tuple[str, ...]  # in the vault, not on the engine
    orphan: tuple[str, ...]  # on the engine, not in the vault
    same: int

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.orphan)

    def to_json(self) -> dict[str, Any]:
        return {"stale": list(self.stale), "missing": list(self.missing),
                "orphan": list(self.orphan), "in_step": self.same}


def parity(expected: dict[str, tuple[Any, ...]], engine: dict[str, tuple[Any, ...]]) -> Parity:
    stale = sorted(n for n, row in expected.items() if n in engine and engine[n] != row)
    missing = sorted(n for n in expected if n not in engine)
    orphan = sorted(n for n in engine if n not in expected)
    return Parity(tuple(stale), tuple(missing), tuple(orphan),
                  len(expected) - len(stale) - len(missing))


def engine_rows(c: EngineClient) -> dict[str, tuple[Any, ...]] | None:
    """name -> (content_hash, model, revision) on the engine; None when the table has no data."""
    if not c.table_has_data():
        return None
    columns, rows = c.query(sql.rows_sql(c.table), "read the engine's rows")
    at = {name: columns.index(name) for name in ("name", "content_hash", "model", "revision")}
    return {
        str(r[at["name"]]): (r[at["content_hash"]], r[at["model"]], r[at["revision"]])
        for r in rows
    }


def refuse_foreign(c: EngineClient, operation: str) -> None:
    """``sync`` and ``build`` write only tables this tool creates: refuse one whose columns
    it did not create (naming them), or one ``[engine]`` describes with other columns."""
    s = c.settings
    columns = c.table_columns()
    if columns is not None and set(columns) != set(ROW_COLUMNS):
        extra = [x for x in columns if x not in ROW_COLUMNS]
        lacks = [x for x in ROW_COLUMNS if x not in columns]
        what = f"columns this tool did not create: {', '.join(extra)}" if extra else ""
        if lacks:
            what += ("; " if what else "") + f"no {', '.join(lacks)}"
        raise EngineRefused(Refusal(
            f"{operation} refuses {s.full_table}: it has {what} (sync writes "
            f"{', '.join(ROW_COLUMNS)})",
            "search and verify use such a table read-only; give this vault a table of its "
            "own in [engine] table to sync it",
        ))
    if s.foreign:
        raise EngineRefused(Refusal(
            f"{operation} refuses {s.full_table}: [engine] describes a table with other "
            f"columns than sync writes ({'; '.join(s.foreign)})",
            "search and verify use such a table read-only; drop those settings, or give "
            "this vault a table of its own, to sync it",
        ))


# ---------------------------------------------------------------------- sync


@dataclass
class SyncReport:
    table: str
    cards: int
    added: int = 0
    rewritten: int = 0
    deleted: int = 0
    dropped_indexes: list[str] = field(default_factory=list)
    rounds: int = 0
    first_upload: bool = False

    @property
    def up_to_date(self) -> bool:
        return not (self.added or self.rewritten or self.deleted)

    def summary(self) -> str:
        if self.up_to_date:
            return f"up to date: {self.cards} rows in {self.table} match the vault"
        dropped = (f"; dropped {len(self.dropped_indexes)} search index(es), run build"
                   if self.dropped_indexes else "; run build")
        return (f"synced {self.table}: {self.added} added, {self.rewritten} rewritten, "
                f"{self.deleted} deleted{dropped}")

    def to_json(self) -> dict[str, Any]:
        return {"operation": "sync", "table": self.table, "cards": self.cards,
                "added": self.added, "rewritten": self.rewritten, "deleted": self.deleted,
                "dropped_indexes": self.dropped_indexes, "up_to_date": self.up_to_date,
                "first_upload": self.first_upload, "summary": self.summary()}


def _write(c: EngineClient, local: LocalCards, action: str, mode: str, names: list[str],
           done: int, total: int) -> int:
    table = names_table(names) if mode == "delete" else local.arrow_rows(names)
    data = parquet_bytes(table)
    upload_id = c.upload(data, f"{c.settings.table}-{action}.parquet")
    confirmed = c.load(mode, upload_id, f"{action} of {len(names)} row(s)")
    if confirmed:  # a lost reply is settled by the next read of the rows, not claimed here
        done += len(names)
        c.emit(RowsUploaded(c.operation, action, len(names), len(data), done, total))
    return done


def sync(local: LocalCards, settings: EngineSettings, options: Options | None = None
         ) -> SyncReport:
    options = options or Options()
    local.uploadable()  # refuse before anything is sent
    forget_models(settings)
    try:
        return _sync(local, settings, options)
    finally:
        forget_models(settings)  # the rows' models are read again by the next search


def _sync(local: LocalCards, settings: EngineSettings, options: Options) -> SyncReport:
    expected = local.expected_rows()
    report = SyncReport(table=settings.full_table, cards=len(expected))
    with options.client(settings, "sync") as c:
        refuse_foreign(c, "sync")
        dropped = False
        first: Parity | None = None
        for round_no in range(1, MAX_ROUNDS + 1):
            report.rounds = round_no
            c.step("reading the engine's rows")
            engine = engine_rows(c)
            p = parity(expected, engine or {})
            report.table = c.settings.full_table  # with its catalog, once the SQL needed it
            if (p.clean and engine is not None) or (not expected and engine is None):
                return report
            if first is None:  # what this sync changes; later rounds only finish the job
                first = p
                report.first_upload = not engine
                report.added, report.rewritten = len(p.missing), len(p.stale)
                report.deleted = len(p.orphan)
            if not dropped:
                for index in c.list_indexes():
                    if index.index_type in SEARCH_TYPES:
                        c.step(f"dropping {index.describe()} before the rows change")
                        c.delete_index(index.name)
                        report.dropped_indexes.append(index.name)
                dropped = True
            if not engine:
                names = sorted(expected)
                c.step(f"uploading {len(names)} rows")
                _write(c, local, "replace", "replace", names, 0, len(names))
                continue
            total = len(p.stale) + len(p.missing) + len(p.orphan)
            done = 0
            # Separate loads, in this order: never one load that rewrites and adds.
            if p.orphan:
                done = _write(c, local, "delete", "delete", list(p.orphan), done, total)
            if p.stale:
                done = _write(c, local, "rewrite", "upsert", list(p.stale), done, total)
            if p.missing:
                done = _write(c, local, "insert", "upsert", list(p.missing), done, total)
        raise EngineFailure(
            f"sync: the engine's rows still differ from the vault after {MAX_ROUNDS} rounds; "
            "nothing is reported as synced"
        )


# ---------------------------------------------------------------------- build


@dataclass
class IndexOutcome:
    spec: IndexSpec
    action: str  # "up to date" | "created" | "replaced"
    name: str
    replaced: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.spec.label, "type": self.spec.index_type,
                "columns": list(self.spec.columns), "metric": self.spec.metric,
                "name": self.name, "action": self.action, "replaced": self.replaced}


@dataclass
class BuildReport:
    table: str
    outcomes: list[IndexOutcome] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def up_to_date(self) -> bool:
        return all(o.action == "up to date" for o in self.outcomes) and not self.dropped

    def summary(self) -> str:
        if self.up_to_date:
            return f"up to date: {self.table} has a ready bm25 index and a ready vector index"
        parts = [f"{o.spec.label}: {o.action}" for o in self.outcomes]
        return f"built on {self.table}: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"operation": "build", "table": self.table, "up_to_date": self.up_to_date,
                "indexes": [o.to_json() for o in self.outcomes], "dropped": self.dropped,
                "summary": self.summary()}


def _wait_ready(c: EngineClient, index: IndexInfo, spec: IndexSpec) -> bool:
    """Wait on a matching index that is still pending (e.g. from an interrupted build)."""
    started = c.clock()
    while True:
        found = next((i for i in c.list_indexes() if i.name == index.name), None)
        if found is None:
            return False
        if found.status == "ready":
            return True
        if c.clock() - started > c.job_timeout:
            raise EngineFailure(f"{spec.label} `{index.name}` still pending after "
                                f"{c.job_timeout:g}s")
        c.pause(c.poll_interval)


def build(settings: EngineSettings, options: Options | None = None) -> BuildReport:
    options = options or Options()
    try:
        return _build(settings, options)
    finally:
        forget_models(settings)  # what search knows of the table is read again


def _build(settings: EngineSettings, options: Options) -> BuildReport:
    report = BuildReport(table=settings.full_table)
    with options.client(settings, "build") as c:
        refuse_foreign(c, "build")
        c.step("checking the engine table")
        if not c.table_has_data():
            raise EngineFailure(
                f"{settings.full_table} has no rows on the engine yet: run "
                "`hql-tui engine sync VAULT` first"
            )
        report.table = c.table.name  # the catalog, checked or discovered
        indexes = [i for i in c.list_indexes() if i.index_type in SEARCH_TYPES]
        broken = c.failed_builds(indexes)  # sorted indexes are not ours to judge
        wanted = {s.signature for s in EXPECTED}
        keep: dict[tuple[Any, ...], IndexInfo] = {}
        wrong: list[IndexInfo] = []
        for index in indexes:
            if index.name in broken:
                status, error = broken[index.name]
                c.step(f"{index.describe()}: its build job {status.replace('_', ' ')}"
                       f"{f' ({error})' if error else ''}; dropping it to build it again")
                wrong.append(index)
            elif index.signature in wanted and index.signature not in keep:
                keep[index.signature] = index
            else:
                wrong.append(index)
        for spec in EXPECTED:  # a right index that is still pending: wait for it
            pending = keep.get(spec.signature)
            if pending is not None and pending.status != "ready":
                c.step(f"{spec.label} `{pending.name}` is pending; waiting for it")
                if not _wait_ready(c, pending, spec):
                    del keep[spec.signature]
        for index in wrong:
            if index.name not in broken:
                c.step(f"dropping {index.describe()}: not the index this table needs")
            c.delete_index(index.name)
            report.dropped.append(index.name)
        for spec in EXPECTED:
            found = keep.get(spec.signature)
            if found is not None:
                c.step(f"{spec.label}: up to date (`{found.name}`, ready)")
                report.outcomes.append(IndexOutcome(spec, "up to date", found.name))
                continue
            name = spec.name(settings.table)
            replaced = [i.name for i in wrong if i.index_type == spec.index_type]
            c.step(f"creating {spec.label} `{name}`")
            c.create_index(name, spec.index_type, list(spec.columns), spec.metric, spec.label)
            report.outcomes.append(
                IndexOutcome(spec, "replaced" if replaced else "created", name, replaced))
        # A create reported as done is believed only when the listing agrees.
        final = c.list_indexes()
        for spec in EXPECTED:
            if not any(i.signature == spec.signature and i.status == "ready" for i in final):
                raise EngineFailure(f"build: {spec.label} is not listed as ready after its job "
                                    "finished; nothing is reported as built")
    return report


# ---------------------------------------------------------------------- verify


@dataclass(frozen=True)
class Problem:
    kind: str  # index-missing | index-failed | index-pending | index-unexpected | no-rows |
    # engine-stale | engine-missing | engine-orphan | local-index | probe
    message: str
    cards: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "cards": list(self.cards)}


CHECK_OUTCOMES = ("passed", "failed", "not checkable on this table")


@dataclass(frozen=True)
class Check:
    name: str
    outcome: str  # one of CHECK_OUTCOMES
    detail: str  # what was seen, or why it cannot be checked here

    def line(self) -> str:
        return f"{self.outcome}: {self.name} -- {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "outcome": self.outcome, "detail": self.detail}


@dataclass
class VerifyReport:
    table: str
    problems: list[Problem] = field(default_factory=list)
    indexes: list[IndexInfo] = field(default_factory=list)
    parity: Parity | None = None
    probes: list[dict[str, Any]] = field(default_factory=list)
    # A table this tool did not build: every check, passed, failed or not checkable.
    checks: list[Check] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        p = self.parity
        return {"stale": len(p.stale) if p else 0, "missing": len(p.missing) if p else 0,
                "orphan": len(p.orphan) if p else 0}

    def summary(self) -> str:
        if self.checks:
            tally = {o: sum(c.outcome == o for c in self.checks) for o in CHECK_OUTCOMES}
            return (f"{'clean' if self.clean else 'problems'}: {self.table} (read-only): "
                    + ", ".join(f"{n} {o}" for o, n in tally.items()))
        if self.clean:
            return (f"clean: {self.table} matches the vault row for row, both indexes are "
                    f"ready, {len(self.probes)} probes passed")
        return f"{len(self.problems)} problem(s) on {self.table}"

    def to_json(self) -> dict[str, Any]:
        return {"operation": "verify", "table": self.table, "clean": self.clean,
                "problems": [p.to_json() for p in self.problems],
                "indexes": [i.to_json() for i in self.indexes],
                "parity": None if self.parity is None else self.parity.to_json(),
                "counts": self.counts(), "probes": self.probes,
                "checks": [c.to_json() for c in self.checks], "summary": self.summary()}


_PLAIN = re.compile(r"^[a-z]{4,40}$")


def distinctive_word(local: LocalCards, candidates: list[str]) -> tuple[str, str] | None:
    """(card, word): a plain word that occurs in exactly one card's text, for the BM25 probe."""
    seen: dict[str, set[str]] = {}
    for card in local.vault.cards:
        for word in set(tokens(card.text)):
            seen.setdefault(word, set()).add(card.name)
    by_card = {c.name: c for c in local.vault.cards}
    for name in candidates:
        words = sorted(
            w for w in set(tokens(by_card[name].text))
            if _PLAIN.match(w) and seen.get(w) == {name}
        )
        if words:
            return name, words[0]
    return None


def verify(local: LocalCards, settings: EngineSettings, options: Options | None = None,
           *, window: int | None = None) -> VerifyReport:
    options = options or Options()
    if settings.foreign:
        from hqltui.core.engine.readonly import verify_read_only

        return verify_read_only(local, settings, options, window=window)
    report = VerifyReport(table=settings.full_table)
    w = window or local.config.search.window
    problems = report.problems
    if local.index is None and local.refusal is not None:
        problems.append(Problem("local-index", f"the local index cannot be read, so model and "
                                f"revision are not compared: {local.refusal.message}"))
    with options.client(settings, "verify") as c:
        c.step("reading the engine's rows")
        rows = engine_rows(c)
        expected = local.expected_rows()
        if not rows:  # None: never loaded; {}: loaded with no rows
            table = settings.full_table if rows is None else c.settings.full_table
            problems.append(Problem("no-rows", f"{table} has no rows on the engine" + (
                ": the vault has no cards, so there is nothing to index or search; add "
                "cards, then sync and build" if not expected else
                ": run `hql-tui engine sync VAULT`")))
            return report
        report.table = c.settings.full_table
        if local.index is None:  # compare what can be compared: the text
            expected = {n: (h, *rows.get(n, (None, None, None))[1:]) for n, (h, _, _) in
                        expected.items()}
        p = parity(expected, rows)
        report.parity = p
        if p.stale:
            problems.append(Problem("engine-stale", f"{len(p.stale)} card(s) differ on the "
                                    "engine (text, model or revision): run sync then build",
                                    p.stale))
        if p.missing:
            problems.append(Problem("engine-missing", f"{len(p.missing)} card(s) are not on the "
                                    "engine: run sync then build", p.missing))
        if p.orphan:
            problems.append(Problem("engine-orphan", f"{len(p.orphan)} engine row(s) name cards "
                                    "no longer in the vault: run sync then build", p.orphan))
        c.step("reading the table's indexes")
        report.indexes = c.list_indexes()
        broken = c.failed_builds([i for i in report.indexes if i.index_type in SEARCH_TYPES])
        ready = {}
        for spec in EXPECTED:
            found = [i for i in report.indexes if i.signature == spec.signature]
            failed = [i for i in found if i.name in broken]
            if not found:
                problems.append(Problem("index-missing", f"no {spec.label}: the search indexes "
                                        "are missing; run `hql-tui engine build VAULT`"))
            elif failed:
                status, error = broken[failed[0].name]
                problems.append(Problem("index-failed", f"{spec.label} `{failed[0].name}`: its "
                                        f"build job {status.replace('_', ' ')}"
                                        f"{f' ({error})' if error else ''}; run "
                                        "`hql-tui engine build VAULT` to build it again"))
            elif not any(i.status == "ready" for i in found):
                problems.append(Problem("index-pending", f"{spec.label} `{found[0].name}` is "
                                        "not ready yet"))
            else:
                ready[spec.index_type] = True
        wanted = {s.signature for s in EXPECTED}
        for index in report.indexes:
            if index.index_type in SEARCH_TYPES and index.signature not in wanted:
                problems.append(Problem("index-unexpected", f"{index.describe()} is not one "
                                        "this table needs: run build to replace it"))
        in_step = [n for n in sorted(expected) if n in rows and rows[n] == expected[n]]
        if not in_step or local.index is None:
            return report
        sample = in_step[len(in_step) // 2]
        if ready.get("vector"):
            c.step(f"probe: `{sample}`'s own vector")
            vector = local.index.matrix[local.names.index(sample)]
            _, got = c.query(sql.vector_sql(c.table, vector.tolist(), w), "vector probe")
            first = str(got[0][0]) if got else None
            ok = first == sample
            report.probes.append({"probe": "vector", "card": sample, "first": first, "ok": ok})
            if not ok:
                problems.append(Problem("probe", f"vector probe: `{sample}`'s own vector ranks "
                                        f"`{first}` first, not the card itself", (sample,)))
        if ready.get("bm25"):
            order = in_step[in_step.index(sample):] + in_step[: in_step.index(sample)]
            found_word = distinctive_word(local, order)
            if found_word is not None:
                card, word = found_word
                c.step(f"probe: the word `{word}`, found only in `{card}`")
                _, got = c.query(sql.bm25_sql(c.table, word, w), "bm25 probe")
                first = str(got[0][0]) if got else None
                ok = first == card
                report.probes.append({"probe": "bm25", "card": card, "word": word,
                                      "first": first, "ok": ok})
                if not ok:
                    problems.append(Problem("probe", f"bm25 probe: `{word}` occurs only in "
                                            f"`{card}` and ranks `{first}` first", (card,)))
    return report


def settings_or_refuse(local: LocalCards, env: dict[str, str] | None = None) -> EngineSettings:
    from hqltui.core.engine.errors import EngineRefused
    from hqltui.core.engine.settings import resolve

    resolved = resolve(local.config, env)
    if isinstance(resolved, EngineSettings):
        return resolved
    raise EngineRefused(resolved)

