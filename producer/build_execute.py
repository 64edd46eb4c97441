"""Carrying out a ``BuildPlan``: embedding its batches in order and writing the index.

Each card batch is embedded in one call and its rows (card vectors, passages,
kept ones included) go to the writer before the next batch is read, so the
texts in flight and the vectors not yet written stay bounded. The queries'
batch comes last. The file is written beside the index and renamed over it
only when every batch is in (``IndexWriter``).

With a work file (``build_checkpoint``), a batch embedded by an interrupted
build of the same plan is taken from it instead of being embedded; each batch
this build embeds is checkpointed there, and the file goes when the index is in.
A text planned as a copy of an earlier identical text takes that text's vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from producer.build_checkpoint import WorkFile, work_path_for
from producer.build_eta import Pace
from producer.build_options import BuildError
from producer.build_plan import (
    Batch,
    BuildPlan,
    Identity,
    PlannedText,
    TokenOffsets,
    read_card_text,
)
from producer.crash_points import pause_point
from producer.embedders import Embedder, EmbedderSpec, embed_texts, open_embedder
from producer.index_format import METRIC, CardRow, ChunkRow, MetaRow, ModelRow, QueryRow, pack
from producer.index_writer import IndexWriter
from producer.passages import DEFAULT_RECIPE, passage_text

# Tokens a card or query counts for in the ETA (the plan counts a passage's own):
# the local model's window, which a man page's card text fills.
MAX_TOKENS = 256

Event = dict[str, object]
Emit = Callable[[Event], None]
Key = tuple[str, int]  # (card or query text, passage ordinal; -1 for the card or query)


class LazyEmbedder:
    """The embedder, opened on first use only (an up-to-date build loads no model),
    and refused when it is not the model the plan was made for."""

    def __init__(
        self,
        spec: EmbedderSpec,
        identity: Identity,
        factory: Callable[[EmbedderSpec], Embedder] | None,
        environ: dict[str, str] | None,
    ) -> None:
        self.spec = spec
        self.identity = identity
        self.factory = factory or (lambda s: open_embedder(s, environ))
        self._embedder: Embedder | None = None
        self._plan: tuple[int, bool] | None = None  # (texts to embed, --full), once planned

    def get(self) -> Embedder:
        if self._embedder is None:
            embedder = self.factory(self.spec)
            got = (embedder.model_id, embedder.revision)
            if got != (self.identity.model_id, self.identity.revision):
                raise BuildError(
                    f"the embedder reports {embedder.model_id} at {embedder.revision}, where "
                    f"{self.identity.model_id} at {self.identity.revision} was expected"
                )
            self._embedder = embedder
            self._tell_plan()
        return self._embedder

    def planned(self, texts: int, full: bool) -> None:
        """The plan is made: a local model chooses its runtime from its size
        (``producer.embedders.local.small_build``) when it loads."""
        self._plan = (texts, full)
        self._tell_plan()

    def _tell_plan(self) -> None:
        told = getattr(self._embedder, "planned", None)
        if told is not None and self._plan is not None:
            told(*self._plan)

    @property
    def opened(self) -> Embedder | None:
        """The embedder if a batch or a cut opened it, else None (nothing embedded)."""
        return self._embedder

    def offsets(self) -> TokenOffsets:
        """The tokenizer passages are cut on (only the local provider has one)."""
        offsets = getattr(self.get(), "token_offsets", None)
        if offsets is None:
            raise BuildError(
                f"the {self.spec.provider} embedder cannot cut passages (no tokenizer)"
            )
        return offsets


@dataclass(frozen=True)
class Executed:
    dimensions: int
    passages: int  # passage rows written
    queries_embedded: int
    resumed: int = 0  # vectors taken from an interrupted build's work file
    embedded_now: int = 0  # texts this build embedded itself


class _Progress:
    """Embeds a batch's texts (or takes them from the work file), reporting ``progress``
    events over the whole plan with a rate and an ETA (``build_eta.Pace``)."""

    def __init__(
        self, embedder: Embedder, plan: BuildPlan, emit: Emit, work: WorkFile | None
    ) -> None:
        self.embedder = embedder
        self.total = plan.total
        self.pace = Pace([_weight(t) for t in plan.texts])
        self.emit = emit
        self.work = work
        self.done = 0
        self.embedded = 0  # texts this process embedded (not taken from the work file)
        self.batches = 0  # batches this process embedded
        self.started = time.monotonic()

    def _report(self, done: int) -> None:
        now = time.monotonic()
        self.emit(
            {
                "event": "progress",
                "done": done,
                "total": self.total,
                "elapsed": round(now - self.started, 3),
                **self.pace.at(done, now),
            }
        )

    def embed(self, texts: list[str], planned: list[PlannedText]) -> list[bytes]:
        offset = self.done
        reused: list[int] = []

        def on_reused(rows: Sequence[int]) -> None:
            reused.extend(rows)
            self.pace.skip([offset + i for i in rows])

        def on_batch(done: int) -> None:
            self._report(offset + done)
            if self.embedded == 0:
                pause_point("embedding")

        parts = self.work.call(texts, on_reused) if self.work is not None else None
        self.pace.begin(offset, time.monotonic())
        labels = [t.label for t in planned]
        vectors = embed_texts(self.embedder, texts, on_batch, labels, parts)
        self.done += len(texts)
        self.embedded += len(texts) - len(reused)
        if len(reused) < len(texts):
            self.batches += 1
            pause_point(f"batch-{self.batches}")
        return [pack(v) for v in vectors]


def _weight(text: PlannedText) -> int:
    """A text's share of the work for the ETA: its tokens (a passage's window; a card or
    query, whose tokens the plan does not count, as a full window)."""
    return text.tokens if text.tokens else MAX_TOKENS


def execute(
    plan: BuildPlan,
    embedder: LazyEmbedder,
    out: Path,
    meta: MetaRow,
    emit: Emit,
    *,
    resume: bool = True,
) -> Executed:
    """Embed the plan's batches in order and write the index; returns what was written.
    ``resume``: take batches from an interrupted build's work file (not with ``--full``)."""
    work = _work_file(plan, embedder, out, meta, emit, resume) if plan.total else None
    try:
        done = _execute(plan, embedder, out, emit, work, meta)
    except BaseException:
        if work is not None:  # a clean stop: keep what was made
            work.save()
            work.close()
        raise
    if work is not None:
        work.finish()
    return done


