"""Reading a vault: discovery, names, headers, titles, links and the text contract.

This module is the one implementation of the card text contract; the producer
embeds ``Card.text`` and the app scores it, so the two can never drift apart.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from producer.vaultpath import vault_problem as vault_problem  # re-exported
from producer.yamlcore import Header, HeaderError, header_strings, load_mapping

if TYPE_CHECKING:
    from producer.parse_cache import ParseCache

EXTENSIONS = (".hmd", ".md", ".markdown")
NOT_HMD_NOTICE = "{root}: not an HMD vault (no .hmd/ directory); reading its cards anyway"


@dataclass(frozen=True)
class Link:
    """One ``[[target]]`` in a card body, with its optional ``{…}`` annotation."""

    target: str
    annotation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Relation:
    """A relation card's edge, present only when both endpoints are cards."""

    card: str
    source: str
    target: str


@dataclass(frozen=True)
class Card:
    name: str
    path: str  # vault-relative, POSIX separators
    title: str
    header: Header
    body: str
    text: str
    content_hash: str
    links: tuple[Link, ...] = ()

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.header.get("metadata")
        return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class Parsed:
    """What one file yields before names are known (cacheable by path, size, mtime)."""

    header: Header
    body: str
    heading_title: str | None
    links: tuple[Link, ...]
    # The header's strings joined (``header_text``), made once per parse and cached with
    # it: walking every header again on each warm load cost a tenth of the load.
    header_text: str | None


class VaultWarning(str):
    """A loader warning: its text, and its kind (``link`` for a relation whose endpoints do
    not resolve, ``loader`` otherwise), so that no reader classifies it by its wording."""

    kind: str

    def __new__(cls, text: str, kind: str = "loader") -> VaultWarning:
        made = super().__new__(cls, text)
        made.kind = kind
        return made


@dataclass
class Vault:
    root: Path
    cards: list[Card]
    warnings: list[str]
    is_hmd: bool
    relations: list[Relation] = field(default_factory=list)
    by_name: dict[str, Card] = field(default_factory=dict)
    _incoming: dict[str, list[str]] | None = field(default=None, init=False, repr=False,
                                                   compare=False)

    def __post_init__(self) -> None:
        if not self.by_name:
            self.by_name = {card.name: card for card in self.cards}

    @property
    def notice(self) -> str | None:
        return None if self.is_hmd else NOT_HMD_NOTICE.format(root=self.root)

    def outgoing(self, name: str) -> list[str]:
        card = self.by_name.get(name)
        return [link.target for link in card.links] if card else []

    def backlinks(self, name: str) -> list[str]:
        """The cards linking to ``name`` (links and relations), sorted; every card's
        are gathered on the first call (a card pane asks on each answer)."""
        if self._incoming is None:
            incoming: dict[str, set[str]] = {}
            for c in self.cards:
                for link in c.links:
                    incoming.setdefault(link.target, set()).add(c.name)
            for r in self.relations:
                incoming.setdefault(r.target, set()).add(r.source)
            self._incoming = {target: sorted(names) for target, names in incoming.items()}
        return list(self._incoming.get(name, ()))

    def unresolved(self, name: str | None = None) -> list[tuple[str, str]]:
        """(card, target) for each link whose target is not a card name, once per pair.

        A card that links to the same missing target several times is one problem, not
        several: listing it once keeps `--list` and the warnings strip readable.
        """
        cards = [self.by_name[name]] if name in self.by_name else self.cards
        pairs = (
            (c.name, link.target)
            for c in cards
            for link in c.links
            if link.target not in self.by_name
        )
        return list(dict.fromkeys(pairs))


# --------------------------------------------------------------------------- text


def split_header(source: str) -> tuple[str | None, str]:
    """Split a file into (header YAML or None, body); raise HeaderError if unterminated."""
    if source.startswith("---\n"):
        start = 4
    elif source.startswith("---\r\n"):
        start = 5
    else:
        return None, source
    pos = start
    while pos <= len(source):
        end = source.find("\n", pos)
        line_end = len(source) if end < 0 else end
        if source[pos:line_end].rstrip() == "---":
            body_start = len(source) if end < 0 else end + 1
            return source[start:pos], source[body_start:]
        if end < 0:
            break
        pos = end + 1
    raise HeaderError("unterminated header (no closing ---)")


