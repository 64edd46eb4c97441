"""Engine client parts that need no server: settings refusals, SQL text, the retry rule,
the client-side fusion arithmetic, parity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hotdata.exceptions import ApiException

from hqltui.core.config import load_app_config
from hqltui.core.engine import sql
from hqltui.core.engine.errors import ConnectionLost, EngineFailure, engine_message
from hqltui.core.engine.events import JobProgress, Retrying, RowsUploaded, Step
from hqltui.core.engine.operations import parity
from hqltui.core.engine.retry import RetryPolicy, call, transport_retry
from hqltui.core.engine.search import client_fusion
from hqltui.core.engine.settings import EngineSettings, resolve
from hqltui.core.ranking import Hit, Ranking, Refusal, Retrieval

ENV = {"HOTDATA_API_KEY": "hd_secret_value", "HOTDATA_WORKSPACE": "ws_1"}


def _vault(tmp_path: Path, engine: str | None) -> Path:
    text = '[semantics]\nindex = ".hql/index.sqlite"\n'
    if engine is not None:
        text += "\n[engine]\n" + engine
    (tmp_path / "hql.toml").write_text(text)
    return tmp_path


# ---------------------------------------------------------------- settings


def test_no_engine_table_is_refused_naming_what_to_add(tmp_path):
    got = resolve(load_app_config(_vault(tmp_path, None)), ENV)
    assert isinstance(got, Refusal)
    assert "no [engine] table" in got.message and "[engine]" in got.fix


def test_literal_key_is_refused_naming_the_variable_and_never_echoed(tmp_path):
    key = "pretend" + "_123"  # not a credential: a value that must never echo
    root = _vault(tmp_path, f'provider = "hotdata"\ndatabase = "db_1"\napi_key = "{key}"\n')
    got = resolve(load_app_config(root), ENV)
    assert isinstance(got, Refusal)
    assert "api_key_env" in got.message and "HOTDATA_API_KEY" in got.message
    assert key not in got.message + got.fix


def test_a_key_written_as_the_variable_name_is_refused_and_not_echoed(tmp_path):
    root = _vault(tmp_path, 'database = "db_1"\napi_key_env = "hd-live-9f8e7d"\n')
    got = resolve(load_app_config(root), ENV)
    assert isinstance(got, Refusal)
    assert "hd-live-9f8e7d" not in got.message + got.fix


def test_key_variable_unset_is_refused(tmp_path):
    root = _vault(tmp_path, 'database = "db_1"\n')
    got = resolve(load_app_config(root), {"HOTDATA_WORKSPACE": "ws"})
    assert isinstance(got, Refusal) and "HOTDATA_API_KEY is not set" in got.message


def test_workspace_variable_unset_is_refused_never_guessed(tmp_path):
    root = _vault(tmp_path, 'database = "db_1"\nworkspace_env = "MY_WS"\n')
    got = resolve(load_app_config(root), {"HOTDATA_API_KEY": "k", "HOTDATA_WORKSPACE": "ws"})
    assert isinstance(got, Refusal)
    assert "MY_WS is not set" in got.message and "export MY_WS" in got.fix


def test_empty_variables_count_as_unset(tmp_path):
    root = _vault(tmp_path, 'database = "db_1"\n')
    got = resolve(load_app_config(root), {"HOTDATA_API_KEY": "  ", "HOTDATA_WORKSPACE": "ws"})
    assert isinstance(got, Refusal)


def test_missing_database_is_refused(tmp_path):
    got = resolve(load_app_config(_vault(tmp_path, 'provider = "hotdata"\n')), ENV)
    assert isinstance(got, Refusal) and "database" in got.message


def test_settings_resolve_host_and_never_show_the_key(tmp_path):
    root = _vault(tmp_path, 'database = "db_1"\ntable = "Cards"\n')
    got = resolve(load_app_config(root), {**ENV, "HOTDATA_API_URL": "http://127.0.0.1:9/v1/"})
    assert isinstance(got, EngineSettings)
    assert got.host == "http://127.0.0.1:9" and got.table == "cards"
    assert got.full_table == "public.cards"  # until the catalog is discovered or set
    assert got.with_catalog("f1").full_table == "f1.public.cards"
    assert "hd_secret_value" not in repr(got) + got.describe()
    explicit = _vault(tmp_path, 'database = "db_1"\nhost = "http://h:1"\n')
    assert resolve(load_app_config(explicit), {**ENV, "HOTDATA_API_URL": "http://x"}).host == "http://h:1"


# ---------------------------------------------------------------- SQL


def test_bm25_sql_passes_w_explicitly_ranks_and_ties_by_name():
    text = sql.bm25_sql("cards", "it's owls", 50)
    assert "bm25_search('default.public.cards', 'text', 'it''s owls', 50)" in text
    assert text.endswith("ORDER BY score DESC, name ASC LIMIT 50")


def test_vector_sql_is_the_index_served_shape():
    text = sql.vector_sql("cards", [0.5, -0.25], 7)
    assert "FROM default.public.cards ORDER BY _distance ASC, name ASC LIMIT 7" in text
    assert "cosine_distance(embedding, ARRAY[0.5, -0.25]) AS _distance" in text
    assert "SELECT name, cosine_distance" in text  # the vector column is not projected


def test_exact_vector_sql_ranks_every_row_then_cuts():
    text = sql.vector_exact_sql("cards", [1.0], 5)
    assert "ROW_NUMBER() OVER (ORDER BY _distance ASC, name ASC)" in text
    assert "WHERE arm_rank <= 5" in text and "LIMIT" not in text


def test_hybrid_sql_every_order_by_ends_with_name_and_windows_are_explicit():
    text = sql.hybrid_sql("cards", "owl", [1.0, 0.0], k=60, lexical_weight=1.0,
                          semantic_weight=0.5, window=50, limit=10)
    import re

    orders = re.findall(r"ORDER BY ([^)]*?)(?:\)| LIMIT)", text)
    assert len(orders) == 4 and all(o.strip().endswith("name ASC") for o in orders)
    assert "'owl', 50)" in text and "LIMIT 50)" in text and text.endswith("LIMIT 10")
    assert "1.0 / (60.0 + text_ranked.arm_rank)" in text
    assert "0.5 / (60.0 + near_ranked.arm_rank)" in text


def test_sql_refuses_non_finite_vectors_and_bad_windows():
    with pytest.raises(ValueError):
        sql.vector_literal([float("nan")])
    with pytest.raises(ValueError):
        sql.bm25_sql("cards", "x", 0)


# ---------------------------------------------------------------- retry rule


def _api_error(status: int, code: str | None, message: str | None = None,
               retry_after: str | None = None) -> ApiException:
    exc = ApiException(status=status, reason="Reason Phrase")
    exc.body = json.dumps({"error": {"code": code, "message": message or f"{code} body"}})
    exc.headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return exc


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def _failing(errors):
    calls = []

    def fn():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return "ok"

    return fn, calls


@pytest.mark.parametrize("status,code", [(409, "RESOURCE_LOCKED"), (429, "OVERLOADED")])
def test_locked_and_overloaded_are_retried_honouring_retry_after(status, code):
    clock = _Clock()
    events = []
    fn, calls = _failing([_api_error(status, code, retry_after="3"),
                          _api_error(status, code, retry_after="0.5")])
    assert call("load", fn, policy=RetryPolicy(), sleep=clock.sleep, clock=clock,
                on_event=events.append) == "ok"
    assert clock.sleeps == [3.0, 0.5] and len(calls) == 3
    assert [type(e) for e in events] == [Retrying, Retrying] and events[0].code == code


def test_retries_are_bounded_by_attempts_and_by_the_deadline():
    clock = _Clock()
    fn, calls = _failing([_api_error(429, "OVERLOADED", retry_after="1") for _ in range(10)])
    with pytest.raises(EngineFailure, match="after 3 attempts"):
        call("q", fn, policy=RetryPolicy(max_attempts=3), sleep=clock.sleep, clock=clock)
    assert len(calls) == 3
    clock = _Clock()
    fn, calls = _failing([_api_error(409, "RESOURCE_LOCKED", retry_after="50")] * 5)
    with pytest.raises(EngineFailure, match="retry budget"):
        call("q", fn, policy=RetryPolicy(deadline=60), sleep=clock.sleep, clock=clock)
    assert clock.sleeps == [50.0]


def test_a_set_cancel_ends_a_retry_after_wait_at_once():
    import threading
    import time

    from hqltui.core.engine.errors import EngineCancelled

    cancel = threading.Event()
    fn, calls = _failing([_api_error(429, "OVERLOADED", retry_after="60")])
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(EngineCancelled):
        call("q", fn, policy=RetryPolicy(), cancel=cancel)
    assert time.monotonic() - started < 5 and len(calls) == 1
    timer.cancel()


def test_a_409_that_is_not_resource_locked_is_not_retried():
    fn, calls = _failing([_api_error(409, "CONFLICT", "table already exists")])
    with pytest.raises(EngineFailure, match="table already exists"):
        call("x", fn, policy=RetryPolicy(), sleep=lambda s: None)
    assert len(calls) == 1


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_other_errors_fail_at_once_with_the_engines_own_message(status):
    fn, calls = _failing([_api_error(status, "X", "Invalid function 'to_tsvector'")])
    with pytest.raises(EngineFailure) as info:
        call("query", fn, policy=RetryPolicy(), sleep=lambda s: None)
    assert "Invalid function 'to_tsvector'" in str(info.value)
    assert "Reason Phrase" not in str(info.value) and len(calls) == 1


def test_a_bodyless_error_says_so_instead_of_a_bare_reason():
    exc = ApiException(status=400, reason="Bad Request")
    assert "sent no error message" in engine_message(exc)


def test_dropped_connection_is_never_resent_for_a_write_but_is_for_a_read():
    from urllib3.exceptions import ProtocolError

    def dropped():
        return ProtocolError("Connection aborted.", ConnectionResetError("reset"))

    fn, calls = _failing([dropped()])
    with pytest.raises(ConnectionLost):
        call("create index", fn, policy=RetryPolicy(), sleep=lambda s: None)
    assert len(calls) == 1
    fn, calls = _failing([dropped()])
    assert call("read", fn, policy=RetryPolicy(), sleep=lambda s: None, idempotent=True) == "ok"
    assert len(calls) == 2


def test_the_sdk_transport_retry_is_off():
    r = transport_retry()
    assert r.total == 0 and r.connect == 0 and r.read == 0 and r.status == 0


# ---------------------------------------------------------------- fusion and parity


def _arm(arm: str, names: list[str]) -> Ranking:
    hits = tuple(Hit(n, 1.0 / (i + 1), i + 1) for i, n in enumerate(names))
    return Ranking(hits=hits, retrieval=Retrieval(arm, "q", "i", "m", "r", "x"),
                   total=len(hits))


def test_client_fusion_is_weighted_rrf_with_name_ties():
    lex = _arm("bm25", ["a", "b", "c"])
    sem = _arm("semantic", ["c", "d", "a"])
    fused = client_fusion(lex, sem, k=60, weights={"bm25": 1.0, "semantic": 2.0}, window=3,
                          limit=None)
    expect = {
        "a": 1 / 61 + 2 / 63, "b": 1 / 62, "c": 1 / 63 + 2 / 61, "d": 2 / 62,
    }
    assert [h.card for h in fused.hits] == sorted(expect, key=lambda n: (-expect[n], n))
    for h in fused.hits:
        assert h.score == pytest.approx(expect[h.card], abs=1e-15)
    assert fused.hit("b").arms["semantic"] is None
    assert fused.hit("a").arms["semantic"].rank == 3
    assert fused.hit("a").arms["bm25"].score == 1.0  # the arm's own score, carried over


def test_client_fusion_breaks_exact_ties_by_name():
    lex = _arm("bm25", ["z", "y"])
    sem = _arm("semantic", ["y", "z"])
    fused = client_fusion(lex, sem, k=60, weights={"bm25": 1.0, "semantic": 1.0}, window=2,
                          limit=None)
    assert [h.card for h in fused.hits] == ["y", "z"]


def test_parity_names_stale_missing_and_orphan():
    p = parity({"a": ("h1", "m", "r"), "b": ("h2", "m", "r"), "c": ("h3", "m", "r")},
               {"a": ("h1", "m", "r"), "b": ("old", "m", "r"), "x": ("h", "m", "r")})
    assert (p.stale, p.missing, p.orphan, p.same) == (("b",), ("c",), ("x",), 1)
    assert parity({"a": ("h", "m", "r2")}, {"a": ("h", "m", "r1")}).stale == ("a",)


def test_events_have_a_line_and_a_json_form():
    events = [Step("sync", "x"), RowsUploaded("sync", "insert", 2, 10, 2, 2),
              JobProgress("build", "bm25 index on text", "job_1", "create_index", "failed", 1,
                          2.5, error="boom"),
              Retrying("sync", "load", 409, "RESOURCE_LOCKED", 1, 1.0, "locked")]
    for e in events:
        assert e.describe() and json.dumps(e.to_json())
    assert "boom" in events[2].describe() and events[2].finished


def test_importing_the_engine_package_loads_neither_hotdata_nor_pyarrow():
    code = ("import sys, hqltui.core.engine, hqltui.commands.engine; "
            "print(any(m.split('.')[0] in ('hotdata', 'pyarrow', 'textual') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"
