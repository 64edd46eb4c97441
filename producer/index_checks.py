"""The one validator of an index's contents: every problem, its wording and its severity.

The app's reader (``hqltui.core.index_reader``), the producer (``read_index``,
``write_index``, ``build``) and ``hql-semantics verify`` all check an index with
these functions, so each problem reads the same wherever it is shown. A problem
has a severity:

* ``REFUSE``: the index cannot be used at all (the reader refuses it, naming the
  build that fixes it; ``read_index`` raises; ``verify`` reports it);
* ``LEAVE_OUT``: one card or stored query cannot be scored: the reader leaves it
  out of semantic and hybrid (a query vector is not used) with a warning, and
  the rest of the index still answers.

The dimension bound (``dimensions_ok``) and the unit-length rule (``unit_rows``)
are each written here once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from producer.index_format import (
    MAX_DIMENSIONS,
    METRIC,
    SCHEMA_VERSION,
    UNIT_TOLERANCE,
    same_vault,
    sql_value,
)
from producer.wording import listed

REFUSE = "refuse"
LEAVE_OUT = "leave out"

# Phrases more than one reader says (the producer's, ``verify``, the app's): written once.
NO_METADATA = "the index has no readable metadata"
NO_MODEL = "the index names no model"
NOT_A_FILE = "is a directory, not an index file"


@dataclass(frozen=True)
class IndexProblem:
    kind: str  # verify's names: unknown_schema, models, dimensions, metric, ...
    severity: str  # REFUSE | LEAVE_OUT
    message: str
    name: str | None = None  # the card (or query text) it concerns


def dimensions_ok(dims: object) -> bool:
    """A vector width this project reads and writes: an integer in 1..MAX_DIMENSIONS."""
    return isinstance(dims, int) and not isinstance(dims, bool) and 0 < dims <= MAX_DIMENSIONS


def schema_problem(version: object) -> IndexProblem | None:
    if version == SCHEMA_VERSION and not isinstance(version, bool):
        return None
    return IndexProblem(
        "unknown_schema", REFUSE,
        f"unknown index schema: {sql_value(version)}, and this tool knows {SCHEMA_VERSION}",
    )


def foreign_vault_problem(recorded: object, root: str | os.PathLike[str]) -> IndexProblem | None:
    """An index recorded for another vault (``same_vault`` decides): the app refuses
    it and ``verify`` reports it, in these words."""
    if isinstance(recorded, str) and same_vault(recorded, root):
        return None
    shown = f"`{recorded}`" if isinstance(recorded, str) else sql_value(recorded)
    return IndexProblem(
        "foreign_vault", REFUSE,
        f"the index was built for {shown} and this vault is `{Path(root).resolve().name}`: "
        "rebuild it for this vault",
    )


def model_count_problem(rows: int) -> IndexProblem | None:
    if rows == 1:
        return None
    message = NO_MODEL if rows == 0 else f"the index names {rows} models, not one"
    return IndexProblem("models", REFUSE, message)


def identity_problem(model_id: object, revision: object) -> IndexProblem | None:
    """A model row whose id or revision is not text (a table rebuilt without NOT NULL):
    every semantic score names its model and pinned revision, so the index is refused
    rather than scored under ``None``."""
    if isinstance(model_id, str) and model_id and isinstance(revision, str) and revision:
        return None
    return IndexProblem(
        "model_identity", REFUSE,
        f"the index names its model {sql_value(model_id)} at revision {sql_value(revision)}; "
        "a score's provenance needs both, as text",
    )


def model_problems(dims: object, metric: object, normalized: object) -> list[IndexProblem]:
    """What the model row declares that the reader cannot score with (all of it)."""
    out = []
    if not dimensions_ok(dims):
        out.append(IndexProblem(
            "dimensions", REFUSE,
            f"the index declares {sql_value(dims)} dimensions; 1..{MAX_DIMENSIONS} are read",
        ))
    if metric != METRIC:
        out.append(IndexProblem(
            "metric", REFUSE,
            f"the index declares the metric `{metric}`, and the reader computes `{METRIC}`",
        ))
    if normalized == 0:
        out.append(IndexProblem(
            "not_normalized", REFUSE,
            "the index declares its vectors are not normalized; scores are dot products, "
            "which equal cosine only for unit vectors",
        ))
    return out


_NOT_A_BLOB = {type(None): "NULL", int: "an integer", float: "a number", str: "text"}


def _who(name: str, query: bool, passage: int | None) -> str:
    if query:
        return f"the stored vector for the query `{name}`"
    return f"`{name}`" if passage is None else f"passage {passage} of `{name}`"


def width_problem(
    name: str, blob: object, dims: int, *, query: bool = False, passage: int | None = None
) -> IndexProblem | None:
    """A vector that is not a blob, or a blob of another width than the model declares:
    the index is refused. ``passage``: the ordinal of one of the card's passages."""
    if isinstance(blob, bytes | bytearray | memoryview) and len(blob) == dims * 4:
        return None  # every row of a sound index: nothing to word
    kind = "query_blob_length" if query else "blob_length"
    kind = kind if passage is None else "passage_blob_length"
    who = _who(name, query, passage)
    if not isinstance(blob, bytes | bytearray | memoryview):
        found = _NOT_A_BLOB.get(type(blob), "another value")
        return IndexProblem(kind, REFUSE, f"{who} holds no vector blob (found {found})", name)
    what = f"is {len(blob)} bytes" if query else f"has a {len(blob)}-byte vector"
    return IndexProblem(kind, REFUSE, f"{who} {what} where {dims * 4} bytes were declared", name)


