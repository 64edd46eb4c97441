"""The man-page converter (benchmarks/manpages.py) on committed synthetic troff pages.

The pages in tests/manpages/ were written for these tests (no real man pages
are needed, a machine may have none): man(7), mdoc(7), a pod2man-style
preamble, a tbl table, a page without NAME and a `.so` alias. Each test
converts them into a vault and reads it back with the project's own loader.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from benchmarks.manpages import convert, is_alias, main, unescape, write_vault
from producer.config import load_producer_config
from producer.vault import load_vault
from tests.helpers.vaults import write_cards

PAGES = Path(__file__).parent / "manpages"


def _man_dir(tmp_path: Path) -> Path:
    """A man directory: man1/*.gz from the committed pages, a symlink, a non-gz file."""
    man = tmp_path / "man"
    (man / "man1").mkdir(parents=True)
    (man / "man3").mkdir()
    for page in sorted(PAGES.glob("*.1")):
        data = gzip.compress(page.read_bytes(), mtime=0)
        (man / "man1" / f"{page.name}.gz").write_bytes(data)
    os.symlink("frobnicate.1.gz", man / "man1" / "frob.1.gz")
    (man / "man1" / "README").write_text("not a page\n")
    broken = "\n".join([".TH BYTES 3", ".SH NAME", "bytes \\- caf\xe9 \\(em ok"])
    (man / "man3" / "bytes.3.gz").write_bytes(gzip.compress(broken.encode("latin-1"), mtime=0))
    return man


def _cards(root: Path) -> dict[str, object]:
    vault = load_vault(root)
    assert not [w for w in vault.warnings if "not an HMD vault" in str(w)]
    return {card.name: card for card in vault.cards}


def test_man_page_title_body_and_escapes() -> None:
    page = convert((PAGES / "frobnicate.1").read_text(), "frobnicate.1", "1")
    assert page.title == "frobnicate - twist the widgets of a directory"
    body = page.body
    assert body.startswith("# FROBNICATE(1)\n\n## NAME\n")
    assert "## SYNOPSIS" in body and "### Options in detail" in body and "## SEE ALSO" in body
    assert "[-q] [--level=N]" in body
    assert "twists every widget — gently – and prints “done”." in body
    assert "measured in × units; été and A are" in body
    assert "spelled out, “quoted”, at 30°." in body
    assert "A long line joined to the next." in body  # a trailing backslash joins lines
    assert "-q, --quiet\nsay nothing at all." in body  # .BR alternates fonts, no spaces
    assert "twist N times, then stop." in body  # \c joins the next line
    assert "•\na bullet item" in body
    assert "twist(1),\nwidget(5)" in body
    for junk in ("\\f", "\\(", "\\-", ".TP", ".IP", ".nf", "CW", "\\s", "\\h"):
        assert junk not in body, junk


def test_mdoc_page() -> None:
    page = convert((PAGES / "mdocfrob.1").read_text(), "mdocfrob.1", "1")
    assert page.title == "mdocfrob - reshape the gadgets"
    body = page.body
    assert "mdocfrob\n[-ab]\n[-o outfile]\ngadget ..." in body
    assert "/etc/gadgets" in body and "“shaped”" in body
    assert "-o outfile\nWrite to\noutfile,\nnot stdout." in body
    assert "The mdocfrob utility exits 0 on success" in body
    assert "frobnicate(1),\ngadgets(5)" in body
    for junk in (".Dd", "January", ".Os", "Bl", "-tag", "Fl ", "Xr"):
        assert junk not in body, junk


def test_definitions_and_conditionals_print_nothing() -> None:
    page = convert((PAGES / "podfrob.1").read_text(), "podfrob.1", "1")
    assert page.title == 'podfrob - polish the "sprockets"'
    body = page.body
    assert "Sprockets are polished in place." in body
    assert "  podfrob --all\n  podfrob sprocket.txt" in body
    assert "They whirl when done." in body  # .ds defines a string, \*(Wh uses it
    for junk in ("Vertical space", "verbatim", "IX", "ds ", "br", "\\{", "Header", ".5v"):
        assert junk not in body, junk


def test_tables_keep_cells_and_drop_formats() -> None:
    body = convert((PAGES / "tablefrob.1").read_text(), "tablefrob.1", "1").body
    assert "Knob  Turns\nalpha  12\nbeta, the long one\n7\n" in body
    assert "After the table.\nThe end." in body
    for junk in ("allbox", "l n", "T{", "T}", "sup", "box", "drawn"):
        assert junk not in body, junk


def test_page_without_name_is_titled_by_its_card_name() -> None:
    assert convert((PAGES / "noname.1").read_text(), "noname.1", "1").title == "noname.1"


def test_title_is_the_first_paragraph_of_name() -> None:
    source = ".TH HD 1\n.SH NAME\nhd \\- show bytes\n.sp\n\\fBhd\\fP \\fIfile\\fP\n.SH OPTIONS\n"
    page = convert(source, "hd.1", "1")
    assert page.title == "hd - show bytes"
    assert "## NAME\n\nhd - show bytes\n\nhd file\n\n## OPTIONS" in page.body


def test_alias_pages_are_recognised() -> None:
    assert is_alias((PAGES / "alias.1").read_text())
    assert not is_alias((PAGES / "frobnicate.1").read_text())


def test_unescape_unknown_and_numeric() -> None:
    assert unescape(r"a\[u2192]b\[uD800]c\N'66'\(zzd\qe") == "a→bcBdqe"
    assert unescape(r'kept \" a comment') == "kept "


def test_vault_names_titles_skips_and_config(tmp_path: Path) -> None:
    man = _man_dir(tmp_path)
    out = tmp_path / "vault"
    tally = write_vault(out, man, ["1", "3"])
    assert (tally.written, tally.symlinks, tally.aliases) == (6, 1, 1)
    assert (out / ".hmd").is_dir()
    config = load_producer_config(out)
    assert (config.index, config.errors) == (".hql/index.sqlite", {})
    cards = _cards(out)
    assert sorted(cards) == [
        "bytes.3", "frobnicate.1", "mdocfrob.1", "noname.1", "podfrob.1", "tablefrob.1",
    ]
    assert cards["frobnicate.1"].path == "man1/frobnicate.1.md"
    assert cards["frobnicate.1"].title == "frobnicate - twist the widgets of a directory"
    assert cards["podfrob.1"].title == 'podfrob - polish the "sprockets"'
    # Latin-1 bytes are not UTF-8: decoded with replacement, the card still loads.
    assert cards["bytes.3"].title == "bytes - caf\ufffd — ok"
    assert cards["bytes.3"].header["section"] == "3"


def test_same_pages_give_byte_identical_vaults(tmp_path: Path) -> None:
    man = _man_dir(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    write_vault(a, man, ["1", "3"])
    write_vault(b, man, ["1", "3"])
    files_a = sorted(p.relative_to(a) for p in a.rglob("*"))
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*"))
    for rel in files_a:
        if (a / rel).is_file():
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_every_kth_page_and_sections(tmp_path: Path) -> None:
    man = _man_dir(tmp_path)
    out = tmp_path / "sample"
    write_vault(out, man, ["1"], every=2)
    # man1 pages kept in name order (alias and symlink skipped): frobnicate, mdocfrob,
    # noname, podfrob, tablefrob; every second one from the first.
    assert sorted(_cards(out)) == ["frobnicate.1", "noname.1", "tablefrob.1"]


def test_a_sample_keeps_the_pages_a_query_set_names(tmp_path: Path) -> None:
    man = _man_dir(tmp_path)
    queries = tmp_path / "q.toml"
    queries.write_text('[[query]]\ntext = "frob a pod"\nkind = "paraphrase"\n'
                       'relevant = ["podfrob.1"]\n', encoding="utf-8")
    out = tmp_path / "sample"
    assert main([str(out), "--man-dir", str(man), "--every", "2", "--keep", str(queries)]) == 0
    assert sorted(_cards(out)) == ["frobnicate.1", "noname.1", "podfrob.1", "tablefrob.1"]


def test_refuses_to_write_over_a_directory(tmp_path: Path, capsys) -> None:
    man = _man_dir(tmp_path)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main([str(other), "--man-dir", str(man)]) == 1
    assert capsys.readouterr().err.strip().endswith("exists and is not empty (--replace rewrites a vault)")
    assert main([str(other), "--man-dir", str(man), "--replace"]) == 1
    assert "not a vault (no .hmd/)" in capsys.readouterr().err
    assert (other / "keep.txt").read_text() == "mine"
    vault = tmp_path / "vault"
    assert main([str(vault), "--man-dir", str(man)]) == 0
    assert capsys.readouterr().out.startswith("5 cards written to")
    assert main([str(vault), "--man-dir", str(man), "--replace"]) == 0


def test_no_pages_is_one_line(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "v"), "--man-dir", str(tmp_path), "--sections", "9"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no man9 pages (*.gz) found" in err
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize("bad", ["\x00", "\x1b[1m", "\x85", "\ufffe"])
def test_control_characters_never_reach_the_header(tmp_path: Path, bad: str) -> None:
    source = f".TH X 1\n.SH NAME\nx \\- one{bad}two\n.SH DESCRIPTION\nbody{bad}\n"
    page = convert(source, "x.1", "1")
    root = write_cards(tmp_path / "v", {"x.1": page.card()})
    card = _cards(root)["x.1"]
    assert card.title.startswith("x - one") and card.title.endswith("two")
