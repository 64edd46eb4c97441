"""``hql-semantics build``: embed a vault's cards (and queries) into the index.

The pipeline emits events (plain dicts) through a callback; the CLI prints
them as JSON lines (``--progress jsonl``) or as human lines. Events:

* ``{"event": "warning", "message"}`` — a vault or reuse warning
* ``{"event": "start", "cards", "total", "to_embed", "reused", "queries"}``
* ``{"event": "progress", "done", "total", "elapsed"}`` — after each batch
* ``{"event": "final", "embedded", "reused", "removed", "queries",
  "queries_embedded", "cards", "out", "up_to_date", "model", "revision",
  "dimensions", "provider"}``
* ``{"event": "error", "message"}`` — emitted by the CLI on failure

Order of work, and why:

1. configuration and flags are merged and checked, and an ``http`` key
   variable is looked up — before any card is read;
2. the build lock beside the index is taken (a second build refuses at once);
3. the model's identity (id, revision, width) is computed without loading it;
4. the vault is read and compared with the previous index: a card whose name,
   content hash, model and revision are unchanged keeps its stored bytes;
5. when nothing changed, nothing is loaded or written ("up to date");
6. otherwise only new or changed texts are embedded, and a fresh file is
   written beside the index and renamed over it.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from producer.card_digests import CardDigest, DigestCache, card_parts, digest_vault
from producer.config import ConfigError, load_config
from producer.embedders import (
    Embedder,
    EmbedderSpec,
    EmbedError,
    check_spec,
    embed_texts,
    identity,
    open_embedder,
)
from producer.index import (
    METRIC,
    SCHEMA_VERSION,
    TOOL_VERSION,
    BuildLock,
    CardRow,
    ChunkRow,
    IndexBusy,
    IndexContents,
    IndexWriter,
    MetaRow,
    ModelRow,
    QueryRow,
    StoreError,
    UnknownSchema,
    aside_path,
    is_sqlite_file,
    is_unit,
    pack,
    pause_point,
    read_index,
    readable_query_texts,
    same_vault,
)
from producer.index_checks import offsets_problem, ordinal_problem
from producer.passages import DEFAULT_RECIPE, cut_windows, passage_text, tokens_needed, whole
from producer.vault import vault_problem
from producer.yamlcore import HeaderError

# Changed cards embedded (and their rows written) per step of a build: what
# bounds the texts in flight and the vectors held, whatever the vault's size.
CHUNK = 512

Event = dict[str, object]
Emit = Callable[[Event], None]


class BuildError(Exception):
    """A build cannot proceed; the message is meant for the user, ``fix`` what to do."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


@dataclass
class BuildOptions:
    vault: str
    out: str | None = None
    offline: bool = False
    provider: str | None = None
    model: str | None = None
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = None
    precision: str | None = None
    queries: list[str] = field(default_factory=list)
    drop_queries: bool = False
    built_at: str | None = None
    full: bool = False
    parse_cache: bool = False
    # None: on when `[semantics] passages = true` or the previous index holds passages
    passages: bool | None = None
    # Set (auto-build): refuse, before any model loads, a build that would embed more
    # than the cards changed since the index, or more than this many cards.
    changed_at_most: int | None = None


@dataclass
class BuildResult:
    out: Path
    up_to_date: bool
    cards: int
    embedded: int
    reused: int
    removed: int
    queries: int
    queries_embedded: int
    model: str
    revision: str
    dimensions: int
    provider: str
    passages: int | None = None  # passages stored (None: built without passages)
    passages_embedded: int = 0
    passages_reused: int = 0  # passages kept byte for byte from the previous index


def vault_identity(argument: str) -> str:
    """What ``index_meta.vault`` records for the ``--vault`` argument.

    The argument in POSIX form when it is relative with no ``.`` or ``..``
    component (``fixtures/birds``); otherwise the resolved directory's name.
    Never an absolute path.
    """
    text = argument.replace(os.sep, "/")
    parts = [p for p in text.split("/") if p]
    if parts and not PurePosixPath(text).is_absolute() and not any(p in (".", "..") for p in parts):
        return "/".join(parts)
    return Path(argument).resolve().name


def utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def resolve_out(options: BuildOptions, config) -> Path:  # noqa: ANN001
    if options.out:
        return Path(options.out)
    config.require("semantics")
    if config.index_path is None:
        raise BuildError(
            f"{options.vault}: name the index with --out, or with `[semantics] index` in hql.toml"
        )
    return config.index_path


def resolve_spec(options: BuildOptions, config) -> EmbedderSpec:  # noqa: ANN001
    config.require("semantics.embedder")
    flags = {
        "provider": options.provider,
        "model": options.model,
        "revision": options.revision,
        "endpoint": options.endpoint,
        "api_key_env": options.api_key_env,
        "dimensions": options.dimensions,
        "precision": options.precision,
    }
    spec = EmbedderSpec.merge(config.embedder, offline=options.offline, **flags)
    spec.check()
    return spec


def build(
    options: BuildOptions,
    emit: Emit | None = None,
    *,
    embedder_factory: Callable[[EmbedderSpec], Embedder] | None = None,
    environ: dict[str, str] | None = None,
) -> BuildResult:
    """Run one build. Raises ``BuildError``, ``ConfigError``, ``EmbedError`` or
    ``StoreError`` (all with user-facing messages); the previous index is untouched
    unless the build completes."""
    emit = emit or (lambda event: None)
    root = Path(options.vault)
    problem = vault_problem(options.vault)
    if problem:
        raise BuildError(problem, "name an existing vault directory with --vault")
    config = load_config(root)
    spec = resolve_spec(options, config)
    check_spec(spec, environ)  # e.g. an unset key variable: before any card is read
    out = resolve_out(options, config)
    if out.is_dir():
        raise BuildError(f"{out}: is a directory; name the index file")

    refuse_foreign_file(out)
    if options.passages is None and config.passages:
        options = replace(options, passages=True)
    if options.passages and spec.provider != "local":
        raise BuildError(
            f"passages are cut on the local model's own tokenizer, and the {spec.provider} "
            "provider has none here",
            "build without --passages (and `[semantics] passages`), or with the local provider",
        )
    with BuildLock(out):
        return _build_locked(options, spec, out, emit, embedder_factory, environ)


def refuse_foreign_file(out: Path) -> None:
    """Never replace something that is not an index (a typo in --out or hql.toml),
    not even with ``--full``: the fix is moving it aside."""
    if out.is_dir():
        raise BuildError(f"{out}: is a directory, not an index file", "name the index file")
    try:
        sqlite = is_sqlite_file(out)
    except OSError as exc:
        raise BuildError(f"{out}: cannot be read ({exc.strerror})") from None
    if sqlite is False:
        aside = aside_path(out)
        raise BuildError(
            f"{out}: exists and is not an SQLite index; refusing to overwrite it, even with --full",
            f"move it aside (mv {shlex.quote(str(out))} {shlex.quote(str(aside))}) "
            "or name another --out",
        )


def _quoted(texts: list[str]) -> str:
    return ", ".join(repr(t) for t in texts)


def _previous(out: Path, emit: Emit, full: bool) -> tuple[IndexContents | None, list[str]]:
    """The index being replaced, or (with ``--full``) ``None`` and the query texts
    rescued from an index that can no longer be read. Never drops stored queries
    silently; never waits on a locked file longer than the reader's lock wait."""
    if not out.exists():
        return None, []
    try:
        return read_index(out), []
    except IndexBusy as exc:
        raise BuildError(str(exc), exc.fix) from None
    except UnknownSchema as exc:
        if exc.newer:
            raise BuildError(
                f"{exc}; it was written by a newer hql-semantics, and rebuilding would "
                "downgrade it (refused even with --full)",
                "use the newer hql-semantics, or move the file aside to build afresh",
            ) from None
        problem = exc
    except StoreError as exc:
        problem = exc
    texts = readable_query_texts(out)
    stored = f"its stored queries: {_quoted(texts)}" if texts else "no stored query can be read"
    if not full:
        raise BuildError(
            f"{problem}; refusing to rebuild it from scratch ({stored})",
            "run the build again with --full to rebuild it (readable stored queries are "
            "kept), or move the file aside",
        )
    emit(
        {
            "event": "warning",
            "message": f"{problem}; rebuilding it from scratch (--full); "
            + (f"stored queries kept: {_quoted(texts)}" if texts else stored),
        }
    )
    return None, texts


