"""A snapshot of one vault and its index, serving every query of a process.

Public API (stable; the app and the commands build on it):

``Session.load(root, *, clock=None, cache_dir=None, open_index=True) -> Session``
    Reads the vault (through the parse cache in ``cache_dir``, default the
    user cache directory), ``hql.toml`` and (``open_index``) the semantic index,
    once. Raises ``NotADirectoryError`` when ``root`` is not a directory; every
    other problem becomes a warning or a refusal. ``clock`` (a callable returning
    an aware ``datetime``) dates the snapshot and ages the index; tests inject it.

The start is staged (``hqltui.core.stages``), so a caller can show the cards
before anything can rank: the cards (``open_index=False`` stops there), then the
index (``open_index()``, or the first query that needs it), then each lexical
arm's structures (their term counts through the term cache in ``cache_dir``,
``core.term_cache``) on the first query that needs that arm, or ``prepare(arm)``.
Each part is made once, by whichever thread needs it first; a hybrid query over
bm25 never builds the hashbag matrix.

``session.open_index() -> Session``, ``session.index_pending -> bool``
    Open the index now (a no-op once open); is it still unopened?

``session.prepare(arm=None, progress=None) -> Refusal | None``
    Make a lexical arm ready to rank (default ``[search] lexical``): the index,
    the term counts, the arm's structure and the document frequencies, telling
    ``progress`` each step (``"opening the index"``, ``"counting terms"``,
    ``"building bm25"``). The arm's refusal when it cannot be built.
    ``session.ready(arm=None) -> bool``: is that all made already?
    ``session.pending_step(arm=None) -> str | None``: the step prepare would take first.

``session.query(text, *, lexical=None, limit=None, live=False) -> Answer``
    ``Answer``: a mapping arm -> ``Ranking`` of this one snapshot, holding the
    fused lexical arm, every semantic arm and ``hybrid`` (``answer.lexical``,
    ``.semantic``, ``.hybrid`` name them too). ``lexical`` picks the lexical arm
    (one of ``names.LEXICAL_ARMS``; default ``[search] lexical``) and is the arm
    hybrid fuses; ``limit`` defaults to ``[search] limit``; ``live=True`` allows a
    live query embedding through the configured ``http`` embedder (text leaves
    the machine). A blank query gives empty rankings.

``session.rank(text, arm, *, limit=None, live=False) -> Ranking``
    One ranking alone: any name in ``names.RANKINGS`` (every arm, and ``hybrid``).

``session.scores(text, arm, *, live=False) -> ndarray | Refusal``
    Every card's exact score for one single arm, aligned with ``session.names``.

``session.reload() -> Session``
    A new snapshot (vault and index read again and swapped together); the old
    session stays valid for whoever still holds it. Live embedders are shared.

``session.card(name) -> Card``, ``session.names``, ``session.vault``,
``session.config``, ``session.search`` (the ``[search]`` settings),
``session.loaded_at``.

``session.needs_live_vector(text) -> bool``
    True when the semantic arm would need a live query embedding for ``text``
    (an index is open and its query table has no vector for the text).

``session.card_status(name) -> "fresh" | "stale" | "missing"``
    The card's state in the semantic index (``missing`` also when there is no
    usable index). ``KeyError`` for a name that is not a card.
    ``session.card_statuses()``: every card's, by name.

``session.index_summary() -> IndexSummary``
    ``state`` (``ok`` | ``none`` | ``refused``, or ``opening`` while the index is
    not opened yet: never waits for it), ``path``, ``fresh``, ``stale``,
    ``missing``, ``orphan`` counts, ``model``, ``revision``, ``built_at``,
    ``age`` (a ``timedelta`` by the clock, or ``None``), ``refusal``.

``session.warnings -> tuple[Warning, ...]``
    Everything the warnings strip shows: loader warnings and the not-an-HMD-vault
    notice (``loader``), refused ``hql.toml`` tables (``config``), unresolved
    links and relations (``link``), and the index's ``stale`` / ``absent`` /
    ``orphan`` warnings — or its refusal, as a ``config`` warning — and every
    arm whose structures could not be built (``arm``). It never waits: the
    index's warnings appear once it is open, an arm's refusal once it was tried.

A broken arm refuses alone: building each arm's structures (the
shared term counts, the hashbag matrix, the bm25 postings, opening the index)
and scoring each arm run under their own guard, whenever they run. An exception there becomes
that arm's ``Refusal`` (``ranking.arm_failure``: the arm's name and the error
in one line); the other arms still answer, and hybrid shows the refusal of an
arm it fuses.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cached_property, partial
from pathlib import Path

import numpy as np

from hqltui.core import arms
from hqltui.core.arms import ARMS
from hqltui.core.config import AppConfig, SearchConfig, load_app_config
from hqltui.core.fusion import FusionConfig, QueryStats
from hqltui.core.hybrid import ArmScores
from hqltui.core.index_reader import SemanticIndex, read_refusal
from hqltui.core.index_reader import open_index as open_index_of
from hqltui.core.lexical import DocFreq
from hqltui.core.names import HYBRID, LEXICAL_ARMS, RANKINGS, SEMANTIC, SEMANTIC_ARMS
from hqltui.core.oneline import link_target
from hqltui.core.passage_scores import best_passage_scores
from hqltui.core.ranking import (
    Hit,
    Ranking,
    Refusal,
    Retrieval,
    Warning,
    hits_at,
    rank,
    rank_indices,
)
from hqltui.core.semantic import LiveEmbedders, embed_local, query_vector, semantic_scores
from hqltui.core.stages import LexicalArms, Once, Progress, guarded
from hqltui.core.term_cache import terms_file
from producer.parse_cache import ParseCache
from producer.vault import Card, Vault, load_vault, vault_problem
from producer.wording import with_fix

__all__ = ["Answer", "IndexSummary", "Session"]

Clock = Callable[[], datetime]
_guarded = guarded


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, eq=False)
class Answer(Mapping[str, Ranking]):
    """arm -> ranking for one query: the fused lexical arm, every semantic arm, and hybrid
    (in ``names.RANKINGS`` order). ``lexical``/``semantic``/``hybrid`` name them too."""

    query: str
    rankings: dict[str, Ranking]
    lexical_arm: str
    # Local rrf of the same windows when hybrid is another method: fused when first
    # asked for (only the engine row compares with it), not on every keystroke.
    rrf: Ranking | Callable[[], Ranking] | None = None

    @property
    def rrf_hybrid(self) -> Ranking:
        """Hybrid by rrf (the engine's method, so its row compares with this one)."""
        if callable(self.rrf):
            object.__setattr__(self, "rrf", self.rrf())
        assert not callable(self.rrf)
        return self.rrf if self.rrf is not None else self.rankings[HYBRID]

    def __getitem__(self, arm: str) -> Ranking:
        return self.rankings[arm]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rankings)

    def __len__(self) -> int:
        return len(self.rankings)

    @property
    def lexical(self) -> Ranking:
        return self.rankings[self.lexical_arm]

    @property
    def semantic(self) -> Ranking:
        return self.rankings[SEMANTIC_ARMS[0]]

    @property
    def hybrid(self) -> Ranking:
        return self.rankings[HYBRID]

    def to_json(self) -> dict[str, object]:
        return {"query": self.query, "lexical_arm": self.lexical_arm,
                "arms": {arm: r.to_json() for arm, r in self.rankings.items()}}


