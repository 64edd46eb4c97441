"""The plan of a build: what is kept, embedded and removed, and in which batches.

``plan_build`` decides everything a build will do before any vector is made:
which stored card, passage and query vectors are kept byte for byte, which
texts are embedded, how many rows go, and the batch plan — every text to
embed, in order, with the batch that embeds it. It reads (the vault's
digests, the previous index, and for passages the card texts and the model's
tokenizer to cut them) and writes nothing, so tests check a plan without a
model, and a resumed build can replay the same plan and skip the batches
already stored.

A batch is what the executor embeds in one call and writes as one run of
rows: up to ``batch_cards`` changed cards (their card texts and passages), in
name order, with the unchanged cards between them; the queries come last, as
one batch of their own.

One embedding per distinct text: a card text or passage whose exact embedded
string (its SHA-256) was planned already is not embedded again but copies the
vector of its first occurrence (``Batch.copies``). Deciding it here makes an
interrupted and an uninterrupted build dedupe, and so batch, alike.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from producer.build_options import BuildError, BuildOptions
from producer.card_digests import CardDigest, VaultDigest, card_parts
from producer.index_checks import is_unit, offsets_problem, ordinal_problem
from producer.index_format import METRIC, SCHEMA_VERSION, TOOL_VERSION, ChunkRow, IndexContents
from producer.passages import (
    DEFAULT_RECIPE,
    Recipe,
    Span,
    cut_windows,
    passage_text,
    tokens_needed,
    whole,
)
from producer.vault import content_hash
from producer.yamlcore import HeaderError

Warn = Callable[[str], None]
TokenOffsets = Callable[[str, int], list[Span]]
"""A tokenizer's character spans of the first ``needed`` tokens of a text."""


@dataclass(frozen=True)
class PlannedText:
    """One text to embed: a card's own text, one of its passages, or a query."""

    kind: Literal["card", "passage", "query"]
    name: str  # the card's name, or the query's text
    ordinal: int  # the passage's number; -1 for a card or a query
    batch: int
    tokens: int | None  # a passage's tokens (its span, title not counted); None: not counted
    key: str = ""  # SHA-256 of the embedded string ("" for a query: queries are not shared)

    @property
    def label(self) -> str:
        """How an embedding error names this text."""
        if self.kind == "card":
            return f"card `{self.name}`"
        if self.kind == "passage":
            return f"passage {self.ordinal} of `{self.name}`"
        return f"query {self.name!r}"


@dataclass(frozen=True)
class Batch:
    number: int
    cards: tuple[CardDigest, ...]  # the cards whose rows it writes (kept ones too); none: queries
    texts: tuple[PlannedText, ...]  # in the order they are embedded
    copies: tuple[PlannedText, ...] = ()  # texts planned earlier: their vector is copied


@dataclass(frozen=True)
class Cut:
    """A card's passages as cut while planning, and the text hash they were cut from."""

    spans: list[Span]
    tokens: list[int]  # how many of the text's tokens each span holds
    text_hash: str
    whole: bool  # one passage, the whole text: stored with the card's own vector
    keys: list[str] = field(default_factory=list)  # SHA-256 of each passage's embedded string


@dataclass
class Previous:
    """The index being replaced (``None`` when absent or rebuilt with ``--full``),
    and the query texts rescued from one that could no longer be read."""

    contents: IndexContents | None
    rescued: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Identity:
    model_id: str
    revision: str
    dimensions: int | None  # None until an embedder or a reusable index declares it