def _build_locked(
    options: BuildOptions,
    spec: EmbedderSpec,
    out: Path,
    emit: Emit,
    embedder_factory: Callable[[EmbedderSpec], Embedder] | None,
    environ: dict[str, str] | None,
) -> BuildResult:
    model_id, revision, dims = identity(spec)

    cache = DigestCache(Path(options.vault)) if options.parse_cache else None
    try:
        vault = digest_vault(options.vault, cache=cache)
    except (OSError, ValueError) as exc:
        raise BuildError(f"{options.vault}: cannot be read: {exc}") from None
    if vault.notice:
        emit({"event": "warning", "message": vault.notice})
    for warning in vault.warnings:
        emit({"event": "warning", "message": warning})
    if not vault.cards:
        raise BuildError(f"{options.vault}: no documents")

    previous, rescued = _previous(out, emit, options.full)
    reusable = (
        previous is not None
        and not options.full
        and previous.model.id == model_id
        and previous.model.revision == revision
        and (dims is None or previous.model.dimensions == dims)
    )
    if reusable and dims is None:
        dims = previous.model.dimensions
    stored_cards = {c.name: c for c in previous.cards} if reusable else {}
    if reusable and len(stored_cards) != len(previous.cards):  # a name with two rows:
        seen: set[str] = set()  # neither row is trusted, the card is embedded afresh
        doubled = {c.name for c in previous.cards if c.name in seen or seen.add(c.name)}
        stored_cards = {n: c for n, c in stored_cards.items() if n not in doubled}
    stored_queries = {q.text: q.embedding for q in previous.queries} if reusable else {}

    def usable(blob: bytes) -> bool:
        return dims is not None and len(blob) == dims * 4 and is_unit(blob)

    card_blobs: dict[str, bytes] = {}
    to_embed_cards = []
    for card in vault.cards:
        stored = stored_cards.get(card.name)
        if (
            stored is not None
            and stored.content_hash == card.content_hash
            and usable(stored.embedding)
        ):
            card_blobs[card.name] = stored.embedding
        else:
            to_embed_cards.append(card)

    # Passages: on when asked for, or (asked nothing) when the index holds them already.
    with_passages = (
        options.passages
        if options.passages is not None
        else previous is not None and previous.recipe is not None
    )
    recipe = DEFAULT_RECIPE if with_passages else None
    stored_chunks: dict[str, list[ChunkRow]] = {}
    if (
        recipe is not None
        and reusable
        and previous.recipe is not None
        and previous.recipe.known
        and previous.recipe.digest == recipe.digest  # the recipe joins the revision here
    ):
        for row in previous.chunks:
            stored_chunks.setdefault(row.card, []).append(row)
    chunk_orphans = len(set(stored_chunks) - {c.name for c in vault.cards})
    # A card keeps its passages byte for byte when its card vector is kept (same text,
    # model, revision) and every stored passage of it is usable.
    kept_chunks = {
        name: rows
        for name, rows in stored_chunks.items()
        if name in card_blobs and all(usable(r.embedding) for r in rows) and _as_written(rows)
    }
    to_cut = [c for c in vault.cards if recipe is not None and c.name not in kept_chunks]
    if options.changed_at_most is not None:
        only_changed(options.changed_at_most, vault.cards, previous, reusable,
                     [*to_embed_cards, *to_cut], recipe is not None and previous is not None
                     and (previous.recipe is None or not previous.recipe.known
                          or previous.recipe.digest != recipe.digest))

    query_texts = set(options.queries)
    stored_texts = [q.text for q in previous.queries] if previous is not None else rescued
    if options.drop_queries:
        dropped = sorted(set(stored_texts) - query_texts)
        if dropped:
            emit(
                {
                    "event": "warning",
                    "message": f"--drop-queries: dropping {len(dropped)} stored "
                    f"quer{'y' if len(dropped) == 1 else 'ies'}: {_quoted(dropped)}",
                }
            )
    else:
        query_texts.update(stored_texts)
    query_blobs: dict[str, bytes] = {}
    to_embed_queries = []
    for text in sorted(query_texts):
        blob = stored_queries.get(text)
        if blob is not None and usable(blob):
            query_blobs[text] = blob
        else:
            to_embed_queries.append(text)

    names = {c.name for c in vault.cards}
    removed = sum(1 for c in previous.cards if c.name not in names) if previous else 0

    embedder: Embedder | None = None

    def open_model() -> Embedder:
        nonlocal embedder
        if embedder is None:
            factory = embedder_factory or (lambda s: open_embedder(s, environ))
            embedder = factory(spec)
            if (embedder.model_id, embedder.revision) != (model_id, revision):
                raise BuildError(
                    f"the embedder reports {embedder.model_id} at {embedder.revision}, where "
                    f"{model_id} at {revision} was expected"
                )
        return embedder

    # Cutting comes first (tokenizer only, no vectors), so the counts below are exact.
    spans_of: dict[str, list[tuple[int, int]]] = {}
    cut_hash: dict[str, str] = {}
    whole_cards: set[str] = set()  # one passage, the whole text: stored with the card vector
    if to_cut:
        assert recipe is not None
        model = open_model()
        offsets = getattr(model, "token_offsets", None)
        if offsets is None:
            raise BuildError(f"the {spec.provider} embedder cannot cut passages (no tokenizer)")
        needed = tokens_needed(recipe)
        for card in to_cut:
            text, cut_hash[card.name], _ = _read_text(vault.root, card)
            spans_of[card.name] = cut_windows(text, offsets(text, needed), recipe)
            if whole(text, spans_of[card.name]):
                whole_cards.add(card.name)
            del text
    passages_to_embed = sum(
        len(sp) for name, sp in spans_of.items() if name not in whole_cards
    )
    passages_reused = sum(len(rows) for rows in kept_chunks.values())
    total = len(to_embed_cards) + passages_to_embed + len(to_embed_queries)
    start: Event = {
        "event": "start",
        "cards": len(vault.cards),
        "total": total,
        "to_embed": len(to_embed_cards),
        "reused": len(card_blobs),
        "queries": len(query_texts),
    }
    if recipe is not None:
        start |= {"passages_to_embed": passages_to_embed, "passages_reused": passages_reused}
    emit(start)

    vault_name = vault_identity(options.vault)

    stored_passages = [0]

    def result(up_to_date: bool, embedded_queries: int, d: int, provider: str) -> BuildResult:
        extra: dict[str, object] = {}
        if recipe is not None:
            extra = {
                "passages": stored_passages[0],
                "passages_embedded": passages_to_embed,
                "passages_reused": passages_reused,
            }
        r = BuildResult(**extra,  # type: ignore[arg-type]
            out=out,
            up_to_date=up_to_date,
            cards=len(vault.cards),
            embedded=len(to_embed_cards),
            reused=len(vault.cards) - len(to_embed_cards),
            removed=removed,
            queries=len(query_texts),
            queries_embedded=embedded_queries,
            model=model_id,
            revision=revision,
            dimensions=d,
            provider=provider,
        )
        shown = {k: v for k, v in vars(r).items() if k != "out"}
        if recipe is None:
            shown = {k: v for k, v in shown.items() if not k.startswith("passages")}
        emit({"event": "final", **shown, "out": str(out)})
        return r

    same_passages = (previous is not None and (previous.recipe is None) == (recipe is None)
                     and chunk_orphans == 0 and not to_cut)
    if reusable and total == 0 and removed == 0 and same_passages:
        by_name = {c.name: c for c in vault.cards}
        same_rows = all(by_name[c.name].path == c.path for c in previous.cards) and len(
            previous.cards
        ) == len(vault.cards)
        same_meta = (
            previous.meta.vault == vault_name
            and previous.meta.tool_version == TOOL_VERSION
            and previous.meta.schema_version == SCHEMA_VERSION
            and (options.built_at is None or previous.meta.built_at == options.built_at)
            and previous.model.metric == METRIC
            and previous.model.normalized == 1
            and len(previous.queries) == len(query_texts)
        )
        if same_rows and same_meta:
            stored_passages[0] = len(previous.chunks)
            return result(True, 0, previous.model.dimensions, spec.provider)
        # Only metadata, paths or the query set shrank: rewrite without loading a model.
    built_at = options.built_at or utc_now()

    if total:
        open_model()
    started = time.monotonic()
    embedded = [0]  # texts embedded so far, over every chunk

    def embed(texts: list[str], labels: list[str]) -> list[bytes]:
        assert embedder is not None
        offset = embedded[0]

        def on_batch(done: int) -> None:
            emit(
                {
                    "event": "progress",
                    "done": offset + done,
                    "total": total,
                    "elapsed": round(time.monotonic() - started, 3),
                }
            )
            if offset == 0:
                pause_point("embedding")

        vectors = embed_texts(embedder, texts, on_batch=on_batch, labels=labels)
        embedded[0] += len(texts)
        return [pack(v) for v in vectors]

    def card_chunks() -> Iterator[tuple[list[CardRow], list[ChunkRow]]]:
        """Card rows (and their passage rows) in name order, a chunk at a time: each
        chunk embeds up to ``CHUNK`` changed cards, so texts in flight and vectors
        not yet written stay bounded whatever the size of the vault."""
        chunk: list[CardDigest] = []
        changed = 0
        for i, card in enumerate(vault.cards):
            chunk.append(card)
            changed += card.name not in card_blobs or card.name in spans_of
            if changed == CHUNK or i == len(vault.cards) - 1:
                yield embed_chunk(chunk)
                chunk, changed = [], 0

    def embed_chunk(chunk: list[CardDigest]) -> tuple[list[CardRow], list[ChunkRow]]:
        texts: list[str] = []
        labels: list[str] = []
        hashes: dict[str, str] = {}
        wanted: list[tuple[str, int]] = []  # (card, ordinal) per text; ordinal -1: the card
        for c in chunk:
            if c.name in card_blobs and c.name not in spans_of:
                continue
            text, hashes[c.name], title = _read_text(vault.root, c)
            if c.name in spans_of and hashes[c.name] != cut_hash[c.name]:
                raise BuildError(f"{c.path}: changed while building; build again")
            if c.name not in card_blobs:
                texts.append(text)
                labels.append(f"card `{c.name}`")
                wanted.append((c.name, -1))
            if c.name in spans_of and c.name not in whole_cards:
                for o, span in enumerate(spans_of[c.name]):
                    texts.append(passage_text(text, title, span, recipe or DEFAULT_RECIPE))
                    labels.append(f"passage {o} of `{c.name}`")
                    wanted.append((c.name, o))
            del text
        blobs = embed(texts, labels) if texts else []
        del texts
        fresh = dict(zip(wanted, blobs, strict=True))
        cards = [
            CardRow(c.name, c.path, hashes[c.name], fresh[(c.name, -1)])
            if (c.name, -1) in fresh
            else CardRow(c.name, c.path, c.content_hash, card_blobs[c.name])
            for c in chunk
        ]
        rows: list[ChunkRow] = []
        if recipe is not None:
            for c, row in zip(chunk, cards, strict=True):
                if c.name in kept_chunks:
                    rows += kept_chunks[c.name]
                    continue
                spans = spans_of[c.name]
                for o, (a, b) in enumerate(spans):
                    blob = row.embedding if (c.name, o) not in fresh else fresh[(c.name, o)]
                    rows.append(ChunkRow(c.name, o, a, b, blob))
        stored_passages[0] += len(rows)
        return cards, rows

    chunks = card_chunks()
    # The first chunk is made before the file opens: when neither the embedder nor
    # a reusable index declared the width, its vectors do (nothing reusable means
    # every card was embedded, and a vault has at least one).
    first = next(chunks)
    if dims is None:
        dims = len(first[0][0].embedding) // 4

    with IndexWriter(
        out,
        ModelRow(model_id, revision, dims, METRIC, 1),
        MetaRow(vault=vault_name, built_at=built_at),
        recipe,
    ) as writer:
        for rows, passages in (first, *chunks):
            writer.add_cards(rows)
            if recipe is not None:
                writer.add_chunks(passages)
        if to_embed_queries:
            blobs = embed(to_embed_queries, [f"query {t!r}" for t in to_embed_queries])
            query_blobs.update(zip(to_embed_queries, blobs, strict=True))
        writer.add_queries(QueryRow(t, query_blobs[t]) for t in sorted(query_texts))
        writer.commit()
    return result(False, len(to_embed_queries), dims, spec.provider)


