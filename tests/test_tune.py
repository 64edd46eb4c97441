"""`tune`: cross-validated scoring of fusion configurations, its core API and `--write`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hqltui.cli import main
from hqltui.core.evaluation import LabelledQuery, read_queries
from hqltui.core.fusion import parse_fusion
from hqltui.core.session import Session
from hqltui.core.tune import TooFewQueries, fold_count, grid_configs, search_settings, tune

BIRDS = Path(__file__).resolve().parent.parent / "fixtures" / "birds"


@pytest.fixture(scope="module")
def session() -> Session:
    return Session.load(BIRDS)


@pytest.fixture(scope="module")
def queries() -> list[LabelledQuery]:
    return read_queries(BIRDS / "queries.toml")


def test_same_labels_same_table(session, queries) -> None:
    one = tune(session, queries, grid="small")
    two = tune(session, queries, grid="small")
    assert [(r.config, r.worst) for r in one.rows] == [(r.config, r.worst) for r in two.rows]
    assert one.folds == 4 and one.total == len(grid_configs("small", session.search.fusion_config()))
    worst = [r.worst for r in one.rows]
    assert worst == sorted(worst, reverse=True)


def test_a_kind_ratio_is_the_mean_of_its_fold_ratios(session, queries) -> None:
    rrf = parse_fusion("rrf:k=60")
    row = tune(session, queries, configs=[rrf], folds=2).rows[0]
    para = row.kinds["paraphrase"]
    # birds paraphrase: bm25 ranks no group card in its top 10, nor does rrf; semantic does.
    assert para.mrr == 0.0 and para.better == 1.0 and para.ratio == 0.0
    assert row.worst == 0.0 and para.queries == 4


def test_progress_events_and_cancel(session, queries) -> None:
    events: list[tuple[int, int]] = []
    result = tune(session, queries, grid="small", progress=lambda d, t: events.append((d, t)))
    assert events == [(i, result.total) for i in range(1, result.total + 1)]
    asked = iter([False, False, True])
    stopped = tune(session, queries, grid="small", cancelled=lambda: next(asked, True))
    assert stopped.cancelled and len(stopped.rows) == 2


def test_fewer_than_four_queries_of_a_kind_are_refused_by_name() -> None:
    qs = [LabelledQuery(f"q{i}", ("a",), "keyword") for i in range(5)]
    qs += [LabelledQuery(f"p{i}", ("a",), "paraphrase") for i in range(3)]
    with pytest.raises(TooFewQueries) as err:
        fold_count(qs, None)
    assert "`paraphrase` has 3" in str(err.value) and "at least 4 of each kind" in str(err.value)
    assert fold_count(qs[:5] + [LabelledQuery("p", ("a",), "paraphrase")] * 4, None) == 4
    with pytest.raises(TooFewQueries):
        fold_count(qs[:5], 9)


def test_search_settings_of_each_method() -> None:
    assert search_settings(parse_fusion("convex:alpha=0.7,norm=zscore")) == {
        "fusion": "convex", "alpha": 0.7, "norm": "zscore"}
    assert search_settings(parse_fusion("rrf:k=10"))["rrf_k"] == 10.0
    adaptive = search_settings(parse_fusion("adaptive:norm=max,alpha_prose=0.9"))
    assert adaptive["norm"] == "max" and adaptive["adaptive"]["alpha_prose"] == 0.9


COMMENTED = """# my vault's settings
[semantics]
index = ".hql/index.sqlite"  # built by hql-semantics

# search: tuned below
[search]
limit = 7  # seven is plenty

[extensions]
keep = "me"  # not ours
"""


def test_write_changes_only_search_and_keeps_comments(tmp_path: Path, capsys) -> None:
    vault = tmp_path / "birds"
    shutil.copytree(BIRDS, vault)
    (vault / "hql.toml").write_text(COMMENTED, encoding="utf-8")
    code = main(["tune", str(vault), str(vault / "queries.toml"), "--grid", "small", "--write"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "winner: " in out and "+fusion = " in out and "wrote [search]" in out
    after = (vault / "hql.toml").read_text(encoding="utf-8")
    before_lines, after_lines = COMMENTED.splitlines(), after.splitlines()
    assert after_lines[: before_lines.index("[search]") + 2] == \
        before_lines[: before_lines.index("[search]") + 2]
    assert '[extensions]\nkeep = "me"  # not ours' in after
    assert "limit = 7  # seven is plenty" in after
    session = Session.load(vault)
    winner = out.split("winner: ")[1].split(" (worst")[0]
    assert session.config.errors == {}
    assert session.search.fusion_config().label() == winner


def test_cli_refuses_too_few_queries_with_one_line(tmp_path: Path, capsys) -> None:
    queries = tmp_path / "q.toml"
    queries.write_text('[[query]]\ntext = "owl"\nkind = "keyword"\nrelevant = ["barn-owl"]\n',
                       encoding="utf-8")
    code = main(["tune", str(BIRDS), str(queries)])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "`keyword` has 1; tune needs at least 4 of each kind" in err


def test_cli_json(capsys) -> None:
    code = main(["tune", str(BIRDS), str(BIRDS / "queries.toml"), "--grid", "small", "--json"])
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == 0 and data["folds"] == 4 and data["rows"][0]["worst"] >= data["rows"][-1]["worst"]
    assert set(data["rows"][0]["kinds"]) == {"keyword", "paraphrase"}