def not_unit_problem(name: str, *, query: bool = False, passage: int | None = None) -> IndexProblem:
    """A vector that is not finite and of unit length: that one card (or query, or
    passage) is left out."""
    if passage is not None:
        return IndexProblem("passage_not_unit", LEAVE_OUT,
                            f"{_who(name, False, passage)} has a stored vector that is not "
                            "finite and unit length", name)
    if query:
        return IndexProblem("query_not_unit", LEAVE_OUT,
                            f"the stored vector for the query `{name}` is not finite and unit "
                            "length", name)
    return IndexProblem("not_unit", LEAVE_OUT,
                        f"`{name}` has a stored vector that is not finite and unit length", name)


def stale_message(name: str) -> str:
    """A card whose text changed since the build: still scored, on its old text."""
    return (f"`{name}` is stale (changed since the index was built); its semantic score "
            "describes the old text")


def absent_message(names: Sequence[str]) -> str:
    """Cards with no index row: left out of semantic (and so of hybrid's semantic half)."""
    tail = "absent from the index, so left out of the semantic ranking"
    if len(names) == 1:
        return f"`{names[0]}` is {tail}"
    return f"{len(names)} cards are {tail}: {listed(names)}"


def orphan_message(names: Sequence[str]) -> str:
    """Index rows whose card left the vault: never shown, only counted."""
    if len(names) == 1:
        return f"`{names[0]}` is in the index and no longer in the vault"
    return f"{len(names)} index rows name cards no longer in the vault: {listed(names)}"