def only_changed(limit: int, cards: list[CardDigest], previous: IndexContents | None,
                 reusable: bool, to_embed: list[CardDigest], recipe_changed: bool) -> None:
    """The auto-build's bound: embed the changed cards only, and at most ``limit`` of
    them; anything more (a first build, a new model, revision, precision or passage
    recipe, a branch switch) is refused here, before a model loads, for the user to
    start on purpose."""
    if previous is None:
        raise BuildError("there is no index yet: a first build embeds every card")
    if not reusable:
        raise BuildError(
            f"the index holds vectors of {previous.model.id} at {previous.model.revision}; a "
            "build with this embedder would embed every card again"
        )
    if recipe_changed:
        raise BuildError("the passage recipe changed: every card's passages would be embedded "
                         "again")
    stored = {c.name: c.content_hash for c in previous.cards}
    changed = {c.name for c in cards if stored.get(c.name) != c.content_hash}
    if len(changed) > limit:
        raise BuildError(f"{len(changed)} cards changed, more than the {limit} an automatic "
                         "build embeds")
    unchanged = {c.name for c in to_embed} - changed
    if unchanged:
        raise BuildError(f"{len(unchanged)} unchanged cards would be embedded again")


def _as_written(rows: list[ChunkRow]) -> bool:
    """May a card's stored passages be copied as they are? Only when a build could have
    written them: numbered 0..n-1 once each, each a span of characters (``index_checks``'
    rules). A tampered row (a doubled or text ordinal, a reversed span) is cut afresh
    instead of being copied into the new index, or failing its writer's order check."""
    return [r.ordinal for r in rows] == list(range(len(rows))) and not any(
        ordinal_problem(r.card, r.ordinal)
        or offsets_problem(r.card, r.ordinal, r.start, r.end, None)
        for r in rows
    )


def _read_text(root: Path, card: CardDigest) -> tuple[str, str, str]:
    """A card's text, hash and title read now (a card edited since the vault was read
    is stored as embedded)."""
    try:
        return card_parts(root, card)
    except HeaderError as exc:
        raise BuildError(
            f"{card.path}: changed while building and no longer reads as a card ({exc}); "
            "build again"
        ) from None


__all__ = [
    "BuildError",
    "BuildOptions",
    "BuildResult",
    "ConfigError",
    "EmbedError",
    "StoreError",
    "build",
    "same_vault",
    "utc_now",
    "vault_identity",
]