def _work_file(
    plan: BuildPlan, embedder: LazyEmbedder, out: Path, meta: MetaRow, emit: Emit, resume: bool
) -> WorkFile:
    """The work file keyed by all the numbers depend on; says what it resumes."""
    opened = embedder.get()
    load = getattr(opened, "load", None)
    if load is not None:  # the local model's runtime is known once it is loaded
        load()
    key = {
        "model": plan.identity.model_id,
        "revision": plan.identity.revision,
        "dimensions": plan.identity.dimensions or opened.dimensions or 0,
        "chunk_recipe": plan.recipe.digest if plan.recipe is not None else None,
        "runtime": getattr(opened, "runtime_used", None) or opened.provider,
        "vault": meta.vault,
    }
    work = WorkFile(
        work_path_for(out),
        key,
        lambda message: emit({"event": "warning", "message": message}),
        resume=resume,
    )
    if work.available:
        emit({"event": "resume", "vectors": work.available})
    return work


def _execute(
    plan: BuildPlan,
    embedder: LazyEmbedder,
    out: Path,
    emit: Emit,
    work: WorkFile | None,
    meta: MetaRow,
) -> Executed:
    progress = _Progress(embedder.get(), plan, emit, work) if plan.total else None
    card_batches = [b for b in plan.batches if b.cards]
    shared: dict[str, bytes] = {}  # vectors of texts that later texts copy
    copied = {t.key for b in plan.batches for t in b.copies}
    rows = (_card_batch(plan, b, progress, shared, copied) for b in card_batches)
    # The first batch is made before the file opens: when neither the embedder nor a
    # reusable index declared the width, its vectors do (nothing reusable means every
    # card was embedded, and a vault has at least one).
    first = next(rows)
    dims = plan.identity.dimensions or len(first[0][0].embedding) // 4
    identity = plan.identity
    model = ModelRow(identity.model_id, identity.revision, dims, METRIC, 1)
    written = 0
    with IndexWriter(out, model, meta, plan.recipe) as writer:
        for cards, passages in chain([first], rows):
            writer.add_cards(cards)
            if plan.recipe is not None:
                writer.add_chunks(passages)
            written += len(passages)
        queries = _query_vectors(plan, progress)
        writer.add_queries(QueryRow(t, queries[t]) for t in plan.queries)
        writer.commit()
    return Executed(
        dims,
        written,
        len(plan.queries_to_embed),
        work.reused if work is not None else 0,
        progress.embedded if progress is not None else 0,
    )


