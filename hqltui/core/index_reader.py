"""The semantic index reader: every refusal, the vector matrix, staleness per card.

``open_index(vault, config) -> SemanticIndex | Refusal`` reads a schema-1 index
(``producer.index_format`` is the one definition of the format, and
``producer.index_reader`` the one reader of its tables: this module adapts
their rows into a vector matrix and refusals) and checks, in this order, refusing at the first
failure with a message and the command that fixes it:

1. ``hql.toml`` names no ``[semantics] index`` (or its ``[semantics]`` table is
   refused, e.g. a path outside the vault, directly or through a symlink);
2. the file cannot be opened as SQLite (missing, garbage);
3. ``index_meta`` cannot be read; 4. its schema is not 1;
5. it was built for another vault (the recorded vault's last component must
   equal the vault directory's name, or the recorded string the root as given);
6. ``model`` names no model (or more than one); 7. dimensions outside 1..8192;
8. ``normalized = 0``; 9. a metric other than ``cosine``;
10. the ``card`` table cannot be walked; 11. any card blob is not
    ``dimensions * 4`` bytes; 12. with a ``chunk`` table (passages): its recipe
    row is missing, doubled or unknown, or a passage blob is not
    ``dimensions * 4`` bytes (``hqltui.core.passage_index``).

Checks 4 and 6-11 are ``producer.index_checks`` problems of severity ``REFUSE``;
the vectors that fail the unit-length check are its ``LEAVE_OUT`` problems.

A ``SemanticIndex`` holds the card vectors as one contiguous float32 matrix
with a row per vault card (in the vault's name order; all-zero rows for cards
absent from the index), the stored query vectors (blobs, checked when used),
and the per-card status: ``fresh``, ``stale`` (content hash differs; still
scored) or ``missing``; index rows whose card left the vault are ``orphans``.

One vectorised pass at load checks every card and query vector: finite and of
unit length (``producer.index_checks``, the validator ``verify`` and the
producer use too). A card whose vector
fails, and every row of a name the index holds twice, are left out of
semantic and hybrid (``excluded``) with a warning; a failing query vector is
dropped from ``queries``, so a live embedding or the refusal follows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from hqltui.core.passage_index import PassageIndex, read_passages
from hqltui.core.ranking import Refusal, Warning
from producer.config import ProducerConfig
from producer.index_checks import (
    NO_METADATA,
    NO_MODEL,
    NOT_A_FILE,
    absent_message,
    doubled_passage_problem,
    duplicate_problem,
    foreign_vault_problem,
    identity_problem,
    model_count_problem,
    model_problems,
    not_unit_passages_message,
    not_unit_problem,
    orphan_message,
    passages_absent_message,
    schema_problem,
    stale_message,
    unit_blobs,
    unit_rows,
    width_problem,
)
from producer.index_format import IndexBusy, StoreError, is_sqlite_file
from producer.index_format import unpack as unpack_vectors
from producer.index_holders import busy_error, is_busy
from producer.index_reader import (
    card_rows,
    connect_readonly,
    doubled_passages,
    has_chunks,
    meta_row,
    model_rows,
    query_rows,
)
from producer.vault import Vault

BUILD = "hql-semantics build"


def shell_quote(text: str) -> str:
    """``text`` in double quotes, safe to paste into a POSIX shell."""
    escaped = "".join("\\" + ch if ch in '"\\$`' else ch for ch in text)
    return f'"{escaped}"'


def build_command(vault: Vault, index: str | None, queries: tuple[str, ...] = ()) -> str:
    """The producer command that (re)builds this vault's index."""
    root = vault.root.as_posix()
    out = f"{root}/{index}" if index else f"{root}/.hql/index.sqlite"
    parts = [BUILD, "--vault", shell_quote(root) if " " in root else root, "--out"]
    parts.append(shell_quote(out) if " " in out else out)
    for text in queries:
        parts += ["--query", shell_quote(text)]
    return " ".join(parts)


