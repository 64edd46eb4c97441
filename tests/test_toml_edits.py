"""The one TOML writer (``tune --write``, the labels file, the default index setting) on
hql.toml files as users keep them: CRLF line ends, a symlink into a dotfiles folder,
read-only. The file written is the file read, and nothing but the edit changes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hqltui.core.configure import preview_search, write_search
from producer.config import ConfigError

SETTINGS = {"fusion": "convex", "alpha": 0.7, "norm": "max"}
CRLF = '# mine\r\n[semantics]\r\nindex = ".hql/index.sqlite"  # the index\r\n\r\n[search]\r\nfusion = "rrf"\r\n'


def test_a_crlf_file_keeps_its_line_ends_and_the_diff_is_the_change(tmp_path: Path) -> None:
    toml = tmp_path / "hql.toml"
    toml.write_bytes(CRLF.encode())
    before, after = preview_search(tmp_path, SETTINGS)
    assert before == CRLF  # the preview diffs the bytes on disk
    write_search(tmp_path, SETTINGS)
    written = toml.read_bytes().decode()
    assert written.startswith(CRLF.split("fusion")[0])  # every line before the edit, as it was
    assert "\n" not in written.replace("\r\n", "")  # the added lines end CRLF too
    assert 'fusion = "convex"\r\nalpha = 0.7\r\nnorm = "max"\r\n' in written
    assert written.replace("\r\n", "\n") == after.replace("\r\n", "\n")


def test_a_file_with_lf_line_ends_is_written_with_lf(tmp_path: Path) -> None:
    toml = tmp_path / "hql.toml"
    toml.write_bytes(CRLF.replace("\r\n", "\n").encode())
    write_search(tmp_path, SETTINGS)
    assert b"\r" not in toml.read_bytes()


def test_a_symlinked_hql_toml_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    real = tmp_path / "dotfiles" / "hql.toml"
    real.parent.mkdir()
    real.write_text('[semantics]\nindex = ".hql/index.sqlite"\n', encoding="utf-8")
    (vault / "hql.toml").symlink_to(real)
    write_search(vault, SETTINGS)
    assert (vault / "hql.toml").is_symlink()
    assert 'fusion = "convex"' in real.read_text(encoding="utf-8")
    assert not list(vault.glob(".hql.toml*")) and not list(real.parent.glob(".hql.toml*"))


def test_the_file_keeps_its_permissions(tmp_path: Path) -> None:
    toml = tmp_path / "hql.toml"
    toml.write_text("[semantics]\n", encoding="utf-8")
    toml.chmod(0o600)
    write_search(tmp_path, SETTINGS)
    assert stat.S_IMODE(toml.stat().st_mode) == 0o600


def test_a_read_only_file_is_refused_in_one_line_and_left_as_it_was(tmp_path: Path) -> None:
    toml = tmp_path / "hql.toml"
    toml.write_bytes(CRLF.encode())
    toml.chmod(0o444)
    with pytest.raises(ConfigError) as caught:
        write_search(tmp_path, SETTINGS)
    assert str(caught.value) == (f"{toml}: is read-only, so it was not changed; fix: make it "
                                 "writable (chmod u+w hql.toml) and try again")
    assert toml.read_bytes() == CRLF.encode()
    assert stat.S_IMODE(toml.stat().st_mode) == 0o444
    assert os.listdir(tmp_path) == ["hql.toml"]


def test_a_byte_order_mark_is_named_not_reported_as_an_error_at_line_1(tmp_path: Path) -> None:
    from hqltui.core.config import load_app_config

    toml = tmp_path / "hql.toml"
    toml.write_bytes(b'\xef\xbb\xbf[semantics]\nindex = ".hql/index.sqlite"\n')
    config = load_app_config(tmp_path)
    message = f"{toml}: starts with a byte-order mark (U+FEFF), which TOML does not allow"
    assert message in config.errors["semantics"]
    assert config.file_fix == "save hql.toml as UTF-8 without a BOM"


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_a_dangling_or_looping_symlink_is_refused_and_nothing_is_created(
    tmp_path: Path, link: str
) -> None:
    toml = tmp_path / "hql.toml"
    if link == "dangling":
        toml.symlink_to("elsewhere.toml")
    else:
        (tmp_path / "a").symlink_to("b")
        (tmp_path / "b").symlink_to("a")
        toml.symlink_to("a")
    before = sorted(os.listdir(tmp_path))
    for edit in (lambda: preview_search(tmp_path, SETTINGS), lambda: write_search(tmp_path, SETTINGS)):
        with pytest.raises(ConfigError) as caught:
            edit()
        assert str(caught.value) == (
            f"{toml}: is a symlink to a file that does not exist (or a loop of links), so it "
            "was not changed; fix: point hql.toml at an existing file, or replace the link "
            "with a file")
    assert sorted(os.listdir(tmp_path)) == before and toml.is_symlink()


def test_a_crlf_labels_file_keeps_its_line_ends_when_a_card_is_labelled(tmp_path: Path) -> None:
    from hqltui.core.labels import change, load_labels, toggle_relevant

    path = tmp_path / "queries.toml"
    path.write_bytes(b'# my labels\r\n[[query]]\r\ntext = "owls"\r\nrelevant = ["barn-owl"]\r\n')
    change(load_labels(path), "herons", lambda label: toggle_relevant(label, "grey-heron"))
    written = path.read_bytes()
    assert written.startswith(b'# my labels\r\n[[query]]\r\ntext = "owls"\r\n')
    assert b'text = "herons"\r\n' in written and b"\n" not in written.replace(b"\r\n", b"")
