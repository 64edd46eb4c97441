"""SEE ALSO as ground truth: a stripped copy of a man-page vault and its targets.

A man page's SEE ALSO section is its author's list of related pages, so it
judges ``related`` on text nobody here wrote. The measure must not read it:
this writes a copy of a vault converted by ``benchmarks.manpages`` with every
SEE ALSO section removed from the card files (from its ``## SEE ALSO``
heading to the next heading of the same or a higher level, or the end), so
neither the embedding index built from the copy nor any lexical signal read
from it sees the list. The targets are parsed first, from the original text,
and written to ``seealso.json`` beside the copy (outside the vault).

Targets are ``name(section)`` references. A card is named by its page's file
name (``open.2``, ``SSL_read.3ssl``, ``Dpkg::Arch.3perl``), so ``name(3)``
maps to ``name.3`` when the vault has it, else to the one page of that name
whose section starts with the same digit (``name.3ssl``); ``name(3p)`` maps
to ``name.3p``, else the same way through its digit. Targets outside the
vault and the page itself are dropped. Identical-text cards are left to the
measure, which knows the content hashes.

    python -m benchmarks.seealso SRC_VAULT OUT_DIR [--replace]

writes ``OUT_DIR/vault/`` (the stripped vault, with ``hql.toml`` and
``.hmd/``) and ``OUT_DIR/seealso.json`` (``{card: [target, ...]}`` in the
order the page lists them).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
SEE_ALSO = re.compile(r"(?:\d+\.\s*)?see\s+also:?", re.IGNORECASE)
REFERENCE = re.compile(r"([A-Za-z0-9_][\w.:+@-]*)\s?\((\d[A-Za-z]*)\)")
CARD_SUFFIXES = (".md", ".hmd", ".markdown")


def split_see_also(body: str) -> tuple[str, str]:
    """``body`` without its SEE ALSO sections, and those sections' text."""
    kept: list[str] = []
    removed: list[str] = []
    level = 0  # the heading level of the SEE ALSO section being removed, 0 when none
    for line in body.splitlines(keepends=True):
        m = HEADING.match(line.rstrip("\r\n"))
        if m:
            depth = len(m.group(1))
            if level and depth <= level:
                level = 0
            if not level and SEE_ALSO.fullmatch(m.group(2)):
                level = depth
        (removed if level else kept).append(line)
    return "".join(kept), "".join(removed)


def references(text: str) -> list[tuple[str, str]]:
    """The ``name(section)`` references in ``text``, in order, without repeats."""
    seen: dict[tuple[str, str], None] = {}
    for m in REFERENCE.finditer(text):
        seen.setdefault((m.group(1).rstrip(".,"), m.group(2).lower()), None)
    return list(seen)


def resolver(names: set[str]):
    """A function from ``(name, section)`` to the card it names, or None."""
    by_digit: dict[tuple[str, str], list[str]] = {}
    for card in sorted(names):
        stem, dot, section = card.rpartition(".")
        if dot and section[:1].isdigit():
            by_digit.setdefault((stem, section[0]), []).append(card)

    def resolve(name: str, section: str) -> str | None:
        exact = f"{name}.{section}"
        if exact in names:
            return exact
        bare = f"{name}.{section[0]}"
        if bare in names:
            return bare
        pages = by_digit.get((name, section[0]), [])
        return pages[0] if len(pages) == 1 else None

    return resolve


def card_name(path: Path) -> str:
    """The converter's card name: the file name without its Markdown suffix."""
    for suffix in CARD_SUFFIXES:
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.stem


def strip_vault(source: Path, out: Path) -> dict[str, list[str]]:
    """Write the stripped copy of ``source`` to ``out/vault``; return the targets."""
    files = sorted(
        p for p in source.rglob("*")
        if p.is_file() and p.name.endswith(CARD_SUFFIXES)
        and not any(part.startswith(".") for part in p.relative_to(source).parts)
    )
    names = {card_name(p) for p in files}
    resolve = resolver(names)
    vault = out / "vault"
    targets: dict[str, list[str]] = {}
    for path in files:
        raw = path.read_bytes().decode("utf-8")
        kept, section = split_see_also(raw)
        me = card_name(path)
        found = [resolve(n, s) for n, s in references(section)]
        listed = list(dict.fromkeys(t for t in found if t and t != me))
        if listed:
            targets[me] = listed
        dest = vault / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(kept.encode("utf-8"))
    for extra in ("hql.toml", ".hmd"):
        src = source / extra
        if src.is_dir():
            shutil.copytree(src, vault / extra, dirs_exist_ok=True)
        elif src.is_file():
            shutil.copy2(src, vault / extra)
    (vault / ".hmd").mkdir(parents=True, exist_ok=True)
    (out / "seealso.json").write_text(json.dumps(targets, indent=1, sort_keys=True) + "\n")
    return targets


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.seealso",
                                description=__doc__.split("\n")[0])
    p.add_argument("source", type=Path, help="a vault written by benchmarks.manpages")
    p.add_argument("out", type=Path, help="the folder for vault/ and seealso.json")
    p.add_argument("--replace", action="store_true", help="remove OUT/vault first")
    args = p.parse_args(argv)
    if (args.out / "vault").exists():
        if not args.replace:
            print(f"{args.out / 'vault'} exists; pass --replace", file=sys.stderr)
            return 1
        shutil.rmtree(args.out / "vault")
    targets = strip_vault(args.source, args.out)
    total = sum(len(t) for t in targets.values())
    print(f"{len(targets)} cards list {total} SEE ALSO targets inside the vault")
    return 0


if __name__ == "__main__":
    sys.exit(main())
