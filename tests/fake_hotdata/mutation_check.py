"""Check that each rule's test fails when the rule is taken out of the fake or the client.

Run ``python -m tests.fake_hotdata.mutation_check [NAME-FILTER ...]`` from the repository root.
For each entry below it copies the packages, the tests and the fixtures to a scratch
directory, replaces one snippet (of the fake, or of the engine client) with a version that
no longer enforces the rule, runs the test written for that rule there, and reports whether
it failed (it should).  The scratch copy's packages are the ones imported (checked before
the first run).  It takes several minutes and is not part of the test suite.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
COPIED = ("tests", "hqltui", "producer", "benchmarks", "fixtures")
F = "tests/fake_hotdata/"
E = "hqltui/core/engine/"  # the engine client
P = "test_engine_provenance.py::"
T = "test_engine_tables.py::"

# (rule, file, snippet enforcing it, snippet without it, test ids that must fail)
MUTATIONS = [
    (
        "no index without data",
        F + "state.py",
        '        if t.data is None:\n            raise bad_request(\n                f"Managed table',
        '        if False:\n            raise bad_request(\n                f"Managed table',
        "test_fake_hotdata_rules.py::test_no_index_on_a_table_without_data",
    ),
    (
        "one vector index per table",
        F + "state.py",
        '            if any(i.index_type == "vector" for i in indexes.values()):',
        "            if False:",
        "test_fake_hotdata_rules.py::test_one_vector_index_per_table",
    ),
    (
        "provider-backed refused beside others",
        F + "state.py",
        "            if provider and indexes:",
        "            if False:",
        "test_fake_hotdata_rules.py::test_provider_backed_vector_index_refused_beside_another_index",
    ),
    (
        "provider-backed excludes later",
        F + "state.py",
        "        if any(i.provider_backed for i in indexes.values()):",
        "        if False:",
        "test_fake_hotdata_rules.py::test_provider_backed_vector_index_excludes_later_indexes",
    ),
    (
        "bm25 needs its index",
        F + "engine.py",
        '        if index is None:\n            raise EngineError(f"No BM25',
        "        if index is None and view.data is not None:\n"
        "            index = Bm25Index(view.data, column)\n"
        '        if index is None:\n            raise EngineError(f"No BM25',
        "test_fake_hotdata_rules.py::test_bm25_search_without_a_bm25_index_errors_with_the_engine_message",
    ),
    (
        "bm25 row order",
        F + "engine.py",
        "        hits.sort(key=lambda h: h[0])",
        "        pass",
        "test_fake_hotdata_rules.py::test_bm25_results_come_back_in_row_order_not_score_order",
    ),
    (
        "bm25 silent 1000 cap",
        F + "engine.py",
        "BM25_DEFAULT_K = 1000",
        "BM25_DEFAULT_K = 10**6",
        "test_fake_hotdata_rules.py::test_bm25_without_k_caps_silently_at_1000_rows",
    ),
    (
        "declared table rejects queries",
        F + "engine.py",
        "            if view is not None and view.data is None:",
        "            if False:",
        "test_fake_hotdata_rules.py::test_declared_table_without_data_rejects_queries",
    ),
    (
        "identifiers lowercased",
        F + "state.py",
        "    names = [n.lower() for n in table.column_names]",
        "    names = list(table.column_names)",
        "test_fake_hotdata_rules.py::test_identifiers_are_lowercased_when_stored",
    ),
    (
        "quoted mixed case bare 400",
        F + "state.py",
        '                raise ApiError(400, "BAD_REQUEST", "", bare=True) from exc',
        "                pass",
        "test_fake_hotdata_rules.py::test_identifiers_are_lowercased_when_stored",
    ),
    (
        "unscoped refused",
        F + "server.py",
        "    database_id = header_db or body_db\n",
        "    database_id = header_db or body_db or next(iter(s.databases), None)\n",
        "test_fake_hotdata_rules.py::test_unscoped_query_is_refused",
    ),
    (
        "mixed upsert fails vector build",
        F + "state.py",
        "                    mixed = rewritten and added",
        "                    mixed = False",
        "test_fake_hotdata_rules.py::test_vector_build_right_after_a_mixed_upsert_fails_on_the_job_record",
    ),
    (
        "mixed detection not over-eager",
        F + "state.py",
        "                    mixed = rewritten and added",
        "                    mixed = rewritten or added",
        "test_fake_hotdata_rules.py::test_a_pure_upsert_rewrite_and_a_pure_insert_are_not_mixed",
    ),
    (
        "concurrent load locked",
        F + "state.py",
        "        if t is not None and t.locked_by is not None:",
        "        if False:",
        "test_fake_hotdata_rules.py::test_load_while_another_load_runs_gets_resource_locked",
    ),
    (
        "index served only for three-part name",
        F + "engine.py",
        "        if len(shape.table_parts) == 3:\n            view = _resolve",
        "        if True:\n            view = _resolve",
        "test_fake_hotdata_rules.py::test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan",
    ),
    (
        "metric must match",
        F + "engine.py",
        "        if index.metric != shape.metric:",
        "        if False:",
        "test_fake_hotdata_rules.py::test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan",
    ),
    (
        "projected vector declines",
        F + "sqlshape.py",
        "                elif _column_ref(expr) == column:",
        "                elif False:",
        "test_fake_hotdata_rules.py::test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan",
    ),
    (
        "limit required",
        F + "sqlshape.py",
        '        elif "limit" not in clauses:\n            reason = "no LIMIT"',
        '        elif "limit" not in clauses:\n            clauses["limit"] = [Token("num", "1000", 0, 0, 0)]',
        "test_fake_hotdata_rules.py::test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan",
    ),
    (
        "descending declines",
        F + "sqlshape.py",
        "        if descending:\n            reason",
        "        if False:\n            reason",
        "test_fake_hotdata_rules.py::test_index_served_shape_and_the_shapes_that_fall_back_to_a_scan",
    ),
    (
        "vector index actually used",
        F + "engine.py",
        '    if trace.vector_lookups:\n        trace.served_by = "vector_index"',
        "    pass",
        "test_fake_hotdata_search.py::test_vector_arm_is_index_served_and_matches_numpy_cosine",
    ),
    (
        "jobs step one at a time",
        F + "state.py",
        "                if job.status not in TERMINAL:\n                    self.step_job(job)\n                    moved",
        "                if job.status not in TERMINAL:\n                    self.run_job(job)\n                    moved",
        "test_fake_hotdata_faults.py::test_jobs_step_pending_running_succeeded_under_test_control",
    ),
    (
        "attempts counted",
        F + "state.py",
        "            job.attempts += 1",
        "            pass",
        "test_fake_hotdata_faults.py::test_jobs_step_pending_running_succeeded_under_test_control",
    ),
    (
        "retry-after on injected faults",
        F + "server.py",
        '                headers["Retry-After"] = _retry_after_text(fault.retry_after)',
        "                pass",
        "test_fake_hotdata_faults.py::test_injected_409_carries_retry_after_and_the_sdk_load_retry_honours_it",
    ),
    (
        "429 injected",
        F + "server.py",
        "        if fault is not None and fault.status is not None:",
        "        if fault is not None and fault.status is not None and fault.status != 429:",
        "test_fake_hotdata_faults.py::test_injected_429_is_retried_by_the_sdk_query_client",
    ),
    (
        "500 message",
        F + "server.py",
        '            message = fault.message or f"injected',
        '            message = f"injected',
        "test_fake_hotdata_faults.py::test_injected_500_carries_its_message",
    ),
    (
        "drop after",
        F + "server.py",
        '        if fault is not None and fault.drop == "after":',
        "        if False:",
        "test_fake_hotdata_faults.py::test_dropped_connection_after_a_create_without_retries test_fake_hotdata_faults.py::test_dropped_connection_on_a_load test_fake_hotdata_faults.py::test_dropped_connection_after_a_create_with_sdk_default_retries_creates_twice",
    ),
    (
        "drop before",
        F + "server.py",
        '        if fault is not None and fault.drop == "before":\n            self._drop()\n            return',
        '        if fault is not None and fault.drop == "before":\n            self._handle(state, method, path, params, body)\n            self._drop()\n            return',
        "test_fake_hotdata_faults.py::test_dropped_connection_before_a_create_applies_nothing test_fake_hotdata_faults.py::test_dropped_connection_on_a_load",
    ),
    (
        "job failure fault",
        F + "state.py",
        '            if job.forced is not None and job.forced[0] == "failed":',
        "            if False:",
        "test_fake_hotdata_faults.py::test_injected_job_failure_carries_its_message",
    ),
    (
        "job partial fault",
        F + "state.py",
        '                if job.forced is not None and job.status == "succeeded":',
        "                if False:",
        "test_fake_hotdata_faults.py::test_injected_partial_success_on_a_load",
    ),
    (
        "auth checked",
        F + "server.py",
        '            if path.startswith("/v1/"):\n                self._check_auth(state, path)',
        "            pass",
        "test_fake_hotdata_protocol.py::test_wrong_api_key_is_401_with_an_error_body test_fake_hotdata_protocol.py::test_workspace_header_is_checked",
    ),
    (
        "bodies validated",
        F + "server.py",
        "            if model is not None:\n                request.model = _validate(model, body)",
        "            if model is not None:\n                request.model = json.loads(body or b'{}')",
        "test_fake_hotdata_protocol.py::test_request_bodies_are_validated_with_the_sdk_models",
    ),
    # ---- the engine client: provenance from evidence (each rule, its test)
    (
        "approximate only from a listed ready index",
        E + "search.py",
        "revision=side.revision, metric=\"cosine\", approximate=side.approximate,",
        "revision=side.revision, metric=\"cosine\", approximate=True,",
        P + "test_vector_search_before_build_is_a_full_scan_that_says_so_and_after_build_names_its_index",
    ),
    (
        "index metric must be the query's",
        E + "provenance.py",
        '    ready = [i for i in found if i.status == "ready" and i.metric == METRIC]',
        '    ready = [i for i in found if i.status == "ready"]',
        P + "test_a_vector_index_of_another_metric_does_not_make_the_arm_approximate",
    ),
    (
        "missing vector index warned",
        E + "provenance.py",
        "    return None, Warning(INDEX_WARNING, message)",
        "    return None, None",
        P + "test_vector_search_before_build_is_a_full_scan_that_says_so_and_after_build_names_its_index",
    ),
    (
        "hybrid approximate follows its vector arm",
        E + "search.py",
        "revision=hybrid.REVISION, metric=hybrid.METRICS[RRF], approximate=vec_r.approximate,",
        "revision=hybrid.REVISION, metric=hybrid.METRICS[RRF], approximate=True,",
        P + "test_vector_search_before_build_is_a_full_scan_that_says_so_and_after_build_names_its_index",
    ),
    (
        "serving index named",
        E + "search.py",
        '    out: dict[str, Any] = {"served_by": None if index is None else index.to_json(),',
        '    out: dict[str, Any] = {"served_by": None,',
        P + "test_vector_search_before_build_is_a_full_scan_that_says_so_and_after_build_names_its_index",
    ),
    (
        "bm25 refuses without its index",
        E + "search.py",
        "            if bm25_refusal is not None:\n                out[\"bm25\"]",
        "            if False:\n                out[\"bm25\"]",
        "test_engine.py::test_bm25_without_its_index_refuses_with_the_build_command_and_sends_no_bm25",
    ),
    (
        "model and revision from the rows",
        E + "search.py",
        "        model, revision = str(groups[0].model), str(groups[0].revision)",
        "        pass",
        P + "test_rows_under_another_model_refuse_the_vector_arm_naming_both",
    ),
    (
        "another model's rows refuse the vector arm",
        E + "provenance.py",
        "    others = [g for g in groups if (g.model, g.revision) != (model, revision)]",
        "    others = []",
        P + "test_rows_under_another_model_refuse_the_vector_arm_naming_both",
    ),
    (
        "rows' models cached",
        E + "provenance.py",
        "        if (key, what) in _cache:\n            return _cache[(key, what)]",
        "        if False:\n            return _cache[(key, what)]",
        P + "test_the_rows_model_is_the_retrievals_and_is_counted_once_until_the_next_sync",
    ),
    (
        "sync and build forget the cached models",
        E + "provenance.py",
        "            del _cache[(key, what)]",
        "            pass",
        P + "test_the_rows_model_is_the_retrievals_and_is_counted_once_until_the_next_sync",
    ),
    (
        "engine warning kept",
        E + "client.py",
        '            warning=getattr(response, "warning", None) or None,',
        "            warning=None,",
        P + "test_an_engine_warning_is_kept_and_shown",
    ),
    (
        "show-sql prints the statements",
        "hqltui/commands/engine.py",
        '    if show_sql and r is not None and r.engine and r.engine.get("sql"):',
        "    if False:",
        P + "test_show_sql_prints_each_statement_before_its_results_and_json_carries_them",
    ),
    # ---- the engine client: jobs that survive transient faults
    (
        "5xx on a job read retried",
        E + "retry.py",
        "    if transient and isinstance(status, int) and 500 <= status <= 599:",
        "    if False:",
        P + "test_a_503_on_one_job_read_is_retried_and_the_build_succeeds",
    ),
    (
        "5xx elsewhere not retried",
        E + "retry.py",
        "    if transient and isinstance(status, int) and 500 <= status <= 599:",
        "    if isinstance(status, int) and 500 <= status <= 599:",
        P + "test_a_5xx_on_a_create_is_still_not_retried",
    ),
    (
        "a failed build is rebuilt",
        E + "operations.py",
        "            if index.name in broken:\n                status, error = broken[index.name]",
        "            if False:\n                status, error = broken[index.name]",
        P + "test_a_partially_succeeded_index_is_rebuilt_by_the_next_build_never_up_to_date",
    ),
    (
        "verify names a failed build",
        E + "operations.py",
        "            elif failed:",
        "            elif False:",
        P + "test_a_partially_succeeded_index_is_rebuilt_by_the_next_build_never_up_to_date",
    ),
    (
        "job list read to its last page",
        E + "client.py",
        "            if len(jobs) < JOBS_PAGE:\n                return out",
        "            return out",
        P + "test_the_job_list_is_read_page_by_page",
    ),
    (
        "a found load job is ours only by its table",
        E + "client.py",
        "                if result is None or not owned(result):\n                    return None",
        "                if False:\n                    return None",
        P + "test_a_lost_load_reply_never_waits_on_another_tables_load",
    ),
    (
        "a found index job is ours only by its record",
        E + "client.py",
        "            if index_job_matches(job, request.index_name, request.index_type,\n"
        "                                 tuple(request.columns), created_at):",
        "            if True:",
        P + "test_a_lost_create_reply_never_adopts_another_tables_index_job",
    ),
    (
        "ctrl-c names the load job",
        "hqltui/commands/engine.py",
        '    "sync": ("interrupted; a load job may still run on the engine",',
        '    "sync": ("interrupted",',
        P + "test_ctrl_c_during_a_sync_says_a_load_job_may_still_run",
    ),
    # ---- issue: tables this tool did not build; the fake closer to the contract
    (
        "an upload serves one load",
        F + "state.py",
        '            if upload.status == "loaded":',
        "            if False:",
        "test_fake_hotdata_rules.py::test_an_upload_serves_one_load_and_a_second_use_is_a_409",
    ),
    (
        "append adds a missing column",
        F + "state.py",
        '        if extra and mode != "append":',
        "        if extra:",
        "test_fake_hotdata_rules.py::test_an_append_with_a_column_the_table_lacks_adds_it",
    ),
    (
        "bm25 on a declared empty table",
        F + "engine.py",
        "        if view.data is None:\n            raise EngineError(",
        "        if False:\n            raise EngineError(",
        "test_fake_hotdata_rules.py::test_bm25_search_on_a_declared_empty_table_says_it_has_no_data",
    ),
    (
        "the record does not settle the catalog",
        F + "state.py",
        '            "default_catalog": RECORDED_CATALOG,',
        '            "default_catalog": self.default_catalog,',
        "test_fake_hotdata_rules.py::test_the_database_record_does_not_settle_the_catalog",
    ),
    (
        "bm25 is sent the query's tokens",
        E + "search.py",
        '    return " ".join(tokens(text))',
        "    return text",
        T + "test_the_bm25_query_text_is_the_querys_tokens_never_raw_text",
    ),
    (
        "the catalog is discovered",
        E + "client.py",
        "        return choose_catalog(sorted({str(r[0]).lower() for r in rows}), s)",
        '        return s.catalog or "default"',
        T + "test_the_catalog_is_discovered_from_information_schema_not_the_database_record",
    ),
    (
        "a set catalog is checked",
        E + "client.py",
        "    if s.catalog is not None:\n        if s.catalog in found:",
        "    if s.catalog is not None:\n        if True:",
        T + "test_a_catalog_set_in_engine_is_checked_there",
    ),
    (
        "several catalogs refuse",
        E + "client.py",
        "    if len(found) > 1:",
        "    if False:",
        T + "test_several_catalogs_refuse_naming_them_and_a_set_one_chooses",
    ),
    (
        "the table's columns are the engine settings'",
        E + "client.py",
        '            self._table = sql.Table(self.settings.full_table, key=str(cols["key"]),',
        '            self._table = sql.Table(self.settings.full_table, key="name",',
        T + "test_a_hand_made_table_is_searched_with_its_own_columns_and_a_declared_model",
    ),
    (
        "a declared model is the table's",
        E + "provenance.py",
        "    if s.declared_model is not None:\n        return (ModelGroup(",
        "    if False:\n        return (ModelGroup(",
        T + "test_a_hand_made_table_is_searched_with_its_own_columns_and_a_declared_model",
    ),
    (
        "sync refuses columns it did not create",
        E + "operations.py",
        "    if columns is not None and set(columns) != set(ROW_COLUMNS):",
        "    if False:",
        T + "test_sync_and_build_refuse_a_table_this_tool_did_not_create_naming_its_columns",
    ),
    (
        "sync refuses settings for other columns",
        E + "operations.py",
        "    if s.foreign:\n        raise EngineRefused(",
        "    if False:\n        raise EngineRefused(",
        T + "test_sync_refuses_settings_for_other_columns_even_before_the_table_exists",
    ),
]


def _copy(work: Path) -> None:
    for name in COPIED:
        if (work / name).exists():
            shutil.rmtree(work / name)
        shutil.copytree(ROOT / name, work / name,
                        ignore=shutil.ignore_patterns("__pycache__", "results"))


def _imports_the_copy(work: Path) -> bool:
    """The scratch copy's packages, not the installed ones, are what a test imports there."""
    probe = subprocess.run(
        [sys.executable, "-c", "import hqltui, producer; print(hqltui.__file__, producer.__file__)"],
        cwd=work, capture_output=True, text=True, timeout=60,
    )
    return all(Path(p).resolve().is_relative_to(work.resolve()) for p in probe.stdout.split())