@dataclass(frozen=True)
class SemanticIndex:
    path: str  # the vault root joined with the configured relative path, as given
    model: str
    revision: str
    dimensions: int
    metric: str
    built_at: str
    built_for: str
    tool_version: str
    matrix: np.ndarray  # (cards, dimensions) float32, C-contiguous, vault order
    present: np.ndarray  # bool per vault card: has an index row
    stale: np.ndarray  # bool per vault card: row present, content hash differs
    queries: dict[str, bytes]
    stale_names: tuple[str, ...]
    missing_names: tuple[str, ...]
    orphan_names: tuple[str, ...]
    fix: str  # the build command for this vault and index
    # Cards whose stored vector is not finite and unit length, and names with more
    # than one index row: left out of semantic and hybrid (``present`` is False).
    invalid_names: tuple[str, ...] = ()
    duplicate_names: tuple[str, ...] = ()
    # Stored query vectors that are not finite and unit length: never used.
    invalid_queries: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # the vault's card names, in matrix row order
    # The chunk table, when the index holds passages: the arm then scores them too.
    passages: PassageIndex | None = None

    @property
    def excluded(self) -> np.ndarray:
        """Per vault card: has index rows, but none that can be scored (bad or doubled)."""
        out = np.zeros(len(self.present), dtype=bool)
        if self.invalid_names or self.duplicate_names:
            bad = set(self.invalid_names) | set(self.duplicate_names)
            out[[i for i, name in enumerate(self.names) if name in bad]] = True
        return out

    @property
    def fresh_count(self) -> int:
        return int(self.present.sum()) - len(self.stale_names)

    def status(self, position: int) -> str:
        if not self.present[position]:
            return "missing"
        return "stale" if self.stale[position] else "fresh"

    def warnings(self) -> tuple[Warning, ...]:
        """Stale cards one by one, absent cards counted once, orphans listed once."""
        out = [
            Warning("stale", f"{stale_message(name)} (rebuild: {BUILD})", (name,))
            for name in self.stale_names
        ]
        if self.missing_names:
            out.append(Warning("absent", f"{absent_message(self.missing_names)} (rebuild: {BUILD})",
                               self.missing_names))
        left_out = f"so it is left out of semantic and hybrid (rebuild: {BUILD})"
        for name in self.invalid_names:
            out.append(Warning("index", f"{not_unit_problem(name).message}, {left_out}", (name,)))
        for name in self.duplicate_names:
            out.append(Warning(
                "index",
                f"{duplicate_problem(name).message}, so both are left out of semantic and "
                f"hybrid (rebuild: {BUILD})",
                (name,),
            ))
        for text in self.invalid_queries:
            out.append(Warning(
                "index",
                f"{not_unit_problem(text, query=True).message}, so it is not used "
                f"(rebuild: {BUILD})",
            ))
        if self.passages is not None:
            out += self._passage_warnings(self.passages)
        if self.orphan_names:
            out.append(Warning("orphan", f"{orphan_message(self.orphan_names)} (rebuild: {BUILD})",
                               self.orphan_names))
        return tuple(out)


    @staticmethod
    def _passage_warnings(passages: PassageIndex) -> list[Warning]:
        """A card's stale text covers its passages (warned once, as the card); cards with
        no passage are counted; bad passage vectors are named. Passage orphans join the
        card orphans (``orphan_names``)."""
        out = []
        if passages.uncovered_names:
            names = passages.uncovered_names
            out.append(Warning("absent", f"{passages_absent_message(names)} (rebuild: {BUILD})",
                               names))
        if passages.invalid:  # one warning, however many (a tampered table can hold 100k)
            invalid = passages.invalid
            them = "it is" if len(invalid) == 1 else "they are"
            out.append(Warning(
                "index",
                f"{not_unit_passages_message(invalid)}, so {them} left out of semantic and "
                f"hybrid (rebuild: {BUILD})",
                tuple(dict.fromkeys(card for card, _ in invalid)),
            ))
        return out