def heading_title(body: str) -> str | None:
    for line in body.split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("# "):
            return trimmed[2:].strip()
    return None


def card_text(title: str, header: Header, body: str) -> str:
    """The text contract: title, the authored header's strings, the body, space-joined."""
    return joined_text(title, header_text(header), body)


def header_text(header: Header) -> str | None:
    """The authored header's strings, space-joined; None when it has none."""
    strings = header_strings(header)
    return " ".join(strings) if strings else None


def joined_text(title: str, strings: str | None, body: str) -> str:
    """``card_text`` from the header's joined strings (``header_text``)."""
    return f"{title} {body}" if strings is None else f"{title} {strings} {body}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _annotation_span(body: str, start: int) -> int:
    """Index just past the ``}`` closing the flow map opened at ``start``."""
    depth, quote, i = 0, "", start
    while i < len(body):
        ch = body[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == "\n":
            break
        i += 1
    raise HeaderError(f"unterminated link annotation at body byte {len(body[:start].encode())}")


def parse_links(body: str) -> tuple[Link, ...]:
    links: list[Link] = []
    pos = 0
    while True:
        open_at = body.find("[[", pos)
        if open_at < 0:
            break
        close_at = body.find("]]", open_at + 2)
        if close_at < 0:
            break
        target = body[open_at + 2 : close_at].strip()
        pos = close_at + 2
        annotation: dict[str, Any] = {}
        rest = pos
        while rest < len(body) and body[rest] == " ":
            rest += 1
        if rest < len(body) and body[rest] == "{":
            end = _annotation_span(body, rest)
            try:
                annotation = load_mapping(body[rest:end])
            except HeaderError as exc:
                where = len(body[:rest].encode())
                raise HeaderError(f"link annotation at body byte {where}: {exc}") from None
            pos = end
        if target:
            links.append(Link(target, annotation))
    return tuple(links)


def parse_source(source: str) -> Parsed:
    raw_header, body = split_header(source)
    header = load_mapping(raw_header, line_offset=1) if raw_header is not None else {}
    return Parsed(header, body, heading_title(body), parse_links(body), header_text(header))


def make_card(name: str, path: str, parsed: Parsed) -> Card:
    authored = parsed.header.get("title")
    title = authored if isinstance(authored, str) else (parsed.heading_title or name)
    text = joined_text(title, parsed.header_text, parsed.body)
    return Card(
        name, path, title, parsed.header, parsed.body, text, content_hash(text), parsed.links
    )


# ---------------------------------------------------------------------- discovery


def discover(root: Path) -> tuple[list[PurePosixPath], list[str]]:
    """Document paths relative to ``root`` in path order, and warnings about links not followed."""
    found, warnings = _discover(str(root))
    return [PurePosixPath(rel) for rel in found], warnings


def _inside(path: str, real_root: str) -> bool:
    """Is the resolved ``path`` the vault's real root or under it (``Path.is_relative_to``)?"""
    prefix = real_root if real_root.endswith(os.sep) else real_root + os.sep
    return path == real_root or path.startswith(prefix)


# Folders below the vault root read at most this deep: deeper ones are skipped with one
# warning (a 1,500-deep chain would exhaust the walk's recursion and the path length).
MAX_DEPTH = 128


def _discover(root: str) -> tuple[list[str], list[str]]:
    """``discover`` on plain strings (vault-relative, ``/``-separated): a vault of many
    thousand files is walked without making a path object per file."""
    real_root = os.path.realpath(root)
    found: list[str] = []
    warnings: list[str] = []
    visited: set[str] = {real_root}
    symlinks = False
    too_deep: list[str] = []

    def walk(directory: str, rel: str, real: str, depth: int) -> None:
        nonlocal symlinks
        if depth > MAX_DEPTH:
            too_deep.append(rel)
            return
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            warnings.append(f"{rel or '.'}: cannot be read ({exc.strerror}); skipped")
            return
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            child = f"{rel}/{name}" if rel else name
            document = name.endswith(EXTENSIONS)
            mode = _entry_mode(entry, document)
            if isinstance(mode, OSError):
                if document or entry.is_symlink():
                    warnings.append(f"{child}: {_unreachable(entry, mode)}; skipped")
                continue
            is_dir = stat.S_ISDIR(mode)
            if entry.is_symlink():
                symlinks = True
                target = os.path.realpath(entry.path)
                if not _inside(target, real_root):
                    if is_dir or document:
                        warnings.append(
                            f"{child}: a symlink leading outside the vault; not followed"
                        )
                    continue
                if is_dir and target in visited:
                    continue
            if is_dir:
                # A plain folder's real path is its parent's and its name: no realpath per
                # level, which costs as many lookups as the path is deep.
                real_child = target if entry.is_symlink() else os.path.join(real, name)
                visited.add(real_child)
                walk(entry.path, child, real_child, depth + 1)
            elif document and stat.S_ISREG(mode):
                found.append(child)
            elif document:
                warnings.append(f"{child}: {_file_kind(mode)}, not a regular file; skipped")

    walk(root, "", real_root, 0)
    if too_deep:
        head = "/".join(too_deep[0].split("/")[:3])  # the whole path may be pages long
        more = f" and {len(too_deep) - 1} more places" if len(too_deep) > 1 else ""
        warnings.append(f"{head}/…{more}: folders nested more than {MAX_DEPTH} deep; "
                        "not read")
    found.sort(key=lambda rel: rel.split("/"))
    if symlinks:
        found = _one_path_per_file(root, real_root, found)
    return found, warnings


def _entry_mode(entry: os.DirEntry[str], document: bool) -> int | OSError:
    """The file type of what ``entry`` leads to, from the directory listing where it
    says (no system call), else by ``stat`` (never ``open``: a FIFO would block)."""
    try:
        if entry.is_symlink():
            return os.stat(entry.path).st_mode
        if entry.is_dir(follow_symlinks=False):
            return stat.S_IFDIR
        if entry.is_file(follow_symlinks=False):
            return stat.S_IFREG
        return entry.stat(follow_symlinks=False).st_mode if document else 0
    except OSError as exc:
        return exc


def _unreachable(entry: os.DirEntry[str], exc: OSError) -> str:
    """Why a directory entry cannot be followed, in the user's words."""
    if exc.errno == errno.ELOOP:
        return "a symlink loop (it leads back to itself)"
    if exc.errno == errno.ENOENT and entry.is_symlink():
        return f"a dangling symlink (its target {os.readlink(entry.path)!r} does not exist)"
    return f"cannot be read ({exc.strerror})"


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _one_path_per_file(root: str, real_root: str, found: list[str]) -> list[str]:
    """A file reached through an inside symlink too is one card, at its real path."""
    prefix = real_root if real_root.endswith(os.sep) else real_root + os.sep
    chosen: dict[str, str] = {}
    for rel in found:
        real = os.path.realpath(os.path.join(root, rel))
        canonical = real[len(prefix):].replace(os.sep, "/") == rel
        if real not in chosen or canonical:
            chosen[real] = rel
    keep = set(chosen.values())
    return [rel for rel in found if rel in keep]


def _stem(rel: str) -> str:
    """``PurePosixPath(rel).stem``: the file name without its last suffix."""
    name = rel.rpartition("/")[2]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _without_suffix(rel: str) -> str:
    """``PurePosixPath(rel).with_suffix("").as_posix()``."""
    stem = _stem(rel)
    return rel[: len(rel) - len(rel.rpartition("/")[2])] + stem


def assign_names(paths: list[PurePosixPath]) -> dict[PurePosixPath, str]:
    """Stems, except that every document sharing a stem is named by its path.

    Two files that differ only by extension (``a.md``, ``a.hmd``) would still
    share a name, so those keep their extension too.
    """
    return dict(zip(paths, _names([p.as_posix() for p in paths]), strict=True))


def _names(rels: list[str]) -> list[str]:
    """``assign_names`` on plain vault-relative strings, in their order."""
    stems = [_stem(rel) for rel in rels]
    counts: dict[str, int] = {}
    for stem in stems:
        counts[stem] = counts.get(stem, 0) + 1
    names = [stem if counts[stem] == 1 else _without_suffix(rel)
             for rel, stem in zip(rels, stems, strict=True)]
    taken: dict[str, int] = {}
    for name in names:
        taken[name] = taken.get(name, 0) + 1
    return [name if taken[name] == 1 else rel for rel, name in zip(rels, names, strict=True)]


class NotRegularFile(OSError):
    """A FIFO, socket or device where a file was expected; never read."""


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """A regular file's bytes. Opened non-blocking and checked with ``fstat`` before
    any read, so a FIFO (even one swapped in after discovery) is refused, never
    waited on. Raises ``NotRegularFile`` or another ``OSError``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _file_kind(mode) if not stat.S_ISDIR(mode) else "a directory"
            raise NotRegularFile(errno.EINVAL, f"{kind}, not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def read_source(path: str | os.PathLike[str]) -> str:
    try:
        data = read_regular(path)
    except NotRegularFile as exc:
        raise HeaderError(exc.strerror) from None
    except OSError as exc:
        raise HeaderError(f"cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HeaderError(f"not UTF-8 (invalid byte at offset {exc.start})") from None


def relation_endpoints(card: Card) -> tuple[object, object] | None:
    """(source, target) of a card declaring ``knowledge.type: Relation``; None otherwise."""
    knowledge = card.metadata.get("knowledge")
    if not isinstance(knowledge, dict) or knowledge.get("type") != "Relation":
        return None
    relation = knowledge.get("relation")
    relation = relation if isinstance(relation, dict) else {}
    return relation.get("source"), relation.get("target")


def resolve_relations(
    declared: list[tuple[str, tuple[object, object]]], names: AbstractSet[str], warnings: list[str]
) -> list[Relation]:
    """Relations whose endpoints are both cards; a warning for each one that is not."""
    found: list[Relation] = []
    for card, (source, target) in declared:
        if isinstance(source, str) and isinstance(target, str) and {source, target} <= names:
            found.append(Relation(card, source, target))
        else:
            warnings.append(VaultWarning(
                f"{card}: declares knowledge.type: Relation but its endpoints do not "
                "resolve; kept as a concept card",
                "link",
            ))
    return found


def read_card(root: Path, rel: PurePosixPath, name: str, cache: ParseCache | None = None) -> Card:
    """One document as a card; raises ``HeaderError`` when it cannot be one."""
    return _read_card(str(root), rel.as_posix(), name, cache)


def _read_card(root: str, rel: str, name: str, cache: ParseCache | None) -> Card:
    """``read_card`` on plain strings (the loader's hot loop)."""
    file = os.path.join(root, rel)
    parsed = cache.get(file, rel) if cache else None
    if parsed is None:
        parsed = parse_source(read_source(file))
        if cache:
            cache.put(rel, parsed)
    return make_card(name, rel, parsed)


def skipped(rel: str | PurePosixPath, exc: HeaderError) -> str:
    """The warning for a document that is not read as a card."""
    return f"{rel}: {exc}; document skipped"


def load_vault(root: str | os.PathLike[str], cache: ParseCache | None = None) -> Vault:
    """Read every card under ``root``; a broken card is skipped with a warning naming it."""
    problem = vault_problem(root)  # before Path(): Path("") would be the current directory
    if problem:
        raise NotADirectoryError(problem)
    root = Path(root)
    paths, warnings = _discover(str(root))
    cards: list[Card] = []
    base = str(root)
    for rel, name in zip(paths, _names(paths), strict=True):
        try:
            cards.append(_read_card(base, rel, name, cache))
        except HeaderError as exc:
            warnings.append(skipped(rel, exc))
    if cache:
        cache.save()
    cards.sort(key=lambda c: c.name)
    by_name = {c.name: c for c in cards}
    declared = [(c.name, ends) for c in cards if (ends := relation_endpoints(c)) is not None]
    relations = resolve_relations(declared, by_name.keys(), warnings)
    return Vault(root, cards, warnings, (root / ".hmd").is_dir(), relations, by_name)