def main() -> int:
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        only = sys.argv[1:]  # name filters: any one matching is enough
        _copy(work)
        if not _imports_the_copy(work):
            print("the scratch copy's packages are not the ones imported; nothing checked")
            return 1
        # A control: unmutated, one test of each file passes in the scratch copy, so a
        # failure below is the mutation's, not the copy's.
        firsts: dict[str, str] = {}
        for _, _, _, _, tests in MUTATIONS:
            for t in tests.split():
                firsts.setdefault(t.split("::")[0], t)
        control = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             *("tests/" + t for t in firsts.values())],
            cwd=work, capture_output=True, text=True, timeout=900,
        )
        if control.returncode != 0:
            print("control run (no mutation) failed in the scratch copy; nothing checked")
            print(control.stdout[-2000:])
            return 1
        for name, path, old, new, tests in MUTATIONS:
            if only and not any(f in name for f in only):
                continue
            _copy(work)
            target = work / path
            text = target.read_text()
            if text.count(old) != 1:
                print(f"{name:45s} SNIPPET NOT FOUND EXACTLY ONCE")
                failures += 1
                continue
            target.write_text(text.replace(old, new))
            ids = ["tests/" + t for t in tests.split()]
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ids],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=600,
            )
            caught = proc.returncode == 1
            failures += not caught
            tail = proc.stdout.strip().splitlines()[-1:] or [""]
            print(f"{name:45s} {'caught' if caught else 'NOT CAUGHT'} ({tail[0]})", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
