"""The labels file the app edits: which cards answer a query, which are decoys, its kind.

The file is exactly what ``hql-tui eval`` reads (``hqltui.core.evaluation``):
``[[query]]`` tables with ``text``, ``kind``, ``relevant`` and ``decoys``. Its
place is ``[search] labels`` (default ``queries.toml`` at the vault root, kept
inside the vault by the same rules as the index).

Every change goes through ``change()``: the file is read again first when it
changed on disk since it was last read (so an edit made in another window is
the base of the next label, never overwritten), a file ``eval`` could not read
is never written (``LabelsError``), and the one entry changed is written through
the one TOML writer (``producer.tomlfile.edit_toml``: tomlkit, atomic), which
keeps comments and every other entry byte for byte.

A query is matched by its exact text. ``eval`` needs at least one relevant card
per entry, so an entry is written once it has one, and removed from the file
when its last relevant card is unmarked; its decoys and kind wait in memory
(``pending``) until a relevant card is marked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hqltui.core.config import DEFAULT_LABELS
from hqltui.core.evaluation import DEFAULT_KIND, LabelledQuery, QueriesError, parse_queries
from producer.config import ConfigError, check_inside_path
from producer.tomlfile import TomlFileError, edit_toml, read_toml

KINDS: tuple[str | None, ...] = ("paraphrase", "keyword", None)  # the kind key cycles


class LabelsError(ValueError):
    """The labels file cannot be used: labelling is off until it is fixed."""


@dataclass(frozen=True)
class Label:
    """One query's labels; ``kind`` None writes no ``kind`` key (``eval`` reads "query")."""

    relevant: tuple[str, ...] = ()
    decoys: tuple[str, ...] = ()
    kind: str | None = None

    @property
    def empty(self) -> bool:
        return not self.relevant and not self.decoys and self.kind is None

    @property
    def saved(self) -> bool:
        """``eval`` accepts the entry: it names a relevant card."""
        return bool(self.relevant)

    def mark(self, card: str) -> str:
        """``relevant``, ``decoy`` or ``""`` for ``card``."""
        return "relevant" if card in self.relevant else "decoy" if card in self.decoys else ""


def toggle_relevant(label: Label, card: str) -> Label:
    """``card`` relevant (no longer a decoy), or not relevant when it was."""
    if card in label.relevant:
        return replace(label, relevant=tuple(c for c in label.relevant if c != card))
    return replace(label, relevant=(*label.relevant, card),
                   decoys=tuple(c for c in label.decoys if c != card))


def toggle_decoy(label: Label, card: str) -> Label:
    """``card`` a decoy (no longer relevant), or not a decoy when it was."""
    if card in label.decoys:
        return replace(label, decoys=tuple(c for c in label.decoys if c != card))
    return replace(label, decoys=(*label.decoys, card),
                   relevant=tuple(c for c in label.relevant if c != card))


def cycle_kind(label: Label) -> Label:
    """paraphrase → keyword → none → paraphrase; a kind written by hand goes to paraphrase."""
    at = KINDS.index(label.kind) if label.kind in KINDS else -1
    return replace(label, kind=KINDS[(at + 1) % len(KINDS)])


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@dataclass(frozen=True)
class Labels:
    """The labels file as last read, and the entries waiting for a relevant card."""

    path: Path
    entries: Mapping[str, Label] = field(default_factory=dict)  # exact text → label
    error: str | None = None  # the file cannot be used: labelling is off
    stamp: tuple[int, int] | None = None  # (mtime_ns, size) when read; None: no file
    in_file: bool = True  # the error is the labels file's own (not hql.toml's [search])

    @property
    def exists(self) -> bool:
        return self.stamp is not None

    def get(self, text: str) -> Label:
        return self.entries.get(text, Label())

    def labelled(self) -> list[LabelledQuery]:
        """The entries ``eval`` would read, in the file's order."""
        return [LabelledQuery(text, label.relevant, label.kind or DEFAULT_KIND, label.decoys)
                for text, label in self.entries.items() if label.saved]

    def changed_on_disk(self) -> bool:
        return _stamp(self.path) != self.stamp


def load_labels(path: Path, pending: Mapping[str, Label] | None = None) -> Labels:
    """``path`` read and checked as ``eval`` reads it (absent: no labels yet); ``pending``
    entries (no relevant card yet) are kept where the file has no entry of that text."""
    stamp = _stamp(path)
    try:
        data = read_toml(path)
        queries = parse_queries(data, path, allow_none=True)
    except FileNotFoundError:
        data, queries, stamp = {}, [], None
    except (TomlFileError, QueriesError) as exc:
        return Labels(path, dict(pending or {}), f"{exc}; labelling is off until it is fixed",
                      stamp)
    entries: dict[str, Label] = {}
    raw = data.get("query") or []
    for entry, q in zip(raw, queries, strict=True):
        if q.text not in entries:  # the first entry of a text is the one the app edits
            entries[q.text] = Label(q.relevant, q.decoys, entry.get("kind"))
    for text, label in (pending or {}).items():
        if text not in entries and not label.saved and not label.empty:
            entries[text] = label
    return Labels(path, entries, None, stamp)


