"""`tune`: cross-validated scoring of fusion configurations, its core API and `--write`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hqltui.cli import main
from hqltui.core.evaluation import LabelledQuery, read_queries
from hqltui.core.fusion import parse_fusion
from hqltui.core.session import Session
from hqltui.core.tune import (
    TooFewQueries,
    decide,
    fold_count,
    grid_configs,
    score_rows,
    search_settings,
    tune,
)
from tests.helpers.vaults import copy_vault

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
    result = tune(session, queries, configs=[rrf], folds=2)
    row = next(r for r in result.rows if r.config == rrf)
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
    copy_vault("birds", vault)
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


def test_a_refused_write_says_one_fix_its_own(tmp_path: Path, capsys) -> None:
    """An edit's refusal carries its fix (here: a read-only hql.toml; a full disk names
    the disk): tune adds no second, contradictory one."""
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    toml = vault / "hql.toml"
    toml.chmod(0o444)
    code = main(["tune", str(vault), str(vault / "queries.toml"), "--grid", "small", "--write"])
    _, err = capsys.readouterr()
    refusal = err.strip().splitlines()[-1]
    assert code == 1 and refusal.count("; fix:") == 1
    assert refusal == (f"hql-tui tune: {toml}: is read-only, so it was not changed; fix: make "
                       "it writable (chmod u+w hql.toml) and try again")


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
    # birds, small grid: the top row (first by label) ties the configured fusion in every
    # fold, so the configured one is kept at margin 0 ± 0
    top, configured = data["rows"][0], data["decision"]["incumbent"]
    assert configured.startswith("adaptive:norm=max,") and top["config"] != configured
    assert top["worst"] == next(r["worst"] for r in data["rows"] if r["config"] == configured)
    assert data["decision"] == {"incumbent": configured, "top": top["config"],
                                "kept": True, "margin": 0.0, "se": 0.0, "folds": 4}
    assert data["winner"] == configured
    assert len(data["rows"][0]["by_fold"]) == 4


# ------------------------------------------------------------------ the selection rule
# Small synthetic score tables: 10 keyword and 10 paraphrase queries, 5 folds, so fold f
# of a kind holds its queries f and f + 5. The arms: bm25 finds every keyword query at
# rank 1 and no paraphrase one; semantic every paraphrase one at rank 1 and keyword ones
# at rank 2. The better arm is then 1.0 on every fold, and a fold's ratio is the mean
# reciprocal rank of the configuration there.

KW = [LabelledQuery(f"k{i}", ("a",), "keyword") for i in range(10)]
PARA = [LabelledQuery(f"p{i}", ("a",), "paraphrase") for i in range(10)]
SYNTH = KW + PARA
ARMS = [{"lexical": 1.0, "semantic": 0.5}] * 10 + [{"lexical": 0.0, "semantic": 1.0}] * 10
INCUMBENT = parse_fusion("adaptive")
STEADY = parse_fusion("convex:alpha=0.6,norm=zscore")
LUCKY = parse_fusion("convex:alpha=0.4,norm=max")


def _table(keyword: list[float], paraphrase_by_fold: list[float]) -> list[float]:
    """Per query reciprocal ranks: keyword ones as given, paraphrase fold f's two queries
    both ``paraphrase_by_fold[f]``."""
    return keyword + paraphrase_by_fold * 2


def _rows(configs: dict) -> list:
    return score_rows(SYNTH, 5, configs, ARMS)


def test_a_steady_gain_in_every_fold_replaces_the_incumbent() -> None:
    rows = _rows({INCUMBENT: _table([0.5] * 10, [1.0] * 5),
                  STEADY: _table([1.0] * 10, [0.7, 0.8, 0.7, 0.8, 0.75])})
    assert [r.config for r in rows] == [STEADY, INCUMBENT]
    assert rows[0].by_fold == pytest.approx((0.7, 0.8, 0.7, 0.8, 0.75))
    assert rows[1].by_fold == pytest.approx((0.5,) * 5)
    decision = decide(rows, INCUMBENT)
    assert decision is not None and not decision.kept and decision.winner.config == STEADY
    # fold differences 0.2 0.3 0.2 0.3 0.25: mean 0.25, sample sd 0.05, SE 0.05 / sqrt(5)
    assert decision.margin == pytest.approx(0.25)
    assert decision.se == pytest.approx(0.05 / 5 ** 0.5)
    assert "replaces the configured fusion `adaptive:" in decision.reason()


def test_a_gain_from_one_lucky_fold_keeps_the_incumbent() -> None:
    # LUCKY tops the table (worst kind ratio 0.57 against 0.5), but all of it comes
    # from fold 0 (+0.4; fold 1 −0.05): mean 0.07, SE 0.083 — within the noise.
    rows = _rows({INCUMBENT: _table([0.5] * 10, [1.0] * 5),
                  LUCKY: _table([1.0] * 10, [0.9, 0.45, 0.5, 0.5, 0.5])})
    assert rows[0].config == LUCKY and rows[0].worst > rows[1].worst
    decision = decide(rows, INCUMBENT)
    assert decision is not None and decision.kept and decision.winner.config == INCUMBENT
    assert decision.margin == pytest.approx(0.07)
    assert decision.se > decision.margin
    assert decision.reason().startswith(
        "kept the configured fusion: the top row's margin over it is +0.070 ± 0.083")


def test_the_incumbent_on_top_is_kept_and_the_order_of_configs_does_not_matter() -> None:
    configs = {STEADY: _table([0.5] * 10, [0.9] * 5), LUCKY: _table([0.2] * 10, [1.0] * 5),
               INCUMBENT: _table([1.0] * 10, [1.0] * 5)}
    rows = _rows(configs)
    again = _rows(dict(reversed(list(configs.items()))))
    assert [r.config for r in rows] == [r.config for r in again] == [INCUMBENT, STEADY, LUCKY]
    decision = decide(rows, INCUMBENT)
    assert decision is not None and decision.kept and decision.margin == 0.0
    assert decision.reason() == "the configured fusion tops the table"
    assert decide(rows, parse_fusion("rrf:k=5")) is None  # an incumbent never scored


def test_a_fold_where_the_arms_find_nothing_is_left_out_of_that_folds_score() -> None:
    arms = list(ARMS)
    arms[0] = arms[5] = {"lexical": 0.0, "semantic": 0.0}  # keyword fold 0: no arm finds it
    config = _table([0.0, 0.6, 0.6, 0.6, 0.6] * 2, [0.8] * 5)
    row = score_rows(SYNTH, 5, {INCUMBENT: config}, arms)[0]
    # fold 0: keyword left out (both arms and the config score 0), so paraphrase's 0.8
    assert row.by_fold == pytest.approx((0.8, 0.6, 0.6, 0.6, 0.6))
    assert row.kinds["keyword"].folds == pytest.approx((1.0, 0.6, 0.6, 0.6, 0.6))


def test_tune_scores_the_configured_fusion_even_off_the_grid(session, queries) -> None:
    rrf = parse_fusion("rrf:k=60")
    result = tune(session, queries, configs=[rrf])
    configured = session.search.fusion_config()
    assert {r.config for r in result.rows} == {rrf, configured} and result.total == 2
    assert result.decision is not None and result.decision.incumbent.config == configured
    # birds: rrf ranks no paraphrase group card, so the configured adaptive fusion wins
    assert result.best is result.decision.winner and result.best.config == configured


def test_cli_keeps_the_configured_fusion_when_the_top_row_wins_by_one_query(capsys) -> None:
    # birds, default grid: the top row gets one more keyword query to rank 1 than the
    # configured fusion (one fold of 4): margin +0.125, SE 0.125 — not beyond one SE.
    code = main(["tune", str(BIRDS), str(BIRDS / "queries.toml"), "--rows", "3"])
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    table_rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    configured = Session.load(BIRDS).search.fusion_config().label()
    assert code == 0 and len(table_rows) == 4  # the first 3, then the configured one
    assert table_rows[-1].endswith("| 0.88 |") and f"`{configured}` (configured)" in table_rows[-1]
    assert "(configured)" not in "".join(table_rows[:3])
    assert f"winner: {configured} (worst ratio 0.88)" in lines
    assert ("kept the configured fusion: the top row's margin over it is +0.125 ± 0.125 "
            "(per-fold worst-kind ratio, mean ± one standard error over 4 folds); "
            "tune changes it only beyond one SE") in lines
