"""Index jobs run the real producer as a subprocess and report what it did."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from hqltui.core.config import load_app_config
from hqltui.core.configure import configure_default_index
from hqltui.core.jobs import JobBoard, index_build_job, index_verify_job
from producer.config import ConfigError
from tests.helpers.vaults import copy_vault

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A copy of fixtures/mini with an index built by a job (one model load)."""
    root = tmp_path_factory.mktemp("jobs") / "mini"
    copy_vault("mini", root)
    out = root / ".hql" / "index.sqlite"
    events = []
    final = index_build_job(root, out, "--offline", cwd=str(REPO)).run(events.append)
    assert final.state == "succeeded", (final.message, final.log)
    return root, out, events


def test_a_build_job_reports_counts_and_its_result(built):
    root, out, events = built
    assert out.is_file()
    assert events[0].state == "running"
    final = events[-1]
    assert final.result["embedded"] == 10 and final.result["reused"] == 0
    assert (final.done, final.total) == (10, 10)
    assert final.message.startswith("built: 10 embedded, 0 reused")
    progress = [e for e in events if e.total == 10 and e.state == "running"]
    assert progress and all(e.done <= e.total for e in progress)


def test_an_unchanged_vault_is_up_to_date(built):
    root, out, _ = built
    before = out.read_bytes()
    final = index_build_job(root, out, "--offline", cwd=str(REPO)).run(lambda e: None)
    assert final.state == "succeeded"
    assert final.message.startswith("up to date")
    assert out.read_bytes() == before


def test_a_verify_job_is_clean_then_lists_a_stale_card(built, tmp_path):
    root, out, _ = built
    final = index_verify_job(root, out, cwd=str(REPO)).run(lambda e: None)
    assert (final.state, final.message) == ("succeeded", "clean: 10 cards")
    copy = tmp_path / "mini"
    shutil.copytree(root, copy)
    card = copy / "merge-key.hmd"
    card.write_text(card.read_text() + "One more line.\n")
    final = index_verify_job(copy, copy / ".hql" / "index.sqlite", cwd=str(REPO)).run(
        lambda e: None
    )
    assert final.state == "failed" and final.message == "1 problem"
    assert any("merge-key" in line and "stale" in line for line in final.log)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_cancelled_build_leaves_the_index_byte_identical(built, tmp_path, sigint):
    """Also when the app was started with SIGINT ignored (a background job): the
    producer takes SIGINT back, so a cancel is its own clean stop, not the SIGKILL."""
    import signal

    if sigint == "ignored":
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the child
    try:
        _cancel_a_paused_build(built, tmp_path)
    finally:
        if sigint == "ignored":
            signal.signal(signal.SIGINT, previous)


def _cancel_a_paused_build(built, tmp_path):
    root, out, _ = built
    copy = tmp_path / "mini"
    shutil.copytree(root, copy)
    index = copy / ".hql" / "index.sqlite"
    before = index.read_bytes()
    card = copy / "merge-key.hmd"
    card.write_text(card.read_text() + "Edited so the build has work.\n")
    marker = tmp_path / "paused"
    env = {**__import__("os").environ, "HQL_SEMANTICS_TEST_PAUSE": f"embedding:{marker}"}
    job = index_build_job(copy, index, "--offline", cwd=str(REPO), env=env)
    events = []
    thread = threading.Thread(target=lambda: job.run(events.append))
    thread.start()
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the build never reached the embedding step"
    job.cancel()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert events[-1].state == "cancelled"
    assert any("interrupted" in line for line in events[-1].log), events[-1].log
    assert index.read_bytes() == before
    left = sorted(p.name for p in index.parent.iterdir() if not p.name.endswith(".lock"))
    assert left == ["index.sqlite"], "a temporary file or journal was left behind"


def test_a_failing_build_reports_the_producers_message(tmp_path):
    final = index_build_job(tmp_path / "missing", tmp_path / "x.sqlite", cwd=str(REPO)).run(
        lambda e: None
    )
    assert final.state == "failed"
    assert "missing" in final.message and "Traceback" not in " ".join(final.log)


def test_one_job_of_a_kind_at_a_time(tmp_path):
    board = JobBoard()
    first = index_build_job(tmp_path, tmp_path / "i.sqlite")
    second = index_build_job(tmp_path, tmp_path / "i.sqlite")
    assert board.claim(first) is None
    assert board.claim(second) == "index: build is already running"
    assert board.claim(index_verify_job(tmp_path, tmp_path / "i.sqlite")) is None
    board.release(first)
    assert board.claim(second) is None


def test_configure_default_index_keeps_the_rest_of_the_file(tmp_path):
    original = '# my vault\n[search]\nlimit = 7  # short lists\n\n[report]\nmode = "collect"\n'
    (tmp_path / "hql.toml").write_text(original)
    configure_default_index(tmp_path)
    text = (tmp_path / "hql.toml").read_text()
    assert text.startswith(original)
    assert '[semantics]\nindex = ".hql/index.sqlite"' in text
    config = load_app_config(tmp_path)
    assert config.index == ".hql/index.sqlite" and config.search.limit == 7


def test_configure_default_index_into_an_existing_semantics_table(tmp_path):
    (tmp_path / "hql.toml").write_text('[semantics.embedder]\nprovider = "local"\n')
    configure_default_index(tmp_path)
    config = load_app_config(tmp_path)
    assert config.errors == {} and config.index == ".hql/index.sqlite"
    with pytest.raises(ConfigError, match="already names an index"):
        configure_default_index(tmp_path)


def test_configure_default_index_creates_the_file(tmp_path):
    configure_default_index(tmp_path)
    assert load_app_config(tmp_path).index == ".hql/index.sqlite"