def duplicate_problem(name: str) -> IndexProblem:
    return IndexProblem(
        "duplicate", LEAVE_OUT, f"`{name}` has more than one row in the index", name
    )


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """One vectorised pass: which rows are finite and of unit length (norms in float64,
    within ``UNIT_TOLERANCE``). The one unit-length rule."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))
    return np.isfinite(norms) & (np.abs(norms - 1.0) <= UNIT_TOLERANCE)


def unit_blobs(blobs: Sequence[bytes], dims: int) -> np.ndarray:
    """``unit_rows`` over packed blobs; a blob of another width counts as good here (its
    width is ``width_problem``'s to judge)."""
    out = np.ones(len(blobs), dtype=bool)
    sized = [i for i, b in enumerate(blobs) if len(b) == dims * 4]
    if sized:
        packed = np.frombuffer(b"".join(blobs[i] for i in sized), dtype="<f4")
        out[sized] = unit_rows(packed.reshape(len(sized), dims))
    return out


def is_unit(blob: bytes) -> bool:
    """Finite and of unit length, by the one rule (``unit_rows``)."""
    return len(blob) % 4 == 0 and bool(unit_blobs([blob], len(blob) // 4)[0])


def duplicated(names: Sequence[str]) -> list[str]:
    """Names that appear more than once, sorted."""
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    return sorted(n for n, count in seen.items() if count > 1)


def content_problems(
    cards: Sequence[tuple[str, object]], queries: Sequence[tuple[str, object]], dims: int
) -> list[IndexProblem]:
    """Every vector problem of an index whose model row is good: widths, unit length,
    doubled names. ``cards`` and ``queries`` are (name or text, blob) pairs."""
    out: list[IndexProblem] = []
    for rows, query in ((cards, False), (queries, True)):
        sized: list[tuple[str, bytes]] = []
        for name, blob in rows:
            wrong = width_problem(name, blob, dims, query=query)
            if wrong:
                out.append(wrong)
            else:
                sized.append((name, bytes(blob)))  # type: ignore[call-overload]
        good = unit_blobs([b for _, b in sized], dims)
        out += [not_unit_problem(n, query=query) for (n, _), ok in zip(sized, good, strict=True)
                if not ok]
    out += [duplicate_problem(n) for n in duplicated([n for n, _ in cards])]
    return out


# ----------------------------------------------------------------- passages


def recipe_problem(known: bool, rows: int) -> IndexProblem | None:
    """An index with passages whose recipe row is missing, doubled or not one this tool
    knows: its passages cannot be trusted, so the index is refused."""
    if known:
        return None
    if rows != 1:
        found = "no passage recipe" if rows == 0 else f"{rows} passage recipes, not one"
        return IndexProblem("passage_recipe", REFUSE, f"the index holds passages and {found}")
    return IndexProblem(
        "passage_recipe", REFUSE,
        "the index's passage recipe is not one this tool knows (its fields or its digest)",
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def ordinal_problem(card: str, ordinal: object) -> IndexProblem | None:
    """A passage whose ordinal is not a whole number from 0: the rows cannot be trusted."""
    if _whole(ordinal) and ordinal >= 0:  # type: ignore[operator]
        return None
    return IndexProblem(
        "passage_ordinal", REFUSE,
        f"a passage of `{card}` has the ordinal {sql_value(ordinal)}, not a whole number "
        "from 0", card,
    )


def doubled_passage_problem(card: str, ordinal: object, rows: int) -> IndexProblem:
    """One passage in several rows (a table rebuilt without its key): which row answered
    could not be said, so the rows cannot be trusted."""
    return IndexProblem(
        "passage_ordinal", REFUSE,
        f"passage {sql_value(ordinal)} of `{card}` has {rows} rows in the index, not one", card,
    )


def offsets_problem(card: str, ordinal: object, start: object, end: object,
                    length: int | None) -> IndexProblem | None:
    """A passage whose character offsets are not a non-empty span of whole numbers inside
    the card's text (``length`` None: the text is not at hand, e.g. a stale card; only
    the span itself is checked)."""
    if _whole(start) and _whole(end) and 0 <= start < end and (  # type: ignore[operator]
            length is None or end <= length):  # type: ignore[operator]
        return None
    where = (f"outside the card's {length}-character text" if length is not None
             else "not a span of characters")
    return IndexProblem(
        "passage_offsets", REFUSE,
        f"passage {sql_value(ordinal)} of `{card}` spans characters "
        f"{sql_value(start)}..{sql_value(end)}, {where}", card,
    )


def passages_absent_message(names: Sequence[str]) -> str:
    """Cards with a vector and no passage: scored by their card vector alone."""
    tail = "no passages in the index, so the semantic arm scores"
    if len(names) == 1:
        return f"`{names[0]}` has {tail} it by its card vector alone"
    return f"{len(names)} cards have {tail} them by their card vector alone: {listed(names)}"


def passages_orphan_message(names: Sequence[str]) -> str:
    """Passages of a card the index has no card row for: never scored."""
    if len(names) == 1:
        return f"`{names[0]}` has passages in the index and no card row, so they are not used"
    return (f"{len(names)} cards have passages in the index and no card row, so they are "
            f"not used: {listed(names)}")


def not_unit_passages_message(passages: Sequence[tuple[str, int]]) -> str:
    """Passages left out for their vectors (one named, or counted and listed)."""
    if len(passages) == 1:
        card, ordinal = passages[0]
        return not_unit_problem(card, passage=ordinal).message
    cards = list(dict.fromkeys(c for c, _ in passages))
    return (f"{len(passages)} passages have a stored vector that is not finite and unit "
            f"length, in {listed(cards)}")


def passage_problems(
    chunks: Sequence[tuple[str, int, object]], cards: Sequence[str], dims: int
) -> list[IndexProblem]:
    """Every vector and coverage problem of the passages: ``chunks`` are (card, ordinal,
    blob), ``cards`` the index's card rows. Widths and unit length by the card rules; a
    card row without passages, and passages of no card row, by name."""
    out: list[IndexProblem] = []
    sized: list[tuple[str, int, bytes]] = []
    for card, ordinal, blob in chunks:
        wrong = width_problem(card, blob, dims, passage=ordinal)
        if wrong:
            out.append(wrong)
        else:
            sized.append((card, ordinal, bytes(blob)))  # type: ignore[call-overload]
    good = unit_blobs([b for *_, b in sized], dims)
    out += [not_unit_problem(c, passage=o) for (c, o, _), ok in zip(sized, good, strict=True)
            if not ok]
    covered = {c for c, _, _ in chunks}
    rows = set(cards)
    out += [IndexProblem("passages_absent", LEAVE_OUT, passages_absent_message([name]), name)
            for name in sorted(rows - covered)]
    out += [IndexProblem("passages_orphan", LEAVE_OUT, passages_orphan_message([name]), name)
            for name in sorted(covered - rows)]
    return out