@dataclass
class BuildPlan:
    identity: Identity
    vault: VaultDigest
    previous: IndexContents | None
    reusable: bool  # same model and revision, no --full: stored vectors may be kept
    recipe: Recipe | None  # None: built without passages
    kept_cards: dict[str, bytes]  # card name -> stored vector kept
    kept_passages: dict[str, list[ChunkRow]]  # card name -> stored passage rows kept
    cuts: dict[str, Cut]  # card name -> passages cut afresh
    queries: list[str]  # every query the index will hold, sorted
    kept_queries: dict[str, bytes]  # query text -> stored vector kept
    removed: int  # stored cards no longer in the vault
    batches: list[Batch]
    up_to_date: bool  # nothing to embed or rewrite: the index is left as it is

    @property
    def texts(self) -> list[PlannedText]:
        return [t for b in self.batches for t in b.texts]

    @property
    def total(self) -> int:
        return sum(len(b.texts) for b in self.batches)

    @property
    def cards_to_embed(self) -> int:
        return sum(1 for c in self.vault.cards if c.name not in self.kept_cards)

    @property
    def passages_to_embed(self) -> int:
        return sum(len(c.spans) for c in self.cuts.values() if not c.whole)

    @property
    def passages_kept(self) -> int:
        return sum(len(rows) for rows in self.kept_passages.values())

    @property
    def queries_to_embed(self) -> list[str]:
        return [q for q in self.queries if q not in self.kept_queries]

    def copies(self, kind: str) -> int:
        """Texts of ``kind`` that copy the vector of an identical text (not embedded)."""
        return sum(1 for b in self.batches for t in b.copies if t.kind == kind)

    @property
    def tokens(self) -> list[int]:
        """Each planned text's weight for the ETA: its tokens when counted."""
        return [t.tokens or 0 for t in self.texts]

    def start_event(self) -> dict[str, object]:
        event: dict[str, object] = {
            "event": "start",
            "cards": len(self.vault.cards),
            "total": self.total,
            "to_embed": self.cards_to_embed,
            "reused": len(self.kept_cards),
            "cards_shared": self.copies("card"),
            "queries": len(self.queries),
        }
        if self.recipe is not None:
            event |= {
                "passages_to_embed": self.passages_to_embed,
                "passages_reused": self.passages_kept,
                "passages_shared": self.copies("passage"),
            }
        return event


def plan_build(
    vault: VaultDigest,
    previous: Previous,
    options: BuildOptions,
    identity: Identity,
    *,
    vault_name: str,
    batch_cards: int,
    offsets: Callable[[], TokenOffsets],
    warn: Warn,
) -> BuildPlan:
    """Decide the whole build. ``offsets`` gives the tokenizer, asked for only when a
    card must be cut into passages; ``warn`` hears each warning as it arises."""
    stored = previous.contents
    reusable = (
        stored is not None
        and not options.full
        and stored.model.id == identity.model_id
        and stored.model.revision == identity.revision
        and (identity.dimensions is None or stored.model.dimensions == identity.dimensions)
    )
    if reusable and identity.dimensions is None:
        assert stored is not None
        identity = Identity(identity.model_id, identity.revision, stored.model.dimensions)
    reused = stored if reusable else None
    kept_cards = _kept_cards(vault, reused, identity.dimensions)
    recipe = _recipe(options, stored)
    stored_passages = _stored_passages(reused, recipe)
    kept_passages = {
        name: rows
        for name, rows in stored_passages.items()
        if name in kept_cards
        and all(_usable(r.embedding, identity.dimensions) for r in rows)
        and _as_written(rows)
    }
    queries = _query_texts(options, stored, previous.rescued, warn)
    kept_queries = _kept_queries(queries, reused, identity.dimensions)
    to_cut = [c for c in vault.cards if recipe is not None and c.name not in kept_passages]
    if options.changed_at_most is not None:  # before cutting: the tokenizer loads the model
        to_embed = [c for c in vault.cards if c.name not in kept_cards]
        recipe_changed = recipe is not None and stored is not None and (
            stored.recipe is None or not stored.recipe.known
            or stored.recipe.digest != recipe.digest)
        only_changed(options.changed_at_most, vault.cards, stored, reusable,
                     [*to_embed, *to_cut], recipe_changed)
    cuts = _cut(vault, to_cut, recipe, offsets) if to_cut else {}
    names = {c.name for c in vault.cards}
    batches = _batches(vault.cards, kept_cards, cuts, batch_cards)
    to_embed_queries = [q for q in queries if q not in kept_queries]
    if to_embed_queries:
        texts = tuple(PlannedText("query", q, -1, len(batches), None) for q in to_embed_queries)
        batches.append(Batch(len(batches), (), texts))
    plan = BuildPlan(
        identity=identity,
        vault=vault,
        previous=stored,
        reusable=reusable,
        recipe=recipe,
        kept_cards=kept_cards,
        kept_passages=kept_passages,
        cuts=cuts,
        queries=queries,
        kept_queries=kept_queries,
        removed=sum(1 for c in stored.cards if c.name not in names) if stored else 0,
        batches=batches,
        up_to_date=False,
    )
    orphans = len(set(stored_passages) - names)
    plan.up_to_date = _up_to_date(plan, options, vault_name, orphans)
    return plan


