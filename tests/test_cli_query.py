"""`hql-tui query` and `hql-tui eval`: JSON shape, exit codes, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hqltui.cli import main
from tests.helpers.indexed_vaults import OWLS_AND_HERON, owl_vault, unit, write_vault

CARDS = {**OWLS_AND_HERON, "robin": "a small songbird of gardens"}


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return owl_vault(tmp_path / "birds", {"robin": CARDS["robin"]},
                     {"fish": unit([0, 1, 0.1, 0])})


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_all_json_has_provenance_for_every_arm(vault: Path, capsys) -> None:
    code, out, err = run(capsys, "query", str(vault), "owl", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["arms"]) == {"hashbag", "bm25", "semantic", "hybrid"}
    for name, arm in data["arms"].items():
        r = arm["retrieval"]
        assert r["arm"] == name and r["approximate"] is False and arm["refusal"] is None
        assert r["model"] and r["revision"] and r["metric"] and r["query_vector_source"]
    assert data["arms"]["semantic"]["retrieval"]["query_vector_source"] == "index"
    assert data["arms"]["semantic"]["retrieval"]["model"] == "test/model"
    hybrid = data["arms"]["hybrid"]
    r = hybrid["retrieval"]
    # The default fusion: adaptive over max, this query's alpha and the signals that set it.
    assert (r["fusion"], r["parameters"]["norm"], r["k"], r["weights"]) == (
        "adaptive", "max", None, None)
    assert r["fusion_config"].startswith("adaptive:norm=max,alpha_keyword=0.2,alpha_prose=0.8")
    sig = r["signals"]
    assert sig["words"] == 1.0 and sig["code"] == 0.0 and 0.0 < sig["gap"] < 0.4
    # one plain word: half keyword-like (0.5), moved by the lexical arm's top gap
    assert r["alpha"] == pytest.approx(0.2 + 0.6 * 0.5 + 0.5 * (0.5 - sig["gap"] / 0.4))
    assert r["windows"] == {"bm25": 50, "semantic": 50}
    assert [a["arm"] for a in r["arms"]] == ["bm25", "semantic"]
    first = hybrid["hits"][0]
    assert set(first["arms"]) == {"bm25", "semantic"}
    assert sum(first["contributions"].values()) == pytest.approx(first["score"])
    assert data["arms"]["bm25"]["hits"][0]["card"] in {"barn-owl", "tawny-owl"}
    assert data["index"]["state"] == "ok" and data["index"]["fresh"] == 4


def test_a_refused_arm_exits_1_and_the_others_still_print(vault: Path, capsys) -> None:
    code, out, _ = run(capsys, "query", str(vault), "heron reeds", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["arms"]["bm25"]["hits"]
    assert "hql-semantics build --query" in data["arms"]["semantic"]["refusal"]["message"]
    assert data["arms"]["hybrid"]["refusal"] == data["arms"]["semantic"]["refusal"]
    code, out, _ = run(capsys, "query", str(vault), "heron reeds", "--mode", "bm25")
    assert code == 0 and "grey-heron" in out


def test_query_text_output(vault: Path, capsys) -> None:
    code, out, _ = run(capsys, "query", str(vault), "owl", "--limit", "2")
    assert code == 0
    assert "hybrid (bm25 + semantic)" in out and "adaptive alpha=0.72 (words 1, code 0" in out
    assert ", gap 0.0209, name 0, ident 0); norm max" in out and "query vector: index" in out
    code, out, _ = run(capsys, "query", str(vault), "zebra", "--mode", "hashbag")
    assert code == 0 and "no lexical match" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("query",),
        ("query", "v"),
        ("query", "v", "t", "--mode", "fuzzy"),
        ("query", "v", "t", "--limit", "0"),
        ("query", "v", "t", "--limit", "many"),
        ("eval", "v"),
        ("eval", "v", "q.toml", "--bogus"),
    ],
)
def test_usage_errors_exit_2(capsys, argv) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and "Traceback" not in err


def test_a_missing_vault_exits_1(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "query", str(tmp_path / "nope"), "owl")
    assert code == 1 and "nope: does not exist" in err


def test_a_broken_search_table_exits_1_naming_it(tmp_path: Path, capsys) -> None:
    root = write_vault(tmp_path / "v", CARDS, extra_toml="[search]\nwindow = -3\n")
    code, _, err = run(capsys, "query", str(root), "owl")
    assert code == 1 and "[search]" in err and "window" in err


def test_no_traceback_reaches_the_user(vault: Path, capsys, monkeypatch) -> None:
    from hqltui.core import session

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(session.Session, "load", boom)
    code, _, err = run(capsys, "query", str(vault), "owl")
    assert code == 1 and "disk on fire" in err and "Traceback" not in err


# ------------------------------------------------------------------ eval


def write_queries(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


def test_eval_metrics_by_hand(vault: Path, tmp_path: Path, capsys) -> None:
    queries = write_queries(
        tmp_path / "q.toml",
        '[[query]]\ntext = "owl"\nkind = "keyword"\nrelevant = ["barn-owl", "tawny-owl"]\n'
        'decoys = ["robin"]\n\n'
        '[[query]]\ntext = "fish"\nkind = "paraphrase"\nrelevant = ["grey-heron"]\n',
    )
    code, out, err = run(capsys, "eval", str(vault), str(queries), "--json")
    assert code == 0, err
    data = json.loads(out)
    sem = data["overall"]["semantic"]
    # owl: tawny-owl (cos .99) then barn-owl; fish: grey-heron first.
    assert sem == {
        "queries": 2, "refused": 0, "hit@1": 1.0, "hit@5": 1.0,
        "mrr@10": 1.0, "recall@10": 1.0, "decoys@5": 0.0,
    }
    assert data["overall"]["bm25"]["hit@1"] == 1.0 and data["overall"]["bm25"]["refused"] == 0
    assert set(data["by_kind"]) == {"keyword", "paraphrase"}
    assert set(data["overall"]) == {
        "hashbag", "bm25", "semantic", "hybrid", "hybrid:lexical=hashbag"
    }
    assert data["overall"]["hybrid"]["fuses"] == ["bm25", "semantic"]
    assert data["overall"]["hybrid:lexical=hashbag"]["fuses"] == ["hashbag", "semantic"]
    code, out, _ = run(capsys, "eval", str(vault), str(queries))
    assert code == 0 and "| semantic" in out and "mrr@10" in out


def test_eval_counts_refusals_and_exits_1(vault: Path, tmp_path: Path, capsys) -> None:
    queries = write_queries(tmp_path / "q.toml", '[[query]]\ntext = "x y"\nrelevant = ["robin"]\n')
    code, out, _ = run(capsys, "eval", str(vault), str(queries), "--json")
    assert code == 1
    data = json.loads(out)
    assert data["overall"]["semantic"]["refused"] == 1
    assert data["overall"]["semantic"]["hit@1"] == 0.0


@pytest.mark.parametrize(
    "body",
    ["not toml [[[", "[[query]]\ntext = 3\nrelevant = ['a']\n", "[[query]]\ntext = 'x'\n", ""],
)
def test_eval_refuses_a_bad_queries_file(vault: Path, tmp_path: Path, capsys, body) -> None:
    queries = write_queries(tmp_path / "q.toml", body)
    code, _, err = run(capsys, "eval", str(vault), str(queries))
    assert code == 1 and "q.toml" in err and "Traceback" not in err
    assert err.count("fix: ") == 1  # one fix, said once


def test_a_labels_file_that_is_a_directory_or_not_toml_is_one_line_with_one_fix(
    vault: Path, tmp_path: Path, capsys
) -> None:
    (tmp_path / "labels").mkdir()
    code, _, err = run(capsys, "eval", str(vault), str(tmp_path / "labels"))
    assert code == 1 and err == (f"hql-tui: {tmp_path}/labels: cannot be read: a directory, "
                                 "not a regular file; fix: make labels a readable file\n")
    queries = write_queries(tmp_path / "q.toml", "[[query]]\ntext = 'owl\n")
    code, out, _ = run(capsys, "eval", str(vault), str(queries), "--json")
    error = json.loads(out)["error"]
    assert code == 1 and "fix:" not in error["message"]
    assert error["fix"] == "fix the file of q.toml"  # tomllib names no line here


def test_eval_compares_fusions_with_ratios_and_lists_losses(
    vault: Path, tmp_path: Path, capsys
) -> None:
    queries = write_queries(
        tmp_path / "q.toml",
        '[[query]]\ntext = "owl"\nkind = "keyword"\nrelevant = ["barn-owl", "tawny-owl"]\n\n'
        '[[query]]\ntext = "fish"\nkind = "paraphrase"\nrelevant = ["grey-heron"]\n',
    )
    code, out, err = run(capsys, "eval", str(vault), str(queries), "--json", "--per-query",
                         "--fusion", "convex:alpha=0.7,norm=zscore", "--fusion", "rrf:k=10")
    assert code == 0, err
    data = json.loads(out)
    rows = data["overall"]
    assert {"hybrid:convex:alpha=0.7,norm=zscore", "hybrid:rrf:k=10"} <= set(rows)
    for name in ("hybrid", "hybrid:rrf:k=10"):
        row = rows[name]
        better = max(rows["bm25"]["mrr@10"], rows["semantic"]["mrr@10"])
        assert row["ratio"] == pytest.approx(row["mrr@10"] / better)
    assert "ratio" not in rows["bm25"]
    assert set(data["lost"]) == {"hybrid", "hybrid:lexical=hashbag",
                                 "hybrid:convex:alpha=0.7,norm=zscore", "hybrid:rrf:k=10"}
    assert data["fusion"].startswith("adaptive:")
    code, out, _ = run(capsys, "eval", str(vault), str(queries), "--fusion", "grid",
                       "--per-query")
    assert code == 0 and "| ratio |" in out and "lost to the better arm on" in out
    assert "hybrid:convex:alpha=0.9,norm=dbsf" in out and "hybrid:rrf:k=60" in out


@pytest.mark.parametrize("bad", ["borda", "convex:alpha=3", "rrf:norm=max", "grid:huge"])
def test_eval_refuses_a_bad_fusion_as_a_usage_error(vault: Path, tmp_path: Path, capsys,
                                                    bad) -> None:
    queries = write_queries(tmp_path / "q.toml", '[[query]]\ntext = "owl"\nrelevant = ["robin"]\n')
    code, out, err = run(capsys, "eval", str(vault), str(queries), "--fusion", bad)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--fusion" in err