@dataclass(frozen=True)
class IndexSummary:
    state: str  # "ok" | "none" | "refused"
    path: str | None = None
    fresh: int = 0
    stale: int = 0
    missing: int = 0
    orphan: int = 0
    model: str | None = None
    revision: str | None = None
    built_at: str | None = None
    age: timedelta | None = None
    refusal: Refusal | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "path": self.path,
            "fresh": self.fresh,
            "stale": self.stale,
            "missing": self.missing,
            "orphan": self.orphan,
            "model": self.model,
            "revision": self.revision,
            "built_at": self.built_at,
            "refusal": None if self.refusal is None else self.refusal.to_json(),
        }


@dataclass
class Session:
    root: Path
    vault: Vault
    config: AppConfig
    lexical: LexicalArms  # each lexical arm's structure (arms.Arm.build) or refusal, on need
    _index: Once[SemanticIndex | Refusal]  # opened on first need
    loaded_at: datetime
    clock: Clock = _now
    cache_dir: Path | None = None
    embedders: LiveEmbedders = field(default_factory=LiveEmbedders)
    names: tuple[str, ...] = ()
    _position: dict[str, int] = field(default_factory=dict)
    # Score with passages when the index holds them (False: card vectors only).
    use_passages: bool = True

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(
        cls,
        root: str | Path,
        *,
        clock: Clock | None = None,
        cache_dir: str | Path | None = None,
        embedders: LiveEmbedders | None = None,
        open_index: bool = True,
    ) -> Session:
        if problem := vault_problem(root):  # before Path(): Path("") is the current directory
            raise NotADirectoryError(problem)
        root = Path(root)
        clock = clock or _now
        cache_path = Path(cache_dir) if cache_dir is not None else None
        vault = load_vault(root, cache=ParseCache(root, cache_path))
        config = load_app_config(root)
        cards = vault.cards

        def texts() -> tuple[list[str], list[str]]:
            return [c.text for c in cards], [c.content_hash for c in cards]

        index: Once[SemanticIndex | Refusal] = Once(
            lambda: _guarded("semantic", "cannot be opened", lambda: open_index_of(vault, config)))
        names = tuple(card.name for card in cards)
        session = cls(
            root=root,
            vault=vault,
            config=config,
            lexical=LexicalArms(texts, lambda analyser: terms_file(root, cache_path, analyser)),
            _index=index,
            loaded_at=clock(),
            clock=clock,
            cache_dir=cache_path,
            embedders=embedders or LiveEmbedders(),
            names=names,
            _position={name: i for i, name in enumerate(names)},
        )
        if open_index:
            session.open_index()
        return session

    # ------------------------------------------------------------------ stages

    @property
    def index(self) -> SemanticIndex | None:
        """The semantic index (opened now if it is not yet), or None when it refused."""
        opened = self._index.get()
        return None if isinstance(opened, Refusal) else opened

    @index.setter
    def index(self, value: SemanticIndex) -> None:
        self._index.set(value)

    @property
    def index_refusal(self) -> Refusal | None:
        opened = self._index.get()
        return opened if isinstance(opened, Refusal) else None

    @property
    def index_pending(self) -> bool:
        return not self._index.done

    def open_index(self) -> Session:
        self._index.get()
        return self

    @property
    def doc_freq(self) -> DocFreq | None:
        """The adaptive fusion's signals' document frequencies, by the fused lexical arm's
        analyser; None when its term counts failed."""
        return self.lexical.doc_freq(self.search.lexical)

    def pending_step(self, arm: str | None = None) -> str | None:
        """The first step ``prepare(arm)`` would take ("opening the index", "counting
        terms", "building bm25"), or None when ``arm`` can rank now."""
        if self.index_pending:
            return "opening the index"
        return self.lexical.next_step(arm or self.search.lexical)

    def ready(self, arm: str | None = None) -> bool:
        """Can ``arm`` (default ``[search] lexical``) rank without building anything?"""
        return self.pending_step(arm) is None

    def prepare(self, arm: str | None = None, progress: Progress | None = None) -> Refusal | None:
        arm = arm or self.search.lexical
        arms.lexical_arm(arm)
        if self.index_pending and progress is not None:
            progress("opening the index")
        self.open_index()
        made = self.lexical.prepare(arm, progress)
        return made if isinstance(made, Refusal) else None

    def card_level(self) -> Session:
        """This snapshot with the semantic arm on card vectors alone, even where the
        index holds passages (``eval`` compares the two)."""
        return replace(self, use_passages=False)

    @property
    def scores_passages(self) -> bool:
        """Does the semantic arm score cards with their passages?"""
        return self.use_passages and self.index is not None and self.index.passages is not None

    def reload(self) -> Session:
        return Session.load(
            self.root, clock=self.clock, cache_dir=self.cache_dir, embedders=self.embedders
        )

    def with_index_reread(self) -> Session:
        """This snapshot of the vault with its index read again: after a build that changed
        the index and nothing else, the cards, their lexical arms and the config are the
        ones on hand (on 17,570 man pages, seconds not spent reading them again)."""
        vault, config = self.vault, self.config
        index: Once[SemanticIndex | Refusal] = Once(
            lambda: _guarded("semantic", "cannot be opened", lambda: open_index_of(vault, config)))
        return replace(self, _index=index, loaded_at=self.clock()).open_index()

    # ------------------------------------------------------------------ facts

    # How the engine client embeds a query with this session's model (see LocalCards).
    embed_query = staticmethod(embed_local)

    @property
    def search(self) -> SearchConfig:
        return self.config.search

    def card(self, name: str) -> Card:
        return self.vault.by_name[name]

    def card_status(self, name: str) -> str:
        position = self._position[name]
        return "missing" if self.index is None else self.index.status(position)

    def card_statuses(self) -> dict[str, str]:
        """Every card's ``card_status`` at once, by name (the app's card list: one look
        at the index, not one per card)."""
        ix = self.index
        if ix is None:
            return dict.fromkeys(self.names, "missing")
        return {name: ix.status(at) for at, name in enumerate(self.names)}

    def needs_live_vector(self, text: str) -> bool:
        """True when the semantic arm would need a live embedding of ``text``.

        That is: an index is open, the text is not blank, and the index's query
        table holds no vector for it (so ranking may load a model or call the
        http embedder). The app shows the lexical column first in that case.
        """
        return self.index is not None and bool(text.strip()) and text not in self.index.queries

    def index_summary(self) -> IndexSummary:
        if self.index_pending:
            return IndexSummary(state="opening", path=self.config.index)
        if self.index is None:
            assert self.index_refusal is not None
            state = "none" if self.config.index is None else "refused"
            path = None if self.config.index is None else self.config.index
            return IndexSummary(
                state=state, path=path, missing=len(self.names), refusal=self.index_refusal
            )
        ix = self.index
        age = None
        try:
            built = datetime.fromisoformat(ix.built_at)
            if built.tzinfo is not None:
                age = self.clock() - built
        except ValueError:
            pass
        return IndexSummary(
            state="ok",
            path=ix.path,
            fresh=ix.fresh_count,
            stale=len(ix.stale_names),
            missing=len(ix.missing_names),
            orphan=len(ix.orphan_names),
            model=ix.model,
            revision=ix.revision,
            built_at=ix.built_at,
            age=age,
        )

    @property
    def warnings(self) -> tuple[Warning, ...]:
        """Made without waiting for anything: the vault's and hql.toml's warnings (made
        once), the refusal of each lexical arm tried so far, then the index's warnings
        once it is open."""
        out = list(self._vault_warnings)
        for built in self.lexical.built().values():
            if isinstance(built, Refusal):
                out.append(Warning("arm", f"{built.message}; the other arms still answer"))
        if not self.index_pending:
            out.extend(self._index_warnings)
        return tuple(out)

    @cached_property
    def _vault_warnings(self) -> tuple[Warning, ...]:
        """Made once: a session is one snapshot, and the app reads its warnings on every
        paint (on a vault of 17.5k cards the link check alone takes tens of milliseconds)."""
        out: list[Warning] = []
        if self.vault.notice:
            out.append(Warning("loader", self.vault.notice))
        for message in self.vault.warnings:
            out.append(Warning(getattr(message, "kind", "loader"), str(message)))
        for table, message in sorted(self.config.errors.items()):
            if self.config.file_error:
                break  # the whole file is broken: one message, with the index's
            if table == "semantics":
                continue  # a refused [semantics] is the index's refusal: shown once, there
            out.append(Warning("config", message))
        for card, target in self.vault.unresolved():
            shown = link_target(target)
            message = f"`{card}` links to `{shown}`, which is not a card"
            out.append(Warning("link", message, (card,)))
        return tuple(out)

    @cached_property
    def _index_warnings(self) -> tuple[Warning, ...]:
        if self.index is not None:
            return tuple(self.index.warnings())
        if self.index_refusal is not None and self.config.file_error:
            return (Warning("config", "semantic search is off: "
                            + with_fix(self.config.file_error, self.config.file_fix)),)
        if self.index_refusal is not None:
            return (Warning("config", f"semantic search is off: {self.index_refusal.message}"),)
        return ()

    # ------------------------------------------------------------------ arms

    def _lexical_retrieval(self, arm: str, text: str) -> Retrieval:
        declared = arms.lexical_arm(arm)
        return Retrieval(
            arm=arm,
            query=text,
            index=self.root.as_posix(),
            model=declared.model,
            revision=declared.revision,
            metric=declared.metric,
            approximate=False,
            query_vector_source="text",
        )

    def _lexical(self, arm: str, text: str, cut: int | None) -> ArmScores:
        declared = arms.lexical_arm(arm)  # ValueError for a name that is not a lexical arm
        retrieval = self._lexical_retrieval(arm, text)
        built = self.lexical[arm]
        if isinstance(built, Refusal):
            return ArmScores(arm, None, retrieval, refusal=built)
        assert declared.score is not None
        score = declared.score
        scores = _guarded(arm, "failed on this query", lambda: score(built, text, cut))
        if isinstance(scores, Refusal):
            return ArmScores(arm, None, retrieval, refusal=scores)
        return ArmScores(arm, scores, retrieval)

    def _semantic(self, text: str, cut: int | None, live: bool) -> ArmScores:
        if self.index is None:
            assert self.index_refusal is not None
            return ArmScores("semantic", None, None, refusal=self.index_refusal)
        scored = _guarded(
            "semantic", "failed on this query", lambda: self._read_semantic(text, cut, live)
        )
        if isinstance(scored, Refusal):
            return ArmScores("semantic", None, None, self.index.warnings(), scored)
        return scored

    def _read_semantic(self, text: str, cut: int | None, live: bool) -> ArmScores | Refusal:
        try:
            return self._score_semantic(text, cut, live)
        except sqlite3.Error as exc:  # the file under the passages' rows: locked or damaged
            assert self.index is not None
            return read_refusal(self.index, exc)

    def _score_semantic(self, text: str, cut: int | None, live: bool) -> ArmScores:
        ix = self.index
        assert ix is not None
        warnings = ix.warnings()
        qv = query_vector(ix, self.vault, self.config, text, live=live, embedders=self.embedders)
        passages = ix.passages if self.use_passages else None
        retrieval = Retrieval(
            arm="semantic",
            query=text,
            index=ix.path,
            model=ix.model,
            revision=ix.revision,
            metric=ix.metric,
            approximate=False,
            query_vector_source=qv.source,
            runtime=qv.runtime,
            passages=None if passages is None else passages.retrieval(),
        )
        warnings = warnings + qv.warnings
        if qv.refusal is not None or qv.vector is None:
            return ArmScores("semantic", None, retrieval, warnings, qv.refusal)
        if passages is not None:
            scores, best = best_passage_scores(ix.matrix, ix.present, passages, qv.vector, cut)
            return ArmScores("semantic", scores, retrieval, warnings, passages=best)
        return ArmScores("semantic", semantic_scores(ix, qv.vector, cut), retrieval, warnings)

    def ranking_of(self, scored: ArmScores, limit: int | None) -> Ranking:
        """One arm's column from its scores (``arm_windows``), cut at ``limit``."""
        if scored.refusal is not None or scored.scores is None:
            return Ranking(
                retrieval=scored.retrieval, warnings=scored.warnings, refusal=scored.refusal
            )
        if scored.top is not None and limit is not None and scored.total is not None:
            hits = hits_at(scored.ranked(limit), scored.scores, self.names)
            hits = self._with_passages(hits, scored)
            return Ranking(hits, scored.retrieval, scored.warnings, None, scored.total)
        hits, total = rank(scored.scores, self.names, limit)
        return Ranking(
            self._with_passages(hits, scored), scored.retrieval, scored.warnings, None, total
        )

    def _with_passages(self, hits: tuple[Hit, ...], *scored: ArmScores) -> tuple[Hit, ...]:
        """Each hit with the passage that answered for it, where an arm scored passages
        (for hybrid: only where that arm selected the card)."""
        found = [(s.arm, s.passages) for s in scored if s.passages]
        if not found:
            return hits
        out = []
        for hit in hits:
            at = self._position[hit.card]
            passage = next(
                (passages[at] for arm, passages in found if at in passages
                 and (not hit.arms or hit.arms.get(arm) is not None)),
                None,
            )
            out.append(replace(hit, passage=passage) if passage is not None else hit)
        return tuple(out)

    @staticmethod
    def _ranked(scored: ArmScores, cut: int) -> ArmScores:
        """Rank once: the arm's column and its hybrid window are prefixes of this."""
        if scored.scores is None:
            return scored
        top, total = rank_indices(scored.scores, cut)
        return replace(scored, top=top, total=total)

    def _empty(self, arm: str, text: str) -> Ranking:
        if arm in LEXICAL_ARMS:
            return Ranking(retrieval=self._lexical_retrieval(arm, text))
        return Ranking()

    # ------------------------------------------------------------------ queries

    def _limit(self, limit: int | None) -> int:
        return self.search.limit if limit is None else max(0, int(limit))

    def query(
        self,
        text: str,
        *,
        lexical: str | None = None,
        limit: int | None = None,
        live: bool = False,
        fusion: FusionConfig | None = None,
    ) -> Answer:
        """``fusion`` replaces the configured fusion for this query (the app's method
        cycle, ``eval --fusion``)."""
        arm = lexical or self.search.lexical
        arms.lexical_arm(arm)
        limit = self._limit(limit)
        fused = (arm, *SEMANTIC_ARMS)
        if not text.strip():
            return Answer(text, {a: self._empty(a, text) for a in (*fused, HYBRID)}, arm)
        scored = self.arm_windows(text, lexical=arm, limit=limit, live=live)
        rankings = {a: self.ranking_of(s, limit) for a, s in scored.items()}
        config = fusion or self.search.fusion_config()
        rankings[HYBRID] = self.fuse(text, list(scored.values()), limit, config)
        rrf = None
        if config.method != "rrf":
            windows = list(scored.values())
            rrf = partial(self.fuse, text, windows, limit, self.search.fusion_config("rrf"))
        return Answer(text, rankings, arm, rrf)

    def arm_windows(
        self, text: str, *, lexical: str, limit: int, live: bool = False
    ) -> dict[str, ArmScores]:
        """The fused arms' scores, each ranked once deep enough for its column and its
        hybrid window: fusing them again (``fuse``) is arithmetic, no re-scoring."""
        cut = max(limit, self.search.window)
        return {a: self._ranked(self._scored(a, text, cut, live), cut)
                for a in (lexical, *SEMANTIC_ARMS)}

    def _scored(self, arm: str, text: str, cut: int | None, live: bool) -> ArmScores:
        """One arm's scores, by the kind the registry declares for it."""
        if arm not in ARMS:
            raise ValueError(f"unknown arm `{arm}`; accepted: {', '.join(ARMS)}")
        if ARMS[arm].kind == SEMANTIC:
            return self._semantic(text, cut, live)
        return self._lexical(arm, text, cut)

    def rank(self, text: str, arm: str, *, limit: int | None = None, live: bool = False) -> Ranking:
        limit = self._limit(limit)
        if arm == HYBRID:
            return self.query(text, limit=limit, live=live).hybrid
        if arm not in ARMS:
            raise ValueError(f"unknown arm `{arm}`; accepted: {', '.join(RANKINGS)}")
        if not text.strip():
            return self._empty(arm, text)
        return self.ranking_of(self._scored(arm, text, limit, live), limit)

    def fuse(
        self,
        text: str,
        scored: list[ArmScores],
        limit: int | None,
        fusion: FusionConfig | None = None,
    ) -> Ranking:
        """Hybrid of ``scored`` ([lexical, semantic], from ``arm_windows``) by ``fusion``
        (default: the configured one)."""
        config = fusion or self.search.fusion_config()
        stats = QueryStats(text, 0, {})  # no counts: the query's shape only
        fused_arm = scored[0].arm if scored and arms.is_lexical(scored[0].arm) else None
        counted = self.lexical.doc_freq(fused_arm) if fused_arm else self.doc_freq
        if counted is not None:
            stats = QueryStats(text, counted.size, counted.of(text), counted.holds, counted.terms)
        fused = arms.fuse(
            scored,
            self.names,
            query=text,
            config=config,
            window=self.search.window,
            limit=limit,
            exclude=None if self.index is None else self.index.excluded,
            stats=stats,
        )
        return replace(fused, hits=self._with_passages(fused.hits, *scored))

    def scores(self, text: str, arm: str, *, live: bool = False) -> np.ndarray | Refusal:
        """Every card's score for one single arm (aligned with ``names``), exact everywhere."""
        scored = self._scored(arm, text, None, live)
        if scored.refusal is not None or scored.scores is None:
            assert scored.refusal is not None
            return scored.refusal
        return scored.scores
