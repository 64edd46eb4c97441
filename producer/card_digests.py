"""What a build needs of a vault, without holding its texts: name, path and hash per card.

A build compares each card's content hash with the index and embeds only the
changed ones, so it has no use for every card's text at once. ``digest_vault``
reads the vault card by card (the rules are ``producer.vault``'s, shared with
the app) and keeps a ``CardDigest`` of each; ``card_text`` reads one card's text
again when it is its turn to be embedded. Peak memory then follows the largest
card, not the vault.

A digest cache, keyed by vault-relative path, size and mtime, makes a warm
unchanged rebuild skip parsing. It holds hashes, never texts, so it stays small.
An entry whose title fell back to the card's name (no authored title, no
heading) is valid only under that name: names depend on the whole vault.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from producer.parse_cache import cache_file, load_entries, save_seen
from producer.vault import (
    NOT_HMD_NOTICE,
    assign_names,
    discover,
    read_card,
    relation_endpoints,
    resolve_relations,
    skipped,
    vault_problem,
)
from producer.yamlcore import HeaderError

FORMAT = 1


@dataclass(frozen=True)
class CardDigest:
    name: str
    path: str  # vault-relative, POSIX separators
    content_hash: str


@dataclass
class VaultDigest:
    root: Path
    cards: list[CardDigest]  # sorted by name
    warnings: list[str]
    is_hmd: bool
    by_name: dict[str, CardDigest] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_name:
            self.by_name = {c.name: c for c in self.cards}

    @property
    def notice(self) -> str | None:
        return None if self.is_hmd else NOT_HMD_NOTICE.format(root=self.root)


@dataclass(frozen=True)
class _Entry:
    """A cached digest of one file: a card's hash, or why it is skipped."""

    content_hash: str | None
    only_for_name: str | None  # the title was the name: valid only under it
    relation: tuple[object, object] | None
    error: str | None = None


class DigestCache:
    """Entries by path, served while (size, mtime_ns) match; saved atomically when changed."""

    def __init__(self, root: Path, directory: Path | None = None) -> None:
        self.file = cache_file(root, "digest", directory)
        self.entries: dict[str, tuple[int, int, _Entry]] = {}
        self.seen: set[str] = set()
        self.dirty = False
        self.entries = load_entries(self.file, FORMAT)

    @staticmethod
    def stamp(file: str) -> tuple[int, int] | None:
        try:
            st = os.stat(file)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def get(self, rel: str, stamp: tuple[int, int] | None, name: str) -> _Entry | None:
        self.seen.add(rel)
        entry = self.entries.get(rel)
        if stamp is None or entry is None or entry[:2] != stamp:
            return None
        found = entry[2]
        if found.only_for_name is not None and found.only_for_name != name:
            return None
        return found

    def put(self, rel: str, stamp: tuple[int, int] | None, entry: _Entry) -> None:
        if stamp is not None:
            self.entries[rel] = (*stamp, entry)
            self.dirty = True

    def save(self) -> None:
        """Write the cache (dropping files no longer seen); failures only cost speed."""
        save_seen(self.file, FORMAT, self.entries, self.seen, self.dirty)
        self.dirty = False


def _digest(root: Path, rel: PurePosixPath, name: str) -> _Entry:
    try:
        card = read_card(root, rel, name)
    except HeaderError as exc:
        return _Entry(None, None, None, skipped(rel, exc))
    return _Entry(
        card.content_hash,
        name if card.title == name else None,
        relation_endpoints(card),
    )


def digest_vault(root: str | os.PathLike[str], cache: DigestCache | None = None) -> VaultDigest:
    """Every card's name, path and hash, with the warnings ``load_vault`` gives;
    one card's text in memory at a time."""
    problem = vault_problem(root)  # before Path(): Path("") would be the current directory
    if problem:
        raise NotADirectoryError(problem)
    root = Path(root)
    paths, warnings = discover(root)
    names = assign_names(paths)
    base = os.fspath(root)
    cards: list[CardDigest] = []
    declared: list[tuple[str, tuple[object, object]]] = []
    for rel in paths:
        key, name = rel.as_posix(), names[rel]
        stamp = DigestCache.stamp(os.path.join(base, key)) if cache else None
        entry = cache.get(key, stamp, name) if cache else None
        if entry is None:
            # Stamped before reading: an edit while reading is read again next time.
            entry = _digest(root, rel, name)
            if cache:
                cache.put(key, stamp, entry)
        if entry.error is not None:
            warnings.append(entry.error)
            continue
        assert entry.content_hash is not None
        cards.append(CardDigest(name, key, entry.content_hash))
        if entry.relation is not None:
            declared.append((name, entry.relation))
    if cache:
        cache.save()
    cards.sort(key=lambda c: c.name)
    declared.sort(key=lambda d: d[0])
    names_set = {c.name for c in cards}
    resolve_relations(declared, names_set, warnings)
    return VaultDigest(root, cards, warnings, (root / ".hmd").is_dir())


def card_text(root: Path, card: CardDigest) -> tuple[str, str]:
    """(text, content hash) of ``card`` read now; raises ``HeaderError`` when the
    file no longer reads as a card. The hash differs from the digest's when the
    file was edited since: the caller stores what it embedded."""
    full = read_card(root, PurePosixPath(card.path), card.name)
    return full.text, full.content_hash


def card_parts(root: Path, card: CardDigest) -> tuple[str, str, str]:
    """(text, content hash, title) of ``card`` read now; see ``card_text``. The title is
    what each of its passages is embedded after."""
    full = read_card(root, PurePosixPath(card.path), card.name)
    return full.text, full.content_hash, full.title