def open_index(vault: Vault, config: ProducerConfig) -> SemanticIndex | Refusal:
    """Read the vault's configured index, or say why it cannot be used."""
    fix = build_command(vault, config.index)
    if "semantics" in config.errors:
        return Refusal(
            config.errors["semantics"],
            config.file_fix or f"edit [semantics] in {config.file.name}",
        )
    if config.index is None:
        return Refusal(
            "semantic search needs an index: name one with `[semantics] index` in hql.toml "
            f"and build it with `{BUILD}`",
            fix,
        )
    display = f"{vault.root.as_posix()}/{config.index}"
    file = vault.root / config.index
    root_real = vault.root.resolve()
    if not file.resolve().is_relative_to(root_real):  # a symlink swapped in since config load
        return Refusal(f"the configured index `{config.index}` is outside the vault", fix)
    if file.is_dir():
        return Refusal(
            f"the index `{display}` {NOT_A_FILE}",
            f"name a file in `[semantics] index` of {config.file.name}, or move the directory",
        )
    if file.is_file() and is_sqlite_file(file) is False:
        return Refusal(
            f"the index `{display}` cannot be read (it is not an SQLite file), and a build "
            "will not overwrite it",
            f"move it aside (the app's F7 offers to rename it), then {fix}",
        )
    try:
        conn = connect_readonly(file, shared=True)
    except IndexBusy as exc:  # waited for the lock already: say who holds it, not "build"
        return Refusal(f"the index `{display}` {str(exc).split(': ', 1)[-1]}", exc.fix or fix)
    except StoreError as exc:
        return Refusal(f"the index `{display}` cannot be read ({_reason(exc)}): build it", fix)
    result: SemanticIndex | Refusal | None = None
    try:
        result = _read(conn, vault, config, display, fix)
        return result
    except sqlite3.DatabaseError as exc:  # e.g. corruption found part-way
        return Refusal(f"the index `{display}` cannot be read ({exc}): build it", fix)
    finally:
        if not (isinstance(result, SemanticIndex) and result.passages is not None):
            conn.close()  # passages keep it: their float32 rows are read at the cut


def read_refusal(ix: SemanticIndex, exc: sqlite3.Error) -> Refusal:
    """The index failed at query time (the passages' stored float32 rows are read then,
    from the file as loaded): another process locks it, worded as at load, or the file
    was damaged on disk since it was loaded (e.g. truncated in place)."""
    if is_busy(exc):
        busy = busy_error(ix.path)
        return Refusal(f"the index `{ix.path}` {str(busy).split(': ', 1)[-1]}", busy.fix or ix.fix)
    return Refusal(f"the index `{ix.path}` cannot be read any more ({exc}): the file changed "
                   "on disk since it was loaded; rebuild it", ix.fix)


def _reason(exc: StoreError) -> str:
    text = str(exc)
    if "(" in text and text.endswith(")"):
        return text[text.index("(") + 1 : -1]
    return text.split(": ", 1)[-1]


