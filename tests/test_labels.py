"""The labels file the app edits: exactly what `eval` reads, edited one entry at a time.

Real files in a temporary vault, the real tomlkit writer, and `read_queries` (the
reader `hql-tui eval` uses) on every file written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hqltui.core.config import load_app_config
from hqltui.core.evaluation import query_scores, read_queries, winners
from hqltui.core.labels import (
    Label,
    LabelsError,
    change,
    cycle_kind,
    load_labels,
    toggle_decoy,
    toggle_relevant,
    vault_labels,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

HAND_WRITTEN = """\
# My labels for the birds vault.
#   (kept by hand; the app adds to it)

[[query]]   # the owls
text   = "night hunting birds"
kind = "paraphrase"
relevant = [ "barn-owl",
             "tawny-owl" ]   # two so far
decoys = ['common-kestrel']

# keyword queries below

[[query]]
text = "Tyto alba"
kind = "keyword"
relevant = ["barn-owl"]
extra = 1  # a key eval does not read

[[query]]
text = "kleptoparasitism"
relevant = ["great-skua"]
"""


def relevant(card: str):  # noqa: ANN201 - an edit for change()
    return lambda label: toggle_relevant(label, card)


def test_a_hand_written_file_survives_byte_for_byte_but_the_entry_changed(tmp_path):
    path = tmp_path / "queries.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    labels = load_labels(path)
    assert labels.error is None
    done = change(labels, "Tyto alba", relevant("barn-owl-member-of-tytonidae"))
    expected = HAND_WRITTEN.replace(
        'relevant = ["barn-owl"]\nextra',
        'relevant = ["barn-owl", "barn-owl-member-of-tytonidae"]\nextra')
    assert path.read_text(encoding="utf-8") == expected
    # A new query goes at the end, one blank line before it; the rest stays as it was.
    change(done.labels, "owls that hunt by sound", relevant("barn-owl"))
    assert path.read_text(encoding="utf-8") == expected + (
        '\n[[query]]\ntext = "owls that hunt by sound"\nrelevant = ["barn-owl"]\n')
    assert [q.text for q in read_queries(path)] == [
        "night hunting birds", "Tyto alba", "kleptoparasitism", "owls that hunt by sound"]


def test_undoing_every_change_gives_back_the_same_labels(tmp_path):
    path = tmp_path / "queries.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    labels = load_labels(path)
    steps = [("night hunting birds", relevant("common-kestrel")),  # a decoy becomes relevant
             ("kleptoparasitism", cycle_kind),                       # a kind key is added
             ("Tyto alba", cycle_kind), ("Tyto alba", cycle_kind)]   # keyword → none → …
    undo = []
    for text, edit in steps:
        done = change(labels, text, edit)
        undo.append((text, done.before))
        labels = done.labels
    assert path.read_text(encoding="utf-8") != HAND_WRITTEN
    assert read_queries(path)[0].relevant == ("barn-owl", "tawny-owl", "common-kestrel")
    assert read_queries(path)[0].decoys == ()
    for text, before in reversed(undo):
        labels = change(labels, text, lambda _label, b=before: b).labels
    original = tmp_path / "original.toml"
    original.write_text(HAND_WRITTEN, encoding="utf-8")
    assert read_queries(path) == read_queries(original)
    text = path.read_text(encoding="utf-8")
    head = HAND_WRITTEN[: HAND_WRITTEN.index("relevant")]
    assert text.startswith(head) and "\n# keyword queries below\n\n[[query]]\n" in text


def test_relevant_and_decoy_exclude_each_other_and_kind_cycles():
    label = toggle_decoy(toggle_relevant(Label(), "a"), "a")
    assert (label.relevant, label.decoys) == ((), ("a",))
    label = toggle_relevant(label, "a")
    assert (label.relevant, label.decoys) == (("a",), ())
    kinds = []
    for _ in range(4):
        label = cycle_kind(label)
        kinds.append(label.kind)
    assert kinds == ["paraphrase", "keyword", None, "paraphrase"]
    assert cycle_kind(Label(kind="query")).kind == "paraphrase"  # a kind written by hand


def test_created_on_the_first_relevant_card_and_removed_with_the_last(tmp_path):
    path = tmp_path / "queries.toml"
    labels = load_labels(path)
    assert labels.error is None and not labels.exists
    # A decoy and a kind alone wait in memory: eval needs a relevant card per entry.
    done = change(labels, "owls", lambda lab: toggle_decoy(lab, "common-kestrel"))
    done = change(done.labels, "owls", cycle_kind)
    assert not path.exists() and not done.created
    done = change(done.labels, "owls", relevant("barn-owl"))
    assert done.created
    assert read_queries(path)[0] == read_queries(path)[0].__class__(
        "owls", ("barn-owl",), "paraphrase", ("common-kestrel",))
    done = change(done.labels, "owls", relevant("barn-owl"))
    assert "owls" not in path.read_text(encoding="utf-8")
    assert done.labels.get("owls") == Label((), ("common-kestrel",), "paraphrase")


def test_a_file_with_a_toml_error_is_never_written(tmp_path):
    path = tmp_path / "queries.toml"
    broken = '[[query]]\ntext = "owls\nrelevant = ["barn-owl"]\n'
    path.write_text(broken, encoding="utf-8")
    labels = load_labels(path)
    assert labels.error is not None and "is not valid TOML" in labels.error
    assert "labelling is off" in labels.error
    with pytest.raises(LabelsError):
        change(labels, "owls", relevant("tawny-owl"))
    assert path.read_text(encoding="utf-8") == broken


def test_a_file_eval_refuses_is_never_written(tmp_path):
    path = tmp_path / "queries.toml"
    refused = '[[query]]\ntext = "owls"\nrelevant = []\n'
    path.write_text(refused, encoding="utf-8")
    labels = load_labels(path)
    assert labels.error is not None and "`relevant` names no card" in labels.error
    with pytest.raises(LabelsError):
        change(labels, "owls", relevant("tawny-owl"))
    assert path.read_text(encoding="utf-8") == refused


def test_an_edit_made_on_disk_is_read_before_the_next_write(tmp_path):
    path = tmp_path / "queries.toml"
    labels = change(load_labels(path), "owls", relevant("barn-owl")).labels
    with path.open("a", encoding="utf-8") as out:  # another editor adds an entry
        out.write('\n# added by hand\n[[query]]\ntext = "auks"\nrelevant = ["alcidae"]\n')
    change(labels, "owls", relevant("tawny-owl"))
    queries = {q.text: q.relevant for q in read_queries(path)}
    assert queries == {"owls": ("barn-owl", "tawny-owl"), "auks": ("alcidae",)}
    assert "# added by hand" in path.read_text(encoding="utf-8")
    # ...and a file broken on disk since it was read is not written either.
    path.write_text("[[query]\n", encoding="utf-8")
    with pytest.raises(LabelsError):
        change(labels, "owls", relevant("eurasian-eagle-owl"))
    assert path.read_text(encoding="utf-8") == "[[query]\n"


@pytest.mark.parametrize(("named", "says"), [
    ("/elsewhere/queries.toml", "is an absolute path"),
    ("../queries.toml", "climbs out with `..`"),
])
def test_the_labels_file_stays_inside_the_vault(tmp_path, named, says):
    (tmp_path / "hql.toml").write_text(f'[search]\nlabels = "{named}"\n', encoding="utf-8")
    config = load_app_config(tmp_path)
    assert says in config.errors["search"]
    assert "the configured labels" in config.errors["search"]
    labels = vault_labels(config)
    assert labels.error is not None and "labelling is off" in labels.error


def test_search_labels_names_the_file(tmp_path):
    (tmp_path / "hql.toml").write_text('[search]\nlabels = "eval/mine.toml"\n',
                                       encoding="utf-8")
    labels = vault_labels(load_app_config(tmp_path))
    assert labels.path == tmp_path / "eval" / "mine.toml" and labels.error is None
    assert vault_labels(load_app_config(tmp_path / "eval")).path.name == "queries.toml"


def test_the_birds_index_holds_exactly_the_labelled_queries():
    """`make run` labels a copy of birds: its index must hold the queries of its
    queries.toml, no more (a new query there is one the user typed)."""
    with sqlite3.connect(FIXTURES / "birds" / ".hql" / "index.sqlite") as db:
        stored = {text for (text,) in db.execute("SELECT text FROM query")}
    assert stored == {q.text for q in read_queries(FIXTURES / "birds" / "queries.toml")}


def test_one_query_scores():
    s = query_scores(["x", "a", "y", "b"], ["a", "b", "c", "d"], ["x", "z"])
    assert (s.hit1, s.hit5, s.mrr10, s.recall10, s.decoys5, s.first) == (
        0.0, 1.0, 0.5, 0.5, 1, 2)
    assert query_scores(None, ["a"]).refused
    assert query_scores([f"n{i}" for i in range(10)] + ["a"], ["a"]).mrr10 == 0.0
    best = {"bm25": query_scores(["a"], ["a"]), "semantic": query_scores(["x", "a"], ["a"])}
    assert winners(best) == ["bm25"]
    assert winners({"bm25": best["bm25"], "semantic": best["bm25"]}) == []  # a tie
