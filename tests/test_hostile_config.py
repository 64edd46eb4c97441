"""Bad input, round three: labels never written outside the vault nor lost, config
files that cannot crash or hang the tools, a vault argument that is never empty.

Real files, real processes and the real TOML reader and writer throughout; each
case is one clear line naming the file or the setting, and the rest keeps working.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hqltui.core.config import load_app_config
from hqltui.core.evaluation import QueriesError, read_labelled, read_queries
from hqltui.core.history import History
from hqltui.core.labels import change, load_labels, toggle_relevant, vault_labels
from producer.tomlfile import TomlFileError, read_toml
from producer.vault import MAX_DEPTH, load_vault
from tests.helpers.vaults import copy_vault

REPO = Path(__file__).resolve().parent.parent
BIRDS = REPO / "fixtures" / "birds"
DEEP = "x = " + "[" * 600 + "]" * 600 + "\n"  # tomllib recurses once per level


def hql(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hqltui.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def relevant(card: str):  # noqa: ANN201 - an edit for change()
    return lambda label: toggle_relevant(label, card)


# ------------------------------------------------------------ the labels file


def test_a_default_labels_file_linked_outside_the_vault_is_never_written(tmp_path: Path
                                                                          ) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "elsewhere"
    vault.mkdir()
    outside.mkdir()
    (outside / "theirs.toml").write_text("# not the vault's\n", encoding="utf-8")
    (vault / "queries.toml").symlink_to(outside / "theirs.toml")
    labels = vault_labels(load_app_config(vault))  # no hql.toml: the default name
    assert labels.error is not None
    assert "leads outside the vault through a symlink" in labels.error
    assert "labelling is off" in labels.error
    with pytest.raises(ValueError, match="labelling is off"):
        change(labels, "owls", relevant("barn-owl"))
    assert (outside / "theirs.toml").read_text(encoding="utf-8") == "# not the vault's\n"
    assert sorted(os.listdir(outside)) == ["theirs.toml"]  # no temporary file either


def test_a_linked_hql_toml_is_still_the_users_own(tmp_path: Path) -> None:
    """hql.toml may live in a dotfiles folder: it is configuration, not vault data."""
    vault, dotfiles = tmp_path / "vault", tmp_path / "dotfiles"
    vault.mkdir()
    dotfiles.mkdir()
    (dotfiles / "hql.toml").write_text('[search]\nlimit = 7\n', encoding="utf-8")
    (vault / "hql.toml").symlink_to(dotfiles / "hql.toml")
    config = load_app_config(vault)
    assert config.errors == {} and config.search.limit == 7
    assert vault_labels(config).error is None


def _label_many(path: str, prefix: str, count: int, start: multiprocessing.Barrier) -> None:
    """One app instance labelling: ``count`` confirmed writes of its own queries."""
    labels = load_labels(Path(path))
    start.wait()
    for i in range(count):
        labels = change(labels, f"{prefix} {i}", relevant("barn-owl")).labels


def test_two_processes_labelling_one_file_lose_no_confirmed_label(tmp_path: Path) -> None:
    path = tmp_path / "queries.toml"
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    writers = [context.Process(target=_label_many, args=(str(path), name, 40, start))
               for name in ("left", "right")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [w.exitcode for w in writers] == [0, 0]  # no write was refused either
    texts = {q.text for q in read_queries(path)}
    assert texts == {f"{name} {i}" for name in ("left", "right") for i in range(40)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queries.toml"]  # no lock left


FILL = """
import os, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from hqltui.core.configure import write_search
from hqltui.core.labels import change, load_labels, toggle_relevant
from producer.config import ConfigError
from hqltui.core.labels import LabelsError
disk = Path({disk!r})
(disk / "hql.toml").write_text("[search]\\nlimit = 5\\n")
(disk / "queries.toml").write_text("")
labels = load_labels(disk / "queries.toml")
with open(disk / "filler", "wb", buffering=0) as fh:
    try:
        while True:
            fh.write(b"x" * 4096)
    except OSError:
        pass
for attempt in (lambda: write_search(disk, {{"limit": 9}}),
                lambda: change(labels, "owls " * 400, lambda l: toggle_relevant(l, "barn-owl"))):
    try:
        attempt()
        print("written")
    except (ConfigError, LabelsError) as exc:
        print(exc)
