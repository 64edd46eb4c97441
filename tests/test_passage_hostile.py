"""A tampered chunk table: verify names the problem, the app refuses the semantic arm alone
(one line, the rebuild as its fix) or leaves the bad passages out, never a traceback."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hqltui.core.session import Session
from producer.embedders.local import packaged_embedder
from producer.index_checks import (
    not_unit_passages_message,
    passages_absent_message,
    passages_orphan_message,
)
from producer.index_format import pack
from producer.verify import verify
from tests.helpers.indexed_vaults import locked, unit
from tests.helpers.passage_vaults import passage_vault, real_build

QUERY = "file descriptor limit"
NAN = pack(np.full(384, np.nan, dtype=np.float32))
INF = np.full(384, np.inf, dtype="<f4").tobytes()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return passage_vault(tmp_path_factory.mktemp("p") / "v", packaged_embedder(), [QUERY])


def tampered(pristine: Path, tmp_path: Path, *edits: tuple[str, tuple[object, ...]]) -> Path:
    root = tmp_path / "v"  # the same directory name: the index's vault still matches
    shutil.copytree(pristine, root)
    with sqlite3.connect(root / ".hql/index.sqlite") as conn:
        for sql, args in edits:
            conn.execute(sql, args)
    return root


def semantic_and_hybrid(root: Path, tmp_path: Path):  # noqa: ANN201
    session = Session.load(root, cache_dir=tmp_path / "cache")
    answer = session.query(QUERY)
    assert answer.lexical.ok and answer.lexical.hits  # the lexical arm still answers
    return session, answer.semantic, answer.hybrid


SHELL_1 = "WHERE card = 'shell' AND ordinal = 1"
REFUSED = [
    pytest.param(f"UPDATE chunk SET end_char = 999999 {SHELL_1}", (), "passage_offsets",
                 "passage 1 of `shell` spans characters 819..999999, outside the card's "
                 "7677-character text", id="end-past-the-text"),
    pytest.param(f"UPDATE chunk SET start_char = -50 {SHELL_1}", (), "passage_offsets",
                 "passage 1 of `shell` spans characters -50..1847, outside the card's "
                 "7677-character text", id="negative-start"),
    pytest.param(f"UPDATE chunk SET start_char = 500, end_char = 100 {SHELL_1}", (),
                 "passage_offsets", "passage 1 of `shell` spans characters 500..100, outside "
                 "the card's 7677-character text", id="reversed"),
    pytest.param(f"UPDATE chunk SET start_char = 'abc' {SHELL_1}", (), "passage_offsets",
                 "passage 1 of `shell` spans characters 'abc'..1847, outside the card's "
                 "7677-character text", id="text-offset"),
    pytest.param(f"UPDATE chunk SET start_char = 1.5 {SHELL_1}", (), "passage_offsets",
                 "passage 1 of `shell` spans characters 1.5..1847, outside the card's "
                 "7677-character text", id="fractional-offset"),
    pytest.param(f"UPDATE chunk SET end_char = 99999999999999999999 {SHELL_1}", (),
                 "passage_offsets", "passage 1 of `shell` spans characters 819..1e+20, outside "
                 "the card's 7677-character text", id="past-int64"),
    pytest.param(f"UPDATE chunk SET ordinal = 'x' {SHELL_1}", (), "passage_ordinal",
                 "a passage of `shell` has the ordinal 'x', not a whole number from 0",
                 id="text-ordinal"),
    pytest.param("UPDATE chunk_recipe SET window = 9999", (), "passage_recipe",
                 "the index's passage recipe is not one this tool knows (its fields or its "
                 "digest)", id="unknown-recipe"),
    pytest.param("UPDATE chunk_recipe SET digest = 'sha256:00'", (), "passage_recipe",
                 "the index's passage recipe is not one this tool knows (its fields or its "
                 "digest)", id="recipe-digest"),
    pytest.param("INSERT INTO chunk_recipe SELECT * FROM chunk_recipe", (), "passage_recipe",
                 "the index holds passages and 2 passage recipes, not one", id="two-recipes"),
    pytest.param("DELETE FROM chunk_recipe", (), "passage_recipe",
                 "the index holds passages and no passage recipe", id="no-recipe"),
]


@pytest.mark.parametrize(("sql", "args", "kind", "message"), REFUSED)
def test_a_tampered_row_is_named_by_verify_and_refuses_the_semantic_arm_alone(
    pristine: Path, tmp_path: Path, sql: str, args: tuple[object, ...], kind: str, message: str
) -> None:
    root = tampered(pristine, tmp_path, (sql, args))
    report = verify(root, root / ".hql/index.sqlite")
    assert (kind, message) in [(p.kind, p.message) for p in report.problems]
    _, semantic, hybrid = semantic_and_hybrid(root, tmp_path)
    for ranking in (semantic, hybrid):
        assert ranking.refusal is not None
        assert ranking.refusal.message == message  # verify's words, one line
        assert "\n" not in ranking.refusal.message
        assert ranking.refusal.fix.startswith("hql-semantics build --vault")


def test_offsets_of_a_stale_card_are_checked_as_a_span_only(pristine: Path,
                                                          tmp_path: Path) -> None:
    """The text a stale card's passages were cut from is gone: an end past today's (shorter)
    text is no fault, a reversed span still is."""
    root = tampered(pristine, tmp_path, (f"UPDATE chunk SET end_char = 7600 {SHELL_1}", ()))
    (root / "shell.hmd").write_text("# shell\n\nShort now: ulimit sets the file descriptor "
                                    "limit.\n", encoding="utf-8")
    report = verify(root, root / ".hql/index.sqlite")
    assert [p.kind for p in report.problems] == ["stale"]
    _, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert semantic.ok
    with sqlite3.connect(root / ".hql/index.sqlite") as conn:
        conn.execute(f"UPDATE chunk SET start_char = 9000 {SHELL_1}")
    report = verify(root, root / ".hql/index.sqlite")
    assert ("passage_offsets", "passage 1 of `shell` spans characters 9000..7600, not a span "
            "of characters") in [(p.kind, p.message) for p in report.problems]
    _, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert semantic.refusal is not None and "9000..7600" in semantic.refusal.message


@pytest.mark.parametrize("blob", [NAN, INF], ids=["nan", "inf"])
def test_non_finite_passages_are_left_out_with_one_warning(
    pristine: Path, tmp_path: Path, blob: bytes, recwarn: pytest.WarningsRecorder
) -> None:
    root = tampered(pristine, tmp_path, ("UPDATE chunk SET embedding = ? WHERE card = 'shell'",
                                         (blob,)))
    report = verify(root, root / ".hql/index.sqlite")
    bad = [p for p in report.problems if p.kind == "passage_not_unit"]
    assert len(bad) > 1 and all(p.name == "shell" for p in bad)
    session, semantic, hybrid = semantic_and_hybrid(root, tmp_path)
    ours = [w.message for w in session.warnings if "not finite" in w.message]
    count = len(bad)
    assert ours == [f"{count} passages have a stored vector that is not finite and unit length, "
                    "in `shell`, so they are left out of semantic and hybrid (rebuild: "
                    "hql-semantics build)"]
    assert ours[0].startswith(not_unit_passages_message([("shell", i) for i in range(count)]))
    assert semantic.ok and hybrid.ok
    shell = semantic.hit("shell")
    assert shell is not None and np.isfinite(shell.score)
    assert shell.passage is not None and shell.passage.ordinal is None  # its card vector
    assert not [w for w in recwarn if "invalid value" in str(w.message)]  # no numpy noise


def test_absent_and_orphan_passages_read_as_verify_words_them(pristine: Path,
                                                               tmp_path: Path) -> None:
    root = tampered(pristine, tmp_path,
                    ("DELETE FROM chunk WHERE card = 'heron'", ()),
                    ("INSERT INTO chunk VALUES ('gone', 0, 0, 5, ?)", (pack(unit(np.ones(384))),)))
    report = verify(root, root / ".hql/index.sqlite")
    found = {(p.kind, p.message) for p in report.problems}
    assert ("passages_absent", passages_absent_message(["heron"])) in found
    assert ("passages_orphan", passages_orphan_message(["gone"])) in found
    session, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert f"{passages_absent_message(['heron'])} (rebuild: hql-semantics build)" in [
        w.message for w in session.warnings]
    assert passages_absent_message(["heron", "owl"]) == (
        "2 cards have no passages in the index, so the semantic arm scores them by their card "
        "vector alone: `heron`, `owl`")
    assert semantic.ok


# the chunk table rebuilt without its key or column types: any value, any number of times
UNKEYED = [(sql, ()) for sql in (
    "CREATE TABLE loose (card, ordinal, start_char, end_char, embedding)",
    "INSERT INTO loose SELECT * FROM chunk", "DROP TABLE chunk",
    "ALTER TABLE loose RENAME TO chunk")]


@pytest.mark.parametrize("edits", [
    pytest.param([*UNKEYED, (f"INSERT INTO chunk SELECT * FROM chunk {SHELL_1}", ())],
                 id="doubled-row"),
    pytest.param([*UNKEYED, ("UPDATE chunk SET ordinal = CAST(ordinal AS TEXT)", ())],
                 id="text-ordinals"),
    pytest.param([(f"UPDATE chunk SET ordinal = 9223372036854775807 {SHELL_1}", ())],
                 id="huge-ordinal"),
    pytest.param([(f"UPDATE chunk SET start_char = 500, end_char = 100 {SHELL_1}", ())],
                 id="reversed-span"),
])
def test_a_plain_build_cuts_tampered_passages_afresh_instead_of_copying_them(
    pristine: Path, tmp_path: Path, edits: list[tuple[str, tuple[object, ...]]]
) -> None:
    """The refusal's fix is `hql-semantics build`: it must repair the table, not say
    "up to date" over it (or fail its own order check on a doubled row)."""
    root = tampered(pristine, tmp_path, *edits)
    result = real_build(root, packaged_embedder(), passages=True)
    assert not result.up_to_date
    report = verify(root, root / ".hql/index.sqlite")
    assert report.problems == [] and report.passages == 11
    _, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert semantic.ok


def test_the_fix_of_a_passage_refusal_repairs_the_index(pristine: Path, tmp_path: Path) -> None:
    """An end past the text of an unchanged card: a plain build copies the row (it does not
    read the text of a card it keeps), so the fix the refusal names is a full build."""
    edit = ("UPDATE chunk SET end_char = 999999 WHERE card = 'shell' AND ordinal = 8", ())
    root = tampered(pristine, tmp_path, edit)
    _, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert semantic.refusal is not None
    assert semantic.refusal.fix == (f"hql-semantics build --vault {root.as_posix()} --out "
                                    f"{root.as_posix()}/.hql/index.sqlite --full")
    assert real_build(root, packaged_embedder(), passages=True).up_to_date  # why: not enough
    real_build(root, packaged_embedder(), passages=True, full=True)
    assert verify(root, root / ".hql/index.sqlite").problems == []
    _, semantic, _ = semantic_and_hybrid(root, tmp_path)
    assert semantic.ok


def test_a_passage_stored_twice_is_named_by_verify_and_refuses_the_semantic_arm(
    pristine: Path, tmp_path: Path
) -> None:
    """Which of two rows of passage 8 answered cannot be said: the table (rebuilt without
    its key) is not one a build writes."""
    root = tampered(pristine, tmp_path, *UNKEYED,
                    ("UPDATE chunk SET ordinal = 8 WHERE card = 'shell' AND ordinal = 1", ()))
    message = "passage 8 of `shell` has 2 rows in the index, not one"
    report = verify(root, root / ".hql/index.sqlite")
    assert [(p.kind, p.message) for p in report.problems] == [("passage_ordinal", message)]
    _, semantic, hybrid = semantic_and_hybrid(root, tmp_path)
    for ranking in (semantic, hybrid):
        assert ranking.refusal is not None and ranking.refusal.message == message


def test_an_index_truncated_in_place_after_loading_refuses_semantic_saying_so(
    pristine: Path, tmp_path: Path
) -> None:
    """The passages' float32 rows are read from the file as loaded, at query time: cut
    short under a running session, the arm refuses alone, naming the file and the build."""
    root = tampered(pristine, tmp_path)
    session = Session.load(root, cache_dir=tmp_path / "cache")
    assert session.query(QUERY).semantic.ok
    os.truncate(root / ".hql/index.sqlite", 8192)
    answer = session.query(QUERY)
    assert answer.lexical.ok and answer.lexical.hits
    for ranking in (answer.semantic, answer.hybrid):
        assert ranking.refusal is not None
        assert ranking.refusal.message == (
            f"the index `{root.as_posix()}/.hql/index.sqlite` cannot be read any more "
            "(database disk image is malformed): the file changed on disk since it was "
            "loaded; rebuild it")
        assert ranking.refusal.fix.startswith("hql-semantics build --vault")


def test_an_index_locked_by_another_process_after_loading_is_worded_as_at_load(
    pristine: Path, tmp_path: Path
) -> None:
    root = tampered(pristine, tmp_path)
    session = Session.load(root, cache_dir=tmp_path / "cache")
    assert session.query(QUERY).semantic.ok
    with locked(root / ".hql/index.sqlite") as holder:
        semantic = session.query(QUERY).semantic
    assert semantic.refusal is not None
    assert semantic.refusal.message.startswith(
        f"the index `{root.as_posix()}/.hql/index.sqlite` is locked by another process "
        "(database is locked; waited 5 s; held open by ")
    assert f"pid {holder.pid} (" in semantic.refusal.message
    assert semantic.refusal.fix == "try again once that process has finished or closed the index"
