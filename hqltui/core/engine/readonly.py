"""Verify a table this tool did not build (``[engine]`` names its columns): read-only.

Every check is listed as passed, failed or "not checkable on this table", with
what was seen or why it cannot be checked: the rows, the BM25 index on the text
column, the cosine vector index on the vector column, the model (declared in
``[engine]`` or stored in the model columns) against the local index's, a
sampled row's own vector ranking it first; row parity with the vault and the
BM25 probe need this tool's own columns and cards. A failed check is a problem.
"""

from __future__ import annotations

from typing import Any

from hqltui.core.engine import provenance, sql
from hqltui.core.engine.local import LocalCards
from hqltui.core.engine.operations import Check, Options, Problem, VerifyReport
from hqltui.core.engine.settings import EngineSettings

NOT = "not checkable on this table"


def _rows(c: Any, statement: str, what: str) -> list[list[Any]]:
    return c.query(statement, what)[1]


def verify_read_only(local: LocalCards, settings: EngineSettings, options: Options, *,
                     window: int | None = None) -> VerifyReport:
    report = VerifyReport(table=settings.full_table)
    w = window or local.config.search.window
    checks = report.checks

    def check(name: str, outcome: str, detail: str, kind: str = "check") -> None:
        checks.append(Check(name, outcome, detail))
        if outcome == "failed":
            report.problems.append(Problem(kind, f"{name}: {detail}"))

    with options.client(settings, "verify") as c:
        c.step("reading the table")
        if not c.table_has_data():
            check("rows", "failed", f"{settings.full_table} has no rows on the engine",
                  "no-rows")
            return report
        t = c.table
        report.table = t.name
        [(count,)] = _rows(c, sql.count_sql(t), "count the rows")
        check("rows", "passed", f"{count} rows")
        c.step("reading the table's indexes")
        report.indexes = c.list_indexes()
        bm25, refusal = provenance.bm25_index(report.indexes, t.name, t.text)
        if bm25 is not None:
            check("bm25 index", "passed", bm25.describe() + ", ready")
        else:
            check("bm25 index", "failed", refusal.message if refusal else "none", "index-missing")
        vector, warning = provenance.vector_index(report.indexes, t.name, t.vector)
        if vector is not None:
            check("vector index", "passed", vector.describe() + ", ready")
        else:
            check("vector index", "failed", warning.message if warning else "none",
                  "index-missing")
        ix = local.index
        if ix is None:
            check("model", NOT, "the local index cannot be read, so there is no query model "
                  "to compare")
        else:
            groups, source = provenance.table_models(c)
            refused = provenance.model_refusal(groups, ix.model, ix.revision)
            if refused is None:
                check("model", "passed", f"{source}: model {ix.model} revision {ix.revision}, "
                      "the local index's")
            else:
                check("model", "failed", refused.message, "engine-stale")
        check("row parity", NOT, "it needs the columns sync writes (content_hash, model, "
              "revision, the card names as keys); this table was not written by this tool")
        if vector is None:
            check("vector probe", NOT, "no ready vector index to probe")
        else:
            rows = _rows(c, sql.sample_vector_sql(t), "sample a row's vector")
            name, own = str(rows[0][0]), [float(x) for x in rows[0][1]]
            got = _rows(c, sql.vector_sql(t, own, w), "vector probe")
            first = str(got[0][0]) if got else None
            report.probes.append({"probe": "vector", "card": name, "first": first,
                                  "ok": first == name})
            check("vector probe", "passed" if first == name else "failed",
                  f"row `{name}`'s own vector ranks `{first}` first", "probe")
        check("bm25 probe", NOT, "a word only one row holds is found in the vault's cards, "
              "and this table's rows are not them")
    return report