def _query_vectors(plan: BuildPlan, progress: _Progress | None) -> dict[str, bytes]:
    vectors = dict(plan.kept_queries)
    for batch in plan.batches:
        if batch.cards or not batch.texts:
            continue
        assert progress is not None
        planned = list(batch.texts)
        blobs = progress.embed([t.name for t in planned], planned)
        vectors.update(zip((t.name for t in planned), blobs, strict=True))
    return vectors


def _card_batch(
    plan: BuildPlan,
    batch: Batch,
    progress: _Progress | None,
    shared: dict[str, bytes],
    copied: set[str],
) -> tuple[list[CardRow], list[ChunkRow]]:
    """One batch's card rows and passage rows, in name order."""
    texts, hashes = _read_batch(plan, batch)
    blobs: list[bytes] = []
    if texts:
        assert progress is not None
        blobs = progress.embed(texts, list(batch.texts))
    del texts
    fresh: dict[Key, bytes] = {}
    for t, blob in zip(batch.texts, blobs, strict=True):
        fresh[(t.name, t.ordinal)] = blob
        if t.key in copied:
            shared[t.key] = blob
    for t in batch.copies:
        if t.kind == "card" and hashes[t.name] != t.key:
            raise BuildError(
                f"{plan.vault.by_name[t.name].path}: changed while building; build again"
            )
        fresh[(t.name, t.ordinal)] = shared[t.key]
    cards = [
        CardRow(c.name, c.path, hashes[c.name], fresh[(c.name, -1)])
        if (c.name, -1) in fresh
        else CardRow(c.name, c.path, c.content_hash, plan.kept_cards[c.name])
        for c in batch.cards
    ]
    return cards, _passage_rows(plan, cards, fresh)


def _read_batch(plan: BuildPlan, batch: Batch) -> tuple[list[str], dict[str, str]]:
    """The batch's texts in plan order, each card read once now; a card cut while
    planning must still be the text it was cut from."""
    planned: dict[str, list[PlannedText]] = {}
    for t in batch.texts:
        planned.setdefault(t.name, []).append(t)
    texts: list[str] = []
    hashes: dict[str, str] = {}
    recipe = plan.recipe or DEFAULT_RECIPE
    for card in batch.cards:
        cut = plan.cuts.get(card.name)
        if card.name in plan.kept_cards and cut is None:
            continue
        text, hashes[card.name], title = read_card_text(plan.vault, card)
        if cut is not None and hashes[card.name] != cut.text_hash:
            raise BuildError(f"{card.path}: changed while building; build again")
        for t in planned.get(card.name, []):
            if t.kind == "card":
                texts.append(text)
            else:
                assert cut is not None
                texts.append(passage_text(text, title, cut.spans[t.ordinal], recipe))
        del text
    return texts, hashes


def _passage_rows(plan: BuildPlan, cards: list[CardRow], fresh: dict[Key, bytes]) -> list[ChunkRow]:
    """Kept passages as stored; cut ones with their new vectors (a whole-text passage
    takes its card's vector)."""
    if plan.recipe is None:
        return []
    rows: list[ChunkRow] = []
    for card in cards:
        kept = plan.kept_passages.get(card.name)
        if kept is not None:
            rows += kept
            continue
        for o, (a, b) in enumerate(plan.cuts[card.name].spans):
            rows.append(ChunkRow(card.name, o, a, b, fresh.get((card.name, o), card.embedding)))
    return rows
