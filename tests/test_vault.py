"""The vault reader and the text contract, pinned by golden values."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from producer.vault import card_text, content_hash, load_vault, split_header
from producer.yamlcore import HeaderError, load_mapping
from tests.helpers.vaults import copy_vault

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "mini"

# (name, title, text, content_hash) for every card of fixtures/mini. The texts
# were checked by hand against the contract: title, then the authored header's
# strings in sorted key order (title skipped; lists in order; maps by key;
# numbers, booleans and null contribute nothing), then the body verbatim.
GOLDEN = [
    (
        "archive/duplicate",
        "Duplicate in the archive",
        "Duplicate in the archive The archived twin of [[notes/duplicate]].\n",
        "33e5419e81d18788f18a4a7e21fb34a98a34f6eceddafb8d4e62051176cbd7b0",
    ),
    (
        "comment-header",
        "Comment-only header",
        "Comment-only header # Comment-only header\n\nThe title comes from the heading line above.\n",
        "28b11e431a64e3c245f48bca0e650b96fc6ff904a5fcd979140bbedf1165f6e9",
    ),
    (
        "core-schema",
        "Core schema scalars",
        "Core schema scalars no yes 1_000 0b101 2026-09-18 # Core schema scalars\n\nUnder the YAML 1.2 core schema the date, the underscored number, the binary\nliteral, yes and no stay strings; True is a boolean and NULL is null.\n",
        "9aa9a2c7d35008caac8c585e6edc8df2244939ff02fb4a7c0cebbe029bc96a06",
    ),
    (
        "crlf-card",
        "Windows line endings",
        "Windows line endings crlf bytes # Windows line endings\r\n\r\nThis card was saved with CRLF endings; its text keeps every carriage return.\r\nSee [[lists-and-maps]].\r\n",
        "5c04dfdaf73162fec0dbe3bbb3f1a4347d22ceafb0fc75c422e7cdc6615c580a",
    ),
    (
        "lists-and-maps",
        "Lists and nested maps",
        "Lists and nested maps lists maps first note second note Concept kim todo authored/path/value structure nesting # Lists and nested maps\n\nHeader strings are walked with keys sorted and lists kept in order. Numbers and\nbooleans add nothing. It links to [[core-schema]] {relation: explains} and to\n[[a-card-not-written-yet]].\n",
        "55ffe89545025618811ad980c7d36f7edae48d3a5cd499eb9524796da1643d25",
    ),
    (
        "merge-key",
        "Merge keys",
        "Merge keys wetland north wetland south # Merge keys\n\nThe site map inherits the habitat from the defaults and overrides the region.\n",
        "d470b62199809ab2c8dbcd3cc4e3e8be675bc04eef9571d70c50f5867a25aa5a",
    ),
    (
        "no-header",
        "no-header",
        "no-header A card with no header and no heading: its title is its name.\nLinks to [[merge-key]].\n",
        "37ac41120e715b3395ac792b3d201dcdf8ad66c479ed73604586424b87304b3a",
    ),
    (
        "non-ascii",
        "Café naïve — नमस्ते",
        "Café naïve — नमस्ते ünïcödé 鳥 # Café naïve — नमस्ते\n\nGrüße aus Zürich. The crème brûlée was served in Kraków; हिन्दी and 日本語 text\nstays exactly as written.\n",
        "466544bfab3e82c61cd1ba614a851d6ccc3ecd8c8f2a30689c8d1c957c29b9f6",
    ),
    (
        "notes/duplicate",
        "Duplicate in notes",
        "Duplicate in notes # Duplicate in notes\n\nTwo cards share the stem duplicate, so both are named by their paths.\n",
        "4b62bf5176643c1df8b8efd32d6efb6fc34f8a3728c20cd159df9eacb291f33b",
    ),
    (
        "spaced-heading",
        "Spaced heading title",
        "Spaced heading title heading \n   #   Spaced heading title   \n\nThe heading above has spaces around it and after the hash.\n",
        "24648e94d04fb742c4dc160de67ced566650fe663644f6b3496389039b3f3f0a",
    ),
]


@pytest.fixture(scope="module")
def mini():
    return load_vault(MINI)


def test_every_card_of_the_mini_vault_loads_with_no_warning(mini):
    assert [c.name for c in mini.cards] == [row[0] for row in GOLDEN]
    assert mini.warnings == []
    assert mini.is_hmd and mini.notice is None


@pytest.mark.parametrize(("name", "title", "text", "digest"), GOLDEN, ids=[r[0] for r in GOLDEN])
def test_golden_text_and_hash(mini, name, title, text, digest):
    card = mini.by_name[name]
    assert card.title == title
    assert card.text == text
    assert card.content_hash == digest
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == digest


def test_crlf_bytes_survive_into_the_text(mini):
    raw = (MINI / "crlf-card.hmd").read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") > 3, "checkout changed the fixture's bytes"
    assert "\r\n" in mini.by_name["crlf-card"].text


def test_core_schema_keeps_dates_underscores_binary_and_yes_no_as_strings():
    header = load_mapping(
        "d: 2026-09-18\nu: 1_000\nb: 0b101\ny: yes\nn: no\nt: True\nz: NULL\n"
        "o: 0o17\nx: 0x1F\ne: 1e3\nf: FALSE\ns: ~\nk: 017\non: on\n"
    )
    assert header == {
        "d": "2026-09-18",
        "u": "1_000",
        "b": "0b101",
        "y": "yes",
        "n": "no",
        "t": True,
        "z": None,
        "o": 15,
        "x": 31,
        "e": 1000.0,
        "f": False,
        "s": None,
        "k": 17,
        "on": "on",
    }


def test_an_authored_path_key_is_ordinary_text(mini):
    card = mini.by_name["lists-and-maps"]
    assert card.path == "lists-and-maps.hmd"
    assert "authored/path/value" in card.text


def test_merge_keys_are_applied(mini):
    assert mini.by_name["merge-key"].header["site"] == {"habitat": "wetland", "region": "south"}


def test_title_only_in_the_header_is_not_repeated_from_the_header():
    text = card_text("T", {"title": "T", "tags": ["a"]}, "body")
    assert text == "T a body"


def test_the_header_must_start_the_file_exactly():
    assert split_header(" ---\nx: 1\n---\nbody") == (None, " ---\nx: 1\n---\nbody")
    assert split_header("---\nx: 1\n---   \nbody") == ("x: 1\n", "body")
    assert split_header("---\r\nx: 1\r\n---\r\nbody") == ("x: 1\r\n", "body")
    assert split_header("---\nx: 1\n---") == ("x: 1\n", "")
    with pytest.raises(HeaderError):
        split_header("---\nx: 1\nno end\n")


def test_content_hash_is_sha256_of_utf8():
    assert content_hash("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_names_clash_by_stem_so_both_take_their_paths(mini):
    assert "notes/duplicate" in mini.by_name and "archive/duplicate" in mini.by_name
    assert "duplicate" not in mini.by_name


def test_links_and_unresolved_links(mini):
    assert mini.outgoing("lists-and-maps") == ["core-schema", "a-card-not-written-yet"]
    link = mini.by_name["lists-and-maps"].links[0]
    assert link.annotation == {"relation": "explains"}
    assert mini.backlinks("lists-and-maps") == ["crlf-card"]
    assert mini.unresolved() == [("lists-and-maps", "a-card-not-written-yet")]


def test_a_missing_target_linked_three_times_is_listed_once_per_card(tmp_path):
    (tmp_path / ".hmd").mkdir()
    write(tmp_path, "a.md", "# A\n\nsee [[ghost]], again [[ghost]] and [[ghost]]; also [[other]]\n")
    write(tmp_path, "b.md", "# B\n\n[[ghost]]\n")
    vault = load_vault(tmp_path)
    assert vault.unresolved() == [("a", "ghost"), ("a", "other"), ("b", "ghost")]
    assert vault.unresolved("a") == [("a", "ghost"), ("a", "other")]


# ------------------------------------------------------------------ discovery


def write(root: Path, rel: str, content: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")


def test_dot_entries_are_skipped_at_every_depth_and_other_extensions_ignored(tmp_path):
    write(tmp_path, "a.hmd", "# A\n")
    write(tmp_path, ".hidden.md", "# hidden\n")
    write(tmp_path, ".git/x.md", "# git\n")
    write(tmp_path, "sub/.hql/y.md", "# hql\n")
    write(tmp_path, "sub/b.markdown", "# B\n")
    write(tmp_path, "sub/c.txt", "# C\n")
    write(tmp_path, "sub/D.MD", "# D\n")
    vault = load_vault(tmp_path)
    assert [(c.name, c.path) for c in vault.cards] == [("a", "a.hmd"), ("b", "sub/b.markdown")]


def test_a_directory_without_hmd_loads_with_one_notice(tmp_path):
    write(tmp_path, "a.md", "# A\n")
    vault = load_vault(tmp_path)
    assert len(vault.cards) == 1 and not vault.is_hmd
    assert "not an HMD vault" in vault.notice


def test_symlinks_escaping_the_vault_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# Secret\n")
    vault_dir = tmp_path / "vault"
    write(vault_dir, "inside.md", "# Inside [[secret]]\n")
    write(vault_dir, "sub/real.md", "# Real\n")
    os.symlink(outside, vault_dir / "out-dir")
    os.symlink(outside / "secret.md", vault_dir / "secret.md")
    os.symlink(vault_dir / "sub", vault_dir / "loop")  # inside: followed, no endless loop
    vault = load_vault(vault_dir)
    names = [c.name for c in vault.cards]
    assert "secret" not in names
    assert sorted(names) == ["inside", "real"]
    assert sum("outside the vault" in w for w in vault.warnings) == 2


def test_names_and_paths_of_odd_file_names_through_symlinks(tmp_path):
    """Control characters, inner dots, shared stems and an inside symlink alias: the
    names and paths a user sees (the loader walks plain strings, not path objects)."""
    for rel in ("a.md", "a.hmd", "sub/a.md", "a..md", "weird.tar.md", "sub/c.md",
                "other/c.hmd", "other/esc\x1b[31m.md", "sp ace/x y.md", "ünï.md"):
        write(tmp_path, rel, "# H\n")
    os.symlink("sub/c.md", tmp_path / "alias.md")  # inside: one card, at its real path
    os.symlink("sub", tmp_path / "loop")  # a second way into sub/: walked once
    os.symlink("self1.md", tmp_path / "self2.md")
    os.symlink("self2.md", tmp_path / "self1.md")
    vault = load_vault(tmp_path)
    assert [(c.name, c.path) for c in vault.cards] == [
        ("a.", "a..md"),
        ("a.hmd", "a.hmd"),
        ("a.md", "a.md"),
        ("esc\x1b[31m", "other/esc\x1b[31m.md"),
        ("other/c", "other/c.hmd"),
        ("sub/a", "sub/a.md"),
        ("sub/c", "sub/c.md"),
        ("weird.tar", "weird.tar.md"),
        ("x y", "sp ace/x y.md"),
        ("ünï", "ünï.md"),
    ]
    assert vault.warnings == [
        "self1.md: a symlink loop (it leads back to itself); skipped",
        "self2.md: a symlink loop (it leads back to itself); skipped",
    ]


# --------------------------------------------------------------- skip rules

BROKEN = {
    "unterminated": ("---\ntitle: x\n# never closed\n", "unterminated"),
    "invalid-yaml": ("---\ntitle: [a, b\n---\n# x\n", "invalid YAML"),
    "not-a-mapping": ("---\n- a\n- b\n---\n# x\n", "must be a YAML mapping"),
    "non-string-key": ("---\n1: one\n---\n# x\n", "map keys must be strings"),
    "custom-tag": ("---\nx: !color red\n---\n# x\n", "tag !color"),
    "non-finite": ("---\nx: .inf\n---\n# x\n", "not a finite number"),
    "nan": ("---\nx: .NaN\n---\n# x\n", "not a finite number"),
    "huge-int": ("---\nx: 9223372036854775808\n---\n# x\n", "outside 64-bit range"),
    "not-utf8": (b"---\ntitle: caf\xe9\n---\n# x\n", "not UTF-8"),
    "bad-annotation": ("# x\n[[a]] {relation: [unclosed\n", "link annotation"),
}


@pytest.mark.parametrize("stem", sorted(BROKEN))
def test_each_skip_rule_names_the_file_and_keeps_the_rest(tmp_path, stem):
    content, reason = BROKEN[stem]
    write(tmp_path, "good-one.hmd", "---\ntitle: Good one\n---\nfine\n")
    write(tmp_path, "nested/good-two.md", "# Good two\n")
    write(tmp_path, f"{stem}.hmd", content)
    vault = load_vault(tmp_path)
    assert [c.name for c in vault.cards] == ["good-one", "good-two"]
    assert len(vault.warnings) == 1
    assert vault.warnings[0].startswith(f"{stem}.hmd: ")
    assert reason in vault.warnings[0]
    assert vault.warnings[0].endswith("document skipped")


def test_integer_at_the_64_bit_edge_is_accepted():
    assert load_mapping("x: 9223372036854775807\ny: -9223372036854775808") == {
        "x": 2**63 - 1,
        "y": -(2**63),
    }


def test_ten_cards_two_broken_load_eight_with_two_warnings(tmp_path):
    for i in range(8):
        write(tmp_path, f"card-{i}.hmd", f"---\ntitle: Card {i}\n---\n# Card {i}\n")
    write(tmp_path, "broken-yaml.hmd", "---\ntitle: [oops\n---\n")
    write(tmp_path, "deep/latin1.md", b"caf\xe9\n")
    vault = load_vault(tmp_path)
    assert len(vault.cards) == 8
    assert len(vault.warnings) == 2
    assert vault.warnings[0].startswith("broken-yaml.hmd: invalid YAML")
    assert vault.warnings[1].startswith("deep/latin1.md: not UTF-8")


def test_relation_cards_resolve_or_become_concepts_with_a_note(tmp_path):
    write(tmp_path, "owl.hmd", "# Owl\n")
    write(tmp_path, "strigiformes.hmd", "# Strigiformes\n")
    rel = "---\nmetadata:\n  knowledge:\n    type: Relation\n    relation: {{source: {s}, target: {t}}}\n---\n"
    write(tmp_path, "owl-in-order.hmd", rel.format(s="owl", t="strigiformes"))
    write(tmp_path, "ghost-rel.hmd", rel.format(s="ghost", t="strigiformes"))
    vault = load_vault(tmp_path)
    assert [(r.card, r.source, r.target) for r in vault.relations] == [
        ("owl-in-order", "owl", "strigiformes")
    ]
    assert vault.warnings == [
        "ghost-rel: declares knowledge.type: Relation but its endpoints do not resolve; "
        "kept as a concept card"
    ]
    assert vault.backlinks("strigiformes") == ["owl"]


def test_parse_cache_serves_unchanged_files_and_rereads_changed_ones(tmp_path):
    from producer.parse_cache import ParseCache

    root = tmp_path / "v"
    write(root, "a.hmd", "---\ntitle: A\n---\none\n")
    write(root, "b.hmd", "# B\n")
    cold = load_vault(root, cache=ParseCache(root, tmp_path / "cache"))
    write(root, "a.hmd", "---\ntitle: A changed\n---\none two\n")
    (root / "b.hmd").unlink()
    warm = load_vault(root, cache=ParseCache(root, tmp_path / "cache"))
    assert [c.title for c in warm.cards] == ["A changed"]
    assert warm.cards[0].content_hash != cold.by_name["a"].content_hash
    assert warm.cards[0].text == load_vault(root).cards[0].text


def test_a_warm_load_gives_every_card_the_text_and_hash_of_a_fresh_read(tmp_path):
    """The cache keeps each header's joined strings: the texts it gives must be the
    contract's (``card_text``) for headers with no strings, an empty string, lists,
    nested maps and an authored title, and for the golden fixture."""

    from producer.parse_cache import ParseCache

    root = tmp_path / "v"
    copy_vault("mini", root)
    write(root, "numbers.hmd", "---\ncount: 3\nflag: true\n---\nno strings here\n")
    write(root, "empty.hmd", "---\nnote: ''\ntags: [a, '', b]\n---\n# Empty\n")
    write(root, "nested.hmd", "---\ntitle: N\nz: {b: [x, {c: y}], a: w}\n---\nbody\n")
    fresh = load_vault(root)
    load_vault(root, cache=ParseCache(root, tmp_path / "cache"))  # writes the cache
    warm = load_vault(root, cache=ParseCache(root, tmp_path / "cache"))
    assert [(c.name, c.text, c.content_hash) for c in warm.cards] == [
        (c.name, c.text, c.content_hash) for c in fresh.cards]
    for card in warm.cards:
        assert card.text == card_text(card.title, card.header, card.body)
    by_name = warm.by_name
    assert by_name["numbers"].text == "numbers no strings here\n"
    assert by_name["empty"].text == "Empty  a  b # Empty\n"  # empty strings keep their places
    assert by_name["nested"].text == "N w x y body\n"
    assert {name: by_name[name].text for name, _, _, _ in GOLDEN} == {
        name: text for name, _, text, _ in GOLDEN}


def test_a_yaml_error_names_the_line_of_the_file(tmp_path):
    write(tmp_path, "bad.hmd", "---\ntitle: ok\nplace: [north, south\n---\n# x\n")
    (warning,) = load_vault(tmp_path).warnings
    assert "at line 4, column 1" in warning


def test_files_differing_only_by_extension_keep_it_in_their_names(tmp_path):
    write(tmp_path, "a.md", "# A markdown\n")
    write(tmp_path, "a.hmd", "# A hmd\n")
    write(tmp_path, "b.hmd", "# B\n")
    vault = load_vault(tmp_path)
    assert [c.name for c in vault.cards] == ["a.hmd", "a.md", "b"]


def test_a_self_referencing_alias_skips_only_that_card(tmp_path):
    write(tmp_path, "loop.hmd", "---\na: &x [*x]\n---\n# Loop\n")
    write(tmp_path, "fine.hmd", "# Fine\n")
    vault = load_vault(tmp_path)
    assert [c.name for c in vault.cards] == ["fine"]
    assert vault.warnings == ["loop.hmd: invalid YAML: an alias refers to itself; document skipped"]
