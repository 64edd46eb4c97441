"""``hql-semantics build``: embed a vault's cards (and queries) into the index.

The pipeline emits events (plain dicts) through a callback; the CLI prints
them as JSON lines (``--progress jsonl``) or as human lines. Events:

* ``{"event": "warning", "message"}`` — a vault or reuse warning
* ``{"event": "start", "cards", "total", "to_embed", "reused", "cards_shared",
  "queries"}`` (+ ``passages_to_embed``, ``passages_reused``, ``passages_shared``)
  — the plan, before anything is embedded; ``*_shared``: texts identical to
  another planned text, whose vector is copied instead of embedded
* ``{"event": "resume", "vectors"}`` — an interrupted build's work file holds
  this many vectors of this build's plan
* ``{"event": "progress", "done", "total", "elapsed"}`` — after each batch, with
  ``texts_per_s``, ``tokens_per_s`` and ``eta`` (seconds) once a pace is measured
* ``{"event": "final", "embedded", "reused", "removed", "queries",
  "queries_embedded", "cards", "out", "up_to_date", "model", "revision",
  "dimensions", "provider", "resumed", "texts_embedded"}``, plus ``runtime`` (and
  ``runtime_note``) when a local model embedded
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
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from producer.build_checkpoint import remove_work_file, work_path_for
from producer.build_execute import Executed, LazyEmbedder, execute
from producer.build_options import BuildError, BuildOptions
from producer.build_plan import BuildPlan, Identity, Previous, plan_build, quoted
from producer.card_digests import DigestCache, VaultDigest, digest_vault
from producer.config import ConfigError, load_producer_config
from producer.crash_points import batch_cards
from producer.embedders import (
    Embedder,
    EmbedderSpec,
    EmbedError,
    check_spec,
    identity,
    runtime_of,
)
from producer.index_checks import NOT_A_FILE
from producer.index_format import (
    IndexBusy,
    MetaRow,
    StoreError,
    UnknownSchema,
    aside_path,
    is_sqlite_file,
    same_vault,
)
from producer.index_lock import BuildLock
from producer.index_reader import read_index, readable_query_texts
from producer.vault import vault_problem

# Changed cards embedded (and their rows written) per step of a build: what
# bounds the texts in flight and the vectors held, whatever the vault's size.
CHUNK = 512

Event = dict[str, object]
Emit = Callable[[Event], None]


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
    resumed: int = 0  # vectors taken from an interrupted build's work file
    texts_embedded: int = 0  # texts this build embedded itself (cards, passages, queries)


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
        "runtime": options.runtime,
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
    config = load_producer_config(root)
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
        raise BuildError(f"{out}: {NOT_A_FILE}", "name the index file")
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


def _previous(out: Path, emit: Emit, full: bool) -> Previous:
    """The index being replaced, or (with ``--full``) none and the query texts
    rescued from an index that can no longer be read. Never drops stored queries
    silently; never waits on a locked file longer than the reader's lock wait."""
    if not out.exists():
        return Previous(None)
    problem: StoreError
    try:
        return Previous(read_index(out))
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
    stored = f"its stored queries: {quoted(texts)}" if texts else "no stored query can be read"
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
            + (f"stored queries kept: {quoted(texts)}" if texts else stored),
        }
    )
    return Previous(None, texts)


def _read_vault(options: BuildOptions, emit: Emit) -> VaultDigest:
    """Every card's digest, the vault's warnings emitted as they come."""
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
    return vault


def _build_locked(
    options: BuildOptions,
    spec: EmbedderSpec,
    out: Path,
    emit: Emit,
    embedder_factory: Callable[[EmbedderSpec], Embedder] | None,
    environ: dict[str, str] | None,
) -> BuildResult:
    """Plan the build, then carry it out (unless the index is up to date already)."""
    model_id, revision, dims = identity(spec)
    vault = _read_vault(options, emit)
    previous = _previous(out, emit, options.full)
    embedder = LazyEmbedder(spec, Identity(model_id, revision, dims), embedder_factory, environ)
    vault_name = vault_identity(options.vault)
    plan = plan_build(
        vault,
        previous,
        options,
        Identity(model_id, revision, dims),
        vault_name=vault_name,
        batch_cards=batch_cards(CHUNK),
        offsets=embedder.offsets,
        warn=lambda message: emit({"event": "warning", "message": message}),
    )
    emit(plan.start_event())
    embedder.planned(plan.total, options.full)
    if plan.up_to_date:
        assert plan.previous is not None
        done = Executed(plan.previous.model.dimensions, len(plan.previous.chunks), 0)
        remove_work_file(work_path_for(out))  # the index is this build's result already
        return _result(plan, done, out, spec.provider, emit, {})
    # Only metadata, paths or the query set changed when nothing is to embed: the
    # file is rewritten without loading a model.
    meta = MetaRow(vault=vault_name, built_at=options.built_at or utc_now())
    done = execute(plan, embedder, out, meta, emit, resume=not options.full)
    return _result(plan, done, out, spec.provider, emit, runtime_of(embedder.opened))


def _result(
    plan: BuildPlan,
    done: Executed,
    out: Path,
    provider: str,
    emit: Emit,
    runtime: dict[str, str],
) -> BuildResult:
    """The build's outcome, also emitted as the ``final`` event (with the runtime that
    embedded, when a local model did)."""
    passages: dict[str, object] = {}
    if plan.recipe is not None:
        passages = {
            "passages": done.passages,
            "passages_embedded": plan.passages_to_embed,
            "passages_reused": plan.passages_kept,
        }
    cards = len(plan.vault.cards)
    result = BuildResult(
        out=out,
        up_to_date=plan.up_to_date,
        cards=cards,
        embedded=plan.cards_to_embed,
        reused=cards - plan.cards_to_embed,
        removed=plan.removed,
        queries=len(plan.queries),
        queries_embedded=done.queries_embedded,
        model=plan.identity.model_id,
        revision=plan.identity.revision,
        dimensions=done.dimensions,
        provider=provider,
        resumed=done.resumed,
        texts_embedded=done.embedded_now,
        **passages,  # type: ignore[arg-type]
    )
    shown = {k: v for k, v in vars(result).items() if k != "out"}
    if plan.recipe is None:
        shown = {k: v for k, v in shown.items() if not k.startswith("passages")}
    emit({"event": "final", **shown, "out": str(out), **runtime})
    return result


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