print(repr((disk / "hql.toml").read_text()), sorted(p.name for p in disk.iterdir()))
"""


def test_a_full_disk_is_named_not_blamed_on_permissions(tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs mounted in a user namespace of its own."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small disk")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = FILL.format(repo=str(REPO), disk=str(disk))
    mount = f"mount -t tmpfs -o size=64k tmpfs {disk} && exec {sys.executable} -c \"$0\""
    result = subprocess.run(["unshare", "-rm", "sh", "-c", mount, script],
                            capture_output=True, text=True, timeout=120)
    if "mount" in result.stderr and result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    edit, label, state = result.stdout.splitlines()
    for line in (edit, label):
        assert "the disk is full" in line and "free space on the disk" in line
        assert "permissions" not in line and line.count("; fix:") == 1
    assert state.startswith("'[search]\\nlimit = 5\\n'")  # nothing lost
    assert ".tmp" not in state


# ------------------------------------------------------- hql.toml and friends


def test_toml_nested_too_deep_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text(DEEP, encoding="utf-8")
    with pytest.raises(TomlFileError) as caught:
        read_toml(tmp_path / "hql.toml")
    assert str(caught.value) == (f"{tmp_path / 'hql.toml'}: nests arrays or tables too deeply "
                                 "to be read; fix: flatten the nesting in hql.toml")
    config = load_app_config(tmp_path)  # broken like any unreadable file: every table refused
    assert config.file_error is not None and "too deeply" in config.file_error


def test_a_labels_file_nested_too_deep_turns_labelling_off_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "queries.toml").write_text(DEEP, encoding="utf-8")
    labels = vault_labels(load_app_config(tmp_path))
    assert labels.error is not None and "too deeply" in labels.error
    with pytest.raises(QueriesError, match="too deeply"):
        read_queries(tmp_path / "queries.toml")


def test_list_names_a_deep_hql_toml_without_a_traceback(tmp_path: Path) -> None:
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    (vault / "hql.toml").write_text(DEEP, encoding="utf-8")
    result = hql("birds", "--list", cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "birds/hql.toml: nests arrays or tables too deeply to be read" in result.stdout


@pytest.mark.parametrize(("table", "key", "other"), [
    ("semantics", "index", ""),
    ("search", "labels", '[semantics]\nindex = ".hql/index.sqlite"\n'),
])
def test_a_nul_in_a_path_setting_refuses_that_setting_by_name(tmp_path: Path, table: str,
                                                               key: str, other: str) -> None:
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    (vault / "hql.toml").write_text(f'{other}[{table}]\n{key} = "a\\u0000b.toml"\n',
                                    encoding="utf-8")
    config = load_app_config(vault)
    assert config.errors[table] == (
        f"{vault / 'hql.toml'}: [{table}] `{key}` holds a NUL character (\\u0000), which no "
        f"file name can: name a file inside the vault (e.g. "
        f"`{'.hql/index.sqlite' if key == 'index' else 'queries.toml'}`)")
    listed = hql("birds", "--list", cwd=tmp_path)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert "holds a NUL character" in listed.stdout
    lexical = hql("query", "birds", "barn owl", "--mode", "bm25", "--limit", "3", cwd=tmp_path)
    assert lexical.returncode == 0, lexical.stderr
    assert "barn-owl" in lexical.stdout


def test_extreme_fusion_values_are_refused_by_key_and_json_stays_strict(tmp_path: Path
                                                                        ) -> None:
    vault = tmp_path / "birds"
    copy_vault("birds", vault)
    (vault / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n[search]\nrrf_k = 1e-300\n'
        "[search.weights]\nlexical = 1.7e308\nsemantic = 1.7e308\n", encoding="utf-8")
    config = load_app_config(vault)
    assert config.errors["search"].endswith("[search] `weights.lexical` must be between 0 "
                                            "and 1e+06")
    result = hql("query", "birds", "owl", "--json", cwd=tmp_path)
    assert "Infinity" not in result.stdout and "RuntimeWarning" not in result.stderr
    assert json.loads(result.stdout)["error"]["message"] == (
        "birds/hql.toml: [search] `weights.lexical` must be between 0 and 1e+06")
    (vault / "hql.toml").write_text('[search]\nrrf_k = 1e-300\n', encoding="utf-8")
    assert load_app_config(vault).errors["search"].endswith(
        "`rrf_k` must be between 0.001 and 1e+06")


def test_no_edit_writes_a_value_the_next_start_would_refuse(tmp_path: Path) -> None:
    from hqltui.core.configure import write_search
    from producer.config import ConfigError

    (tmp_path / "hql.toml").write_text("[search]\nlimit = 5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="`rrf_k` must be between"):
        write_search(tmp_path, {"fusion": "rrf", "rrf_k": 1e-300})
    assert (tmp_path / "hql.toml").read_text(encoding="utf-8") == "[search]\nlimit = 5\n"


def test_strict_json_writes_null_for_what_is_not_a_finite_number() -> None:
    from hqltui.commands.common import strict_json

    text = strict_json({"score": float("inf"), "rows": [float("nan"), 1.5]}, indent=None)
    assert json.loads(text) == {"score": None, "rows": [None, 1.5]}


def test_a_history_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "history.jsonl"
    os.mkfifo(fifo)
    history = History(fifo)
    assert history.load() == []  # returns: the FIFO is never opened for a blocking read
    assert history.notice == (f"{fifo}: a FIFO (named pipe), not a regular file; the query "
                              "history is neither read nor saved (set HQL_TUI_HISTORY to a "
                              "file)")
    assert history.add("owls") is False
    assert fifo.is_fifo()  # never replaced by a regular file


# ------------------------------------------------------------------ the vault


@contextmanager
def deep_chain(top: Path, depth: int) -> Iterator[Path]:
    """``top/d/d/…/d``, made and removed one folder at a time (``os.makedirs`` and
    ``shutil.rmtree``, pytest's clean-up included, recurse once per level)."""
    chain = [top / "d"]
    for _ in range(depth - 1):
        chain.append(chain[-1] / "d")
    for folder in chain:
        folder.mkdir()
    try:
        yield chain[-1]
    finally:
        for folder in reversed(chain):
            for file in folder.iterdir():
                if not file.is_dir():
                    file.unlink()
            folder.rmdir()


def test_folders_nested_too_deep_are_skipped_with_one_warning(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "a" / "b").mkdir(parents=True)
    (vault / "top.md").write_text("# Top\n", encoding="utf-8")
    (vault / "a" / "b" / "near.md").write_text("# Near\n", encoding="utf-8")
    with deep_chain(vault, 1500) as bottom:
        (bottom / "deep.md").write_text("# Deep\n", encoding="utf-8")
        loaded = load_vault(vault)
    assert [c.name for c in loaded.cards] == ["near", "top"]
    assert loaded.warnings == [f"d/d/d/…: folders nested more than {MAX_DEPTH} deep; not read"]


def test_a_card_at_the_depth_bound_still_loads(tmp_path: Path) -> None:
    here = tmp_path
    for _ in range(MAX_DEPTH):
        here = here / "d"
        here.mkdir()
    (here / "bottom.md").write_text("# Bottom\n", encoding="utf-8")
    loaded = load_vault(tmp_path)
    assert [c.name for c in loaded.cards] == ["bottom"] and loaded.warnings == []


@pytest.mark.parametrize("command", [("query", "", "owl"), ("", "--list"),
                                    ("eval", "", "queries.toml")])
def test_an_empty_vault_argument_is_refused_not_the_current_directory(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "owl.md").write_text("# Owl\n", encoding="utf-8")
    (tmp_path / "queries.toml").write_text('[[query]]\ntext = "owl"\nrelevant = ["owl"]\n',
                                           encoding="utf-8")
    result = hql(*command, cwd=tmp_path)
    assert result.returncode == 1
    assert "the vault argument is empty (an unset variable?)" in result.stderr
    assert result.stdout.strip() in ("", '{"error"') and "owl" not in result.stdout


def test_an_empty_vault_argument_builds_no_index_of_the_current_directory(tmp_path: Path
                                                                           ) -> None:
    (tmp_path / "owl.md").write_text("# Owl\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "producer", "build", "--vault", "",
                             "--out", str(tmp_path / "index.sqlite")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "hql-semantics: the vault argument is empty (an unset variable?); fix: name an "
        "existing vault directory with --vault")
    assert not (tmp_path / "index.sqlite").exists()


# ----------------------------------------------------------- eval and tune


ENTRY = '[[query]]\ntext = "{text}"\nkind = "keyword"\nrelevant = ["{card}"]\n'


def test_a_query_written_twice_alike_counts_once_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "queries.toml"
    path.write_text("\n".join([ENTRY.format(text="owl", card="barn-owl"),
                               ENTRY.format(text="heron", card="grey-heron")] * 3),
                    encoding="utf-8")
    queries, warnings = read_labelled(path)
    assert [q.text for q in queries] == ["owl", "heron"]
    assert warnings == [f"{path}: 2 queries are written more than once with the same labels, "
                        "each counted once: 'owl' 3 times (line 1, line 11, …), "
                        "'heron' 3 times (line 6, line 16, …)"]


def test_a_query_written_twice_with_different_labels_is_refused_naming_both(
        tmp_path: Path) -> None:
    path = tmp_path / "queries.toml"
    path.write_text("\n".join([ENTRY.format(text="owl", card="barn-owl"),
                               ENTRY.format(text="heron", card="grey-heron"),
                               ENTRY.format(text="owl", card="tawny-owl")]), encoding="utf-8")
    with pytest.raises(QueriesError) as caught:
        read_labelled(path)
    assert str(caught.value) == (f"{path}: query 'owl' is labelled differently in line 1 and "
                                 "line 11")
    assert caught.value.fix == "keep one of the two entries in queries.toml"


@pytest.mark.parametrize("folds", ["0", "1"])
def test_folds_below_two_are_refused_alike_before_anything_loads(tmp_path: Path, folds: str
                                                                  ) -> None:
    result = hql("tune", "no-such-vault", "queries.toml", "--folds", folds, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "hql-tui tune: error: argument --folds: must be at least 2 (each fold is scored on "
        "queries the others hold out)")


def test_tune_on_a_terminal_says_how_many_configurations_are_scored() -> None:
    import io

    from hqltui.commands.tune import progress_line

    stream = io.StringIO()
    said = progress_line(stream)
    for done in (1, 2, 3):
        said(done, 3)
    assert stream.getvalue().split("\r") == [
        "hql-tui tune: 1 of 3 configurations scored\x1b[K",
        "hql-tui tune: 2 of 3 configurations scored\x1b[K",
        "hql-tui tune: 3 of 3 configurations scored\x1b[K\n"]