def _usable(blob: bytes, dims: int | None) -> bool:
    return dims is not None and len(blob) == dims * 4 and is_unit(blob)


def _kept_cards(
    vault: VaultDigest, stored: IndexContents | None, dims: int | None
) -> dict[str, bytes]:
    """Card vectors kept: same name, same content hash, a usable stored vector. A name
    with two stored rows trusts neither (the card is embedded afresh)."""
    if stored is None:
        return {}
    rows = Counter(c.name for c in stored.cards)
    by_name = {c.name: c for c in stored.cards if rows[c.name] == 1}
    kept = {}
    for card in vault.cards:
        row = by_name.get(card.name)
        if (
            row is not None
            and row.content_hash == card.content_hash
            and _usable(row.embedding, dims)
        ):
            kept[card.name] = row.embedding
    return kept


def _recipe(options: BuildOptions, stored: IndexContents | None) -> Recipe | None:
    """Passages: on when asked for, or (asked nothing) when the index holds them already."""
    on = (
        options.passages
        if options.passages is not None
        else stored is not None and stored.recipe is not None
    )
    return DEFAULT_RECIPE if on else None


def _stored_passages(
    stored: IndexContents | None, recipe: Recipe | None
) -> dict[str, list[ChunkRow]]:
    """The stored passage rows by card, when cut by this very recipe (the recipe joins
    the revision here)."""
    found: dict[str, list[ChunkRow]] = {}
    if recipe is None or stored is None or stored.recipe is None:
        return found
    if not stored.recipe.known or stored.recipe.digest != recipe.digest:
        return found
    for row in stored.chunks:
        found.setdefault(row.card, []).append(row)
    return found


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


def quoted(texts: Sequence[str]) -> str:
    return ", ".join(repr(t) for t in texts)


def _query_texts(
    options: BuildOptions, stored: IndexContents | None, rescued: list[str], warn: Warn
) -> list[str]:
    """The queries the index will hold: those asked for, and the stored (or rescued)
    ones unless ``--drop-queries``, which names what it drops."""
    texts = set(options.queries)
    stored_texts = [q.text for q in stored.queries] if stored is not None else rescued
    if not options.drop_queries:
        return sorted(texts | set(stored_texts))
    dropped = sorted(set(stored_texts) - texts)
    if dropped:
        warn(
            f"--drop-queries: dropping {len(dropped)} stored "
            f"quer{'y' if len(dropped) == 1 else 'ies'}: {quoted(dropped)}"
        )
    return sorted(texts)


def _kept_queries(
    queries: list[str], stored: IndexContents | None, dims: int | None
) -> dict[str, bytes]:
    vectors = {q.text: q.embedding for q in stored.queries} if stored is not None else {}
    return {t: vectors[t] for t in queries if t in vectors and _usable(vectors[t], dims)}


def read_card_text(vault: VaultDigest, card: CardDigest) -> tuple[str, str, str]:
    """A card's text, hash and title read now (a card edited since the vault was read
    is stored as embedded)."""
    try:
        return card_parts(vault.root, card)
    except HeaderError as exc:
        raise BuildError(
            f"{card.path}: changed while building and no longer reads as a card ({exc}); "
            "build again"
        ) from None