def _read(
    conn: sqlite3.Connection, vault: Vault, config: ProducerConfig, display: str, fix: str
) -> SemanticIndex | Refusal:
    try:
        meta = meta_row(conn)
        if meta is None:
            raise sqlite3.OperationalError("index_meta has no row")
    except sqlite3.Error as exc:
        return Refusal(f"{NO_METADATA}: {exc}", fix)
    version, built_for, built_at, tool = meta
    problem = schema_problem(version)
    if problem:
        return Refusal(problem.message, fix)
    problem = foreign_vault_problem(built_for, vault.root)
    if problem:
        return Refusal(problem.message, fix)
    try:
        rows = model_rows(conn)
    except sqlite3.Error as exc:
        return Refusal(f"{NO_MODEL}: {exc}", fix)
    found = [model_count_problem(len(rows))] if len(rows) != 1 else [
        identity_problem(*rows[0][:2]), *model_problems(*rows[0][2:])]
    problems = [p for p in found if p is not None]
    if problems:
        return Refusal(problems[0].message, fix)
    model_id, revision, dims, metric, normalized = rows[0]
    try:
        cards = [(n, h, e) for n, _, h, e in card_rows(conn, by_name=False)]
    except sqlite3.Error as exc:
        return Refusal(f"the index has no readable cards: {exc}", fix)
    for name, _, blob in cards:
        wrong = width_problem(str(name), blob, dims)
        if wrong:
            return Refusal(wrong.message, fix)
    try:
        queries = {
            text: bytes(blob)
            for text, blob in query_rows(conn, by_text=False)
            if isinstance(text, str) and isinstance(blob, bytes | bytearray | memoryview)
        }
    except sqlite3.Error:
        queries = {}  # no query table: every query needs a live vector or a rebuild

    bad_queries = sorted(
        text for text, ok in zip(queries, unit_blobs(list(queries.values()), dims), strict=True)
        if not ok
    )
    for text in bad_queries:
        del queries[text]

    position = {card.name: i for i, card in enumerate(vault.cards)}
    n = len(vault.cards)
    matrix = np.zeros((n, dims), dtype=np.float32)
    present = np.zeros(n, dtype=bool)
    stale = np.zeros(n, dtype=bool)
    rows_at: list[int] = []
    blobs: list[bytes] = []
    orphans: set[str] = set()
    rows_of: dict[int, int] = {}
    for name, content_hash, blob in cards:
        i = position.get(name)
        if i is None:
            orphans.add(str(name))
            continue
        rows_of[i] = rows_of.get(i, 0) + 1
        rows_at.append(i)
        blobs.append(bytes(blob))
        stale[i] = content_hash != vault.cards[i].content_hash
    names = [card.name for card in vault.cards]
    doubled = {i for i, count in rows_of.items() if count > 1}
    invalid: set[int] = set()
    if blobs:
        vectors = unpack_vectors(b"".join(blobs)).reshape(len(blobs), dims)
        good = unit_rows(vectors)
        invalid = {i for i, ok in zip(rows_at, good.tolist(), strict=True) if not ok} - doubled
        keep = good & ~np.isin(np.asarray(rows_at), list(doubled | invalid))
        at = np.asarray(rows_at)[keep]
        matrix[at] = vectors if keep.all() else vectors[keep]  # no second copy when all good
        present[at] = True
    stale &= present
    lengths = np.fromiter((len(card.text) for card in vault.cards), np.int64, n)
    lengths[stale | ~present] = -1  # the text the passages were cut from is not at hand
    twice = doubled_passages(conn, 1) if has_chunks(conn) else []
    passages = (doubled_passage_problem(str(twice[0][0]), *twice[0][1:]).message if twice
                else read_passages(conn, dims, position, present, names, lengths, matrix))
    if isinstance(passages, str):  # a chunk table no build writes: trust none of it. A plain
        # build copies a card's passages while its text is unchanged, and whether a span
        # lies inside that text is not known without reading it, so the fix is --full.
        return Refusal(passages, f"{fix} --full")
    if passages is not None:
        orphans |= {n for n in passages.orphans if n not in position}
    return SemanticIndex(
        path=display,
        model=str(model_id),
        revision=str(revision),
        dimensions=dims,
        metric=str(metric),
        built_at=str(built_at),
        built_for=built_for,
        tool_version=str(tool),
        matrix=matrix,
        present=present,
        stale=stale,
        queries=queries,
        stale_names=tuple(names[i] for i in np.flatnonzero(stale).tolist()),
        missing_names=tuple(
            names[i] for i in np.flatnonzero(~present).tolist() if i not in rows_of
        ),
        orphan_names=tuple(sorted(orphans)),
        fix=fix,
        invalid_names=tuple(sorted(names[i] for i in invalid)),
        duplicate_names=tuple(sorted(names[i] for i in doubled)),
        invalid_queries=tuple(bad_queries),
        names=tuple(names),
        passages=passages,
    )

