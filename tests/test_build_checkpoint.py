"""The work file on its own (no model): what it keeps, and what it never trusts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from producer.build_checkpoint import WorkFile, work_path_for

KEY = {"model": "m", "revision": "r1", "dimensions": 4, "chunk_recipe": None,
       "runtime": "torch", "vault": "v"}


def made(path: Path, key: dict[str, object]) -> list[str]:
    warnings: list[str] = []
    work = WorkFile(path, key, warnings.append, resume=True)
    parts = work.call(["a", "b"], lambda rows: None)
    parts.put(0, [0, 1], np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32))
    work.save()
    work.close()
    return warnings


def test_a_checkpointed_part_comes_back_as_it_was_made(tmp_path: Path) -> None:
    path = work_path_for(tmp_path / "index.sqlite")
    assert path.name == ".index.sqlite.resume"  # not the writer's temporary prefix
    assert made(path, KEY) == []
    warnings: list[str] = []
    work = WorkFile(path, KEY, warnings.append, resume=True)
    taken: list[int] = []
    parts = work.call(["a", "b"], taken.extend)
    raw = parts.get(0, [0, 1])
    assert raw is not None and raw.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert taken == [0, 1] and work.reused == 2 and work.available == 2
    assert work.call(["a", "c"], taken.extend).get(0, [0, 1]) is None  # other texts
    assert warnings == []


def test_a_work_file_of_another_revision_or_vault_is_ignored_in_one_line(tmp_path: Path) -> None:
    path = work_path_for(tmp_path / "index.sqlite")
    made(path, KEY)
    for changed in ({"revision": "r2"}, {"vault": "w"}, {"runtime": "onnxruntime"}):
        warnings: list[str] = []
        work = WorkFile(path, KEY | changed, warnings.append, resume=True)
        assert work.available == 0
        assert work.call(["a", "b"], lambda rows: None).get(0, [0, 1]) is None
        assert warnings == [
            ".index.sqlite.resume: an interrupted build's work file is from another model, "
            "revision, recipe, runtime or vault; ignored"
        ]


def test_full_does_not_read_it_and_finishing_removes_it(tmp_path: Path) -> None:
    path = work_path_for(tmp_path / "index.sqlite")
    made(path, KEY)
    work = WorkFile(path, KEY, [].append, resume=False)
    assert work.available == 0
    work.finish()
    assert not path.exists()


def test_a_work_file_of_either_runtime_is_ignored_by_the_other(tmp_path: Path) -> None:
    """Runtimes agree within the rebuild tolerance, not bit for bit: a resumed build must
    end with the vectors its own runtime would have written."""
    for made_by, read_by in (("torch", "onnxruntime"), ("onnxruntime", "torch")):
        path = work_path_for(tmp_path / made_by / "index.sqlite")
        path.parent.mkdir()
        made(path, KEY | {"runtime": made_by})
        warnings: list[str] = []
        work = WorkFile(path, KEY | {"runtime": read_by}, warnings.append, resume=True)
        assert work.available == 0 and len(warnings) == 1
        same = WorkFile(path, KEY | {"runtime": made_by}, [].append, resume=True)
        assert same.available == 2  # its own runtime would resume it