@dataclass(frozen=True)
class Change:
    """A label change written (or held pending): the labels after it, and what it was."""

    labels: Labels
    text: str
    before: Label
    after: Label
    created: bool  # the file did not exist before this change


def pending_of(labels: Labels) -> dict[str, Label]:
    return {t: lab for t, lab in labels.entries.items() if not lab.saved and not lab.empty}


def change(labels: Labels, text: str, edit: Callable[[Label], Label]) -> Change:
    """Apply ``edit`` to the label of ``text`` and write it; ``LabelsError`` when the file
    cannot be used (nothing is written then)."""
    if labels.error is None and labels.changed_on_disk():
        labels = load_labels(labels.path, pending_of(labels))
    if labels.error is not None:
        raise LabelsError(labels.error)
    before = labels.get(text)
    after = edit(before)
    created = not labels.exists
    entries = dict(labels.entries)
    if after.empty:
        entries.pop(text, None)
    else:
        entries[text] = after
    if after.saved or before.saved:
        if not labels.exists and not labels.path.parent.is_dir():
            raise LabelsError(f"{labels.path}: its folder does not exist; labelling is off")
        try:
            edit_toml(labels.path, lambda doc: _write_entry(doc, text, after))
        except (TomlFileError, OSError) as exc:
            raise LabelsError(f"{exc}; nothing was written") from None
        stamp = _stamp(labels.path)
    else:
        stamp, created = labels.stamp, False  # held in memory: nothing to write yet
    return Change(replace(labels, entries=entries, stamp=stamp), text, before, after,
                  created and stamp is not None)


def _write_entry(doc: Any, text: str, label: Label) -> None:
    """The ``[[query]]`` of ``text`` in the tomlkit document made to hold ``label``; every
    other entry, comment and blank line is left as it is."""
    import tomlkit

    aot = doc.get("query")
    at = next((i for i, t in enumerate(aot or []) if t.get("text") == text), None)
    if not label.saved:
        if at is not None:
            del aot[at]
        return
    if at is None:
        table = _table(text, label)
        if aot is None:
            aot = tomlkit.aot()
            aot.append(table)
            doc.append("query", aot)
        else:
            # One blank line before the new entry, as between the others.
            table.trivia.indent = "" if tomlkit.dumps(doc).endswith("\n\n") else "\n"
            aot.append(table)
        return
    table = aot[at]
    _set(table, "kind", label.kind, after="text")
    _set(table, "relevant", list(label.relevant), after="kind" if "kind" in table else "text")
    _set(table, "decoys", list(label.decoys) or None, after="relevant")


def _table(text: str, label: Label) -> Any:
    import tomlkit

    table = tomlkit.table()
    table["text"] = text
    if label.kind is not None:
        table["kind"] = label.kind
    table["relevant"] = list(label.relevant)
    if label.decoys:
        table["decoys"] = list(label.decoys)
    return table


def _set(table: Any, key: str, value: Any, after: str) -> None:
    """Change one key only when its value changes (its line is otherwise kept as written);
    a new key goes right after ``after``, before any comment that ends the entry."""
    current = table.get(key)
    if current is not None and (list(current) if isinstance(value, list) else current) == value:
        return
    if value is None:
        if key in table:
            del table[key]
        return
    if key in table or after not in table:
        table[key] = value
        return
    # tomlkit (pinned) has no public insert; its container's own is used.
    table.value._insert_after(after, key, value)


def labels_path(config: Any) -> tuple[Path, str | None]:
    """Where the vault's labels file is (``[search] labels``), and why it cannot be used
    when ``[search]`` itself is refused (the file it names is unknown then)."""
    root = Path(config.root)
    error = getattr(config, "errors", {}).get("search")
    if error:
        return root / DEFAULT_LABELS, f"{error}; labelling is off until [search] is fixed"
    named = config.search.labels
    try:  # the default name too: a `queries.toml` linked outside must not be written through
        check_inside_path(root, named, config.file, table="search", key="labels",
                          example=DEFAULT_LABELS)
    except ConfigError:  # a name [search] accepted: only a link can lead it out
        return root / named, (f"{root / named}: the labels file leads outside the vault "
                              "through a symlink, so nothing is written through it; "
                              "labelling is off until it is fixed")
    return root / named, None


def vault_labels(config: Any, previous: Labels | None = None) -> Labels:
    """The labels of the vault ``config`` belongs to; entries still pending in
    ``previous`` (the same file) are kept."""
    path, error = labels_path(config)
    pending = pending_of(previous) if previous is not None and previous.path == path else {}
    if error:
        return Labels(path, pending, error, _stamp(path), in_file=False)
    return load_labels(path, pending)