def _cut(
    vault: VaultDigest,
    cards: list[CardDigest],
    recipe: Recipe | None,
    offsets: Callable[[], TokenOffsets],
) -> dict[str, Cut]:
    """Each card's passages, cut on the model's tokenizer (no vectors yet, so the
    counts the build announces are exact)."""
    assert recipe is not None
    tokens_of = offsets()
    needed = tokens_needed(recipe)
    cuts: dict[str, Cut] = {}
    for card in cards:
        text, text_hash, title = read_card_text(vault, card)
        tokens = tokens_of(text, needed)
        spans = cut_windows(text, tokens, recipe)
        keys = [content_hash(passage_text(text, title, s, recipe)) for s in spans]
        cuts[card.name] = Cut(
            spans, _span_tokens(spans, tokens), text_hash, whole(text, spans), keys
        )
        del text
    return cuts


def _span_tokens(spans: list[Span], tokens: list[Span]) -> list[int]:
    """How many tokens lie inside each span."""
    starts = [a for a, _ in tokens]
    ends = [b for _, b in tokens]
    return [bisect.bisect_right(ends, b) - bisect.bisect_left(starts, a) for a, b in spans]


def _batches(
    cards: list[CardDigest], kept: dict[str, bytes], cuts: dict[str, Cut], batch_cards: int
) -> list[Batch]:
    """Cards in name order, cut after every ``batch_cards`` changed cards (a card with
    a new vector or new passages), so texts in flight and vectors not yet written stay
    bounded whatever the vault's size."""
    batches: list[Batch] = []
    members: list[CardDigest] = []
    changed = 0
    seen: set[str] = set()
    for i, card in enumerate(cards):
        members.append(card)
        changed += card.name not in kept or card.name in cuts
        if changed == batch_cards or i == len(cards) - 1:
            number = len(batches)
            texts: list[PlannedText] = []
            copies: list[PlannedText] = []
            for t in (t for c in members for t in _card_texts(c, number, kept, cuts)):
                (copies if t.key in seen else texts).append(t)
                seen.add(t.key)
            batches.append(Batch(number, tuple(members), tuple(texts), tuple(copies)))
            members, changed = [], 0
    return batches


def _card_texts(
    card: CardDigest, batch: int, kept: dict[str, bytes], cuts: dict[str, Cut]
) -> list[PlannedText]:
    name = card.name
    texts = [] if name in kept else [PlannedText("card", name, -1, batch, None, card.content_hash)]
    cut = cuts.get(name)
    if cut is not None and not cut.whole:
        texts += [
            PlannedText("passage", name, o, batch, n, k)
            for o, (n, k) in enumerate(zip(cut.tokens, cut.keys, strict=True))
        ]
    return texts


def _up_to_date(plan: BuildPlan, options: BuildOptions, vault_name: str, orphans: int) -> bool:
    """Nothing to embed, nothing removed, the same passages, rows and metadata: the
    stored index is this build's result already, and nothing is loaded or written."""
    stored = plan.previous
    if stored is None or not plan.reusable or plan.total or plan.removed:
        return False
    if (stored.recipe is None) != (plan.recipe is None) or orphans or plan.cuts:
        return False
    by_name = {c.name: c for c in plan.vault.cards}
    same_rows = len(stored.cards) == len(plan.vault.cards) and all(
        by_name[c.name].path == c.path for c in stored.cards
    )
    return (
        same_rows
        and stored.meta.vault == vault_name
        and stored.meta.tool_version == TOOL_VERSION
        and stored.meta.schema_version == SCHEMA_VERSION
        and (options.built_at is None or stored.meta.built_at == options.built_at)
        and stored.model.metric == METRIC
        and stored.model.normalized == 1
        and len(stored.queries) == len(plan.queries)
    )


def only_changed(limit: int, cards: Sequence[CardDigest], previous: IndexContents | None,
                 reusable: bool, to_embed: Sequence[CardDigest], recipe_changed: bool) -> None:
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
