"""Engine search: BM25, vector (approximate or ``--exact``) and hybrid, as ``Ranking``s.

The shapes are the local ones (``hqltui.core.ranking``), so the app can put an
engine row of columns beside the local row. Each arm's retrieval names the
engine table as its index (``hotdata:<database>/default.public.<table>``), and
its ``engine`` record the evidence (``hqltui.core.engine.provenance``): the index
that served it (name, type, column, metric, status) or none (a full scan), the
statement, and the engine's own warning, execution time and query run id. An
engine warning is a ``Warning`` of the ranking (kind ``engine``).

* ``bm25``: ``bm25_search(..., W)`` ranked by score, then name; refused (with the
  build command) when the index list shows no ready BM25 index on the text
  column. The query text sent is the query's tokens joined by spaces
  (``bm25_text``), never the raw text: no query syntax of the engine misreads it.
* ``semantic``: the index-served vector shape. ``approximate`` only when the
  index list shows a ready cosine vector index on ``embedding``; otherwise the
  engine scans, the arm says ``approximate = False`` and warns that the index is
  missing. ``exact=True`` sends the full-scan shape (``approximate = False``, no
  warning). A hit's score is the cosine similarity (``1 - cosine_distance``).
  Model and revision are the rows' own (one grouped count, cached until the next
  sync or build), or those ``[engine]`` declares for a table without model
  columns (``model_from``); another model or revision than the query vector's
  refuses the arm, naming both. The table's catalog and columns are ``[engine]``'s
  (``EngineClient.table``).
* ``hybrid``: one RRF statement with the local ``[search]`` k, weights and window;
  every hit carries both arms' ranks and scores (``None`` where an arm did not
  select the card). It needs what both arms need; its ``approximate`` follows its
  vector arm.

The query vector comes from the local index exactly as the local semantic arm
gets it (``hqltui.core.semantic.query_vector``): the index's query table, or a
live embedding with the index's own model and revision, else a refusal. A
refused vector arm makes hybrid refuse too; BM25 still answers.

``EngineAnswer.statements`` holds every statement sent, in order (``--show-sql``).
``client_fusion(bm25, semantic, ...)`` fuses two engine arm rankings on this
side with the one local RRF (``hqltui.core.hybrid.fuse``): the check that the
engine's SQL fusion is the same arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hqltui.core import hybrid
from hqltui.core.engine import provenance, sql
from hqltui.core.engine.client import EngineClient, IndexInfo, QueryResult
from hqltui.core.engine.errors import EngineFailure
from hqltui.core.engine.local import LocalCards
from hqltui.core.engine.operations import Options
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.fusion import RRF, FusionConfig
from hqltui.core.lexical import tokens
from hqltui.core.ranking import ArmScore, Hit, Ranking, Refusal, Retrieval, Warning

BM25_MODEL = "hotdata.bm25_search"
ENGINE_REVISION = "engine"  # the engine does not report a version of its scorer
MODES = ("bm25", "semantic", "hybrid", "all")


@dataclass(frozen=True)
class EngineAnswer:
    query: str
    bm25: Ranking | None = None
    semantic: Ranking | None = None
    hybrid: Ranking | None = None
    statements: tuple[QueryResult, ...] = ()  # every statement sent, in order

    def rankings(self) -> dict[str, Ranking]:
        return {k: v for k, v in (("bm25", self.bm25), ("semantic", self.semantic),
                                  ("hybrid", self.hybrid)) if v is not None}

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rankings().values())

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, **{k: v.to_json() for k, v in self.rankings().items()},
                "statements": [s.to_json() for s in self.statements]}


def bm25_text(text: str) -> str:
    """What ``bm25_search`` is given: the query's tokens (``lexical.tokens``) joined by
    spaces, never the raw text, so no query syntax of the engine can misread it."""
    return " ".join(tokens(text))


def index_label(settings: EngineSettings) -> str:
    return f"hotdata:{settings.database}/{settings.full_table}"


def _evidence(index: IndexInfo | None, ran: QueryResult | None = None,
              **extra: Any) -> dict[str, Any]:
    """An arm's ``engine`` record: what served it and what the engine said."""
    out: dict[str, Any] = {"served_by": None if index is None else index.to_json(),
                           "full_scan": index is None, **extra}
    if ran is not None:
        out.update(sql=ran.sql, warning=ran.warning, execution_time_ms=ran.execution_time_ms,
                   query_run_id=ran.query_run_id)
    return out


def _engine_warnings(ran: QueryResult | None) -> tuple[Warning, ...]:
    if ran is None or not ran.warning:
        return ()
    return (Warning("engine", f"the engine warned: {ran.warning}"),)


@dataclass(frozen=True)
class VectorSide:
    """What the vector arm knows before it is sent: the vector, or why it refuses."""

    vector: list[float] | None
    source: str | None
    model: str
    revision: str
    index: IndexInfo | None
    approximate: bool
    refusal: Refusal | None = None
    warnings: tuple[Warning, ...] = ()  # the query vector's, then the index evidence's
    model_from: str = provenance.STORED  # or provenance.DECLARED: a table without them


def _bm25_retrieval(settings: EngineSettings, text: str, index: IndexInfo | None = None,
                    ran: QueryResult | None = None) -> Retrieval:
    return Retrieval(arm="bm25", query=text, index=index_label(settings), model=BM25_MODEL,
                     revision=ENGINE_REVISION, metric="bm25", approximate=False,
                     query_vector_source="text", engine=_evidence(index, ran))


def _vector_retrieval(settings: EngineSettings, text: str, side: VectorSide,
                      ran: QueryResult | None = None) -> Retrieval:
    return Retrieval(
        arm="semantic", query=text, index=index_label(settings), model=side.model,
        revision=side.revision, metric="cosine", approximate=side.approximate,
        query_vector_source=side.source,
        engine=_evidence(side.index, ran, model_from=side.model_from),
    )


def _hits(rows: list[tuple[str, float]]) -> tuple[Hit, ...]:
    return tuple(Hit(card=name, score=score, rank=r) for r, (name, score) in
                 enumerate(rows, start=1))


def _query_vector(local: LocalCards, text: str, live: bool) -> Any:
    if local.embed is None:  # a caller bug, not a user's: every command passes one
        raise ValueError("LocalCards.embed is needed for a vector search")
    return local.embed(local, text, live)


def vector_side(c: EngineClient, settings: EngineSettings, local: LocalCards, text: str,
                live: bool, indexes: list[IndexInfo]) -> VectorSide:
    """The query vector checked against the rows' model and the index list."""
    index, index_warning = provenance.vector_index(indexes, settings.full_table,
                                                   c.table.vector)
    ix = local.index
    model, revision = (ix.model, ix.revision) if ix else ("", "")
    base = VectorSide(None, None, model, revision, index, index is not None,
                      warnings=() if index_warning is None else (index_warning,))
    if ix is None:
        assert local.refusal is not None
        return replace(base, refusal=local.refusal)
    qv = _query_vector(local, text, live)
    warnings = (*qv.warnings, *base.warnings)
    if qv.refusal is not None or qv.vector is None:
        refusal = qv.refusal or Refusal("no query vector", "hql-semantics build")
        return replace(base, source=qv.source, refusal=refusal, warnings=warnings)
    groups, model_from = provenance.table_models(c)
    if len(groups) == 1:
        model, revision = str(groups[0].model), str(groups[0].revision)
    refusal = provenance.model_refusal(groups, ix.model, ix.revision)
    vector = None if refusal else np.asarray(qv.vector, dtype=np.float64).tolist()
    return replace(base, vector=vector, source=qv.source, model=model, revision=revision,
                   refusal=refusal, warnings=warnings, model_from=model_from)


def search(
    local: LocalCards,
    settings: EngineSettings,
    text: str,
    *,
    mode: str = "all",
    exact: bool = False,
    limit: int | None = None,
    live: bool = False,
    options: Options | None = None,
    client: EngineClient | None = None,
) -> EngineAnswer:
    if mode not in MODES:
        raise ValueError(f"unknown mode `{mode}`; accepted: {', '.join(MODES)}")
    options = options or Options()
    s = local.config.search
    limit = s.limit if limit is None else max(0, int(limit))
    window = s.window
    depth = max(window, limit)  # an arm shown alone fetches at least what is shown
    want = {"bm25", "semantic", "hybrid"} if mode == "all" else {mode}
    if not text.strip():  # a blank query: empty rankings, as locally; nothing is sent
        empty = {arm: Ranking() for arm in want}
        return EngineAnswer(text, empty.get("bm25"), empty.get("semantic"), empty.get("hybrid"))
    own = client is None
    c = client or options.client(settings, "search")
    first = len(c.ran)
    try:
        out: dict[str, Ranking] = {}
        c.table  # noqa: B018 - the catalog, checked or discovered (cached per table)
        settings = c.settings  # now with its catalog
        c.step("reading the table's indexes")
        indexes = c.list_indexes()
        text_index, bm25_refusal = provenance.bm25_index(indexes, settings.full_table,
                                                         c.table.text)
        side = None
        if want & {"semantic", "hybrid"}:
            side = vector_side(c, settings, local, text, live, indexes)
        if "bm25" in want:
            if bm25_refusal is not None:
                out["bm25"] = Ranking.refused(bm25_refusal, _bm25_retrieval(settings, text))
            else:
                out["bm25"] = bm25_ranking(c, settings, text, depth, limit, index=text_index)
        if "semantic" in want:
            assert side is not None
            arm = side
            if exact:  # a full scan asked for: no index serves it, and nothing is missing
                arm = replace(side, index=None, approximate=False,
                              warnings=tuple(w for w in side.warnings
                                             if w.kind != provenance.INDEX_WARNING))
            if arm.refusal is not None or arm.vector is None:
                out["semantic"] = Ranking.refused(
                    arm.refusal or Refusal("no query vector", "hql-semantics build"),
                    _vector_retrieval(settings, text, arm), arm.warnings)
            else:
                out["semantic"] = vector_ranking(c, settings, text, arm, depth, limit,
                                                 exact=exact)
        if "hybrid" in want:  # its vector arm is the index-served shape, never --exact
            assert side is not None
            bm25_r = _bm25_retrieval(settings, text, text_index)
            refusal = side.refusal or bm25_refusal
            if refusal is not None or side.vector is None:
                retrieval = _hybrid_retrieval(settings, text, local, bm25_r,
                                              _vector_retrieval(settings, text, side))
                out["hybrid"] = Ranking.refused(
                    refusal or Refusal("no query vector", "hql-semantics build"), retrieval,
                    side.warnings)
            else:
                out["hybrid"] = hybrid_ranking(c, settings, local, text, side, limit,
                                               bm25_retrieval=bm25_r)
        return EngineAnswer(text, out.get("bm25"), out.get("semantic"), out.get("hybrid"),
                            tuple(c.ran[first:]))
    finally:
        if own:
            c.close()


def bm25_ranking(c: EngineClient, settings: EngineSettings, text: str, window: int,
                 limit: int, *, index: IndexInfo | None = None) -> Ranking:
    terms = bm25_text(text)
    if not terms:
        return Ranking(retrieval=_bm25_retrieval(settings, text, index))
    ran = c.run_sql(sql.bm25_sql(c.table, terms, window), "engine bm25 search")
    pairs = [(str(r[0]), float(r[1])) for r in ran.rows]
    return Ranking(hits=_hits(pairs[:limit]), retrieval=_bm25_retrieval(settings, text, index,
                                                                         ran),
                   warnings=_engine_warnings(ran), total=len(pairs))


def vector_ranking(c: EngineClient, settings: EngineSettings, text: str, side: VectorSide,
                   window: int, limit: int, *, exact: bool) -> Ranking:
    assert side.vector is not None
    statement = (sql.vector_exact_sql if exact else sql.vector_sql)(c.table, side.vector,
                                                                     window)
    what = "engine exact vector search" if exact else "engine vector search"
    ran = c.run_sql(statement, what)
    pairs = [(str(r[0]), 1.0 - float(r[1])) for r in ran.rows]
    return Ranking(hits=_hits(pairs[:limit]), retrieval=_vector_retrieval(settings, text, side,
                                                                          ran),
                   warnings=(*side.warnings, *_engine_warnings(ran)), total=len(pairs))


def _hybrid_retrieval(settings: EngineSettings, text: str, local: LocalCards,
                      bm25_r: Retrieval, vec_r: Retrieval,
                      ran: QueryResult | None = None) -> Retrieval:
    # The engine fuses in SQL by RRF whatever the local default is: its retrieval says so.
    s = local.config.search
    config = s.fusion_config(RRF)
    served = [a.engine.get("served_by") for a in (bm25_r, vec_r) if a.engine]
    return Retrieval(
        arm="hybrid", query=text, index=index_label(settings), model=hybrid.MODEL,
        revision=hybrid.REVISION, metric=hybrid.METRICS[RRF], approximate=vec_r.approximate,
        query_vector_source=vec_r.query_vector_source, fusion=RRF, k=s.rrf_k,
        weights={"bm25": s.weights.lexical, "semantic": s.weights.semantic},
        windows={"bm25": s.window, "semantic": s.window}, arms=(bm25_r, vec_r),
        fusion_config=config.label(), parameters=config.parameters(),
        engine={**_evidence(None, ran), "served_by": [x for x in served if x is not None],
                "full_scan": not vec_r.approximate},
    )


def hybrid_ranking(c: EngineClient, settings: EngineSettings, local: LocalCards, text: str,
                   side: VectorSide, limit: int, *, bm25_retrieval: Retrieval) -> Ranking:
    assert side.vector is not None
    s = local.config.search
    statement = sql.hybrid_sql(c.table, bm25_text(text), side.vector, k=s.rrf_k,
                               lexical_weight=s.weights.lexical,
                               semantic_weight=s.weights.semantic, window=s.window, limit=limit)
    ran = c.run_sql(statement, "engine hybrid search")
    retrieval = _hybrid_retrieval(settings, text, local, bm25_retrieval,
                                  _vector_retrieval(settings, text, side), ran)
    columns, rows = ran.columns, ran.rows
    at = {name: columns.index(name) for name in columns}
    hits = []
    total = 0
    for r, row in enumerate(rows, start=1):
        lr, sr = row[at["lexical_rank"]], row[at["semantic_rank"]]
        arms = {
            "bm25": None if lr is None else ArmScore(int(lr), float(row[at["lexical_score"]])),
            "semantic": None if sr is None
            else ArmScore(int(sr), 1.0 - float(row[at["semantic_distance"]])),
        }
        hits.append(Hit(card=str(row[at["name"]]), score=float(row[at["fused_score"]]),
                        rank=r, arms=arms))
        total = int(row[at["fused_total"]])
    if not rows:
        total = 0
    return Ranking(hits=tuple(hits), retrieval=retrieval,
                   warnings=(*side.warnings, *_engine_warnings(ran)), total=total)


def client_fusion(bm25: Ranking, semantic: Ranking, *, k: float, weights: dict[str, float],
                  window: int, limit: int | None, query: str = "") -> Ranking:
    """The local RRF (``hybrid.fuse``) over two engine arm rankings, each cut at ``window``."""
    if not bm25.ok or not semantic.ok:
        raise EngineFailure("client fusion needs two answered arms")
    arms_hits = {"bm25": list(bm25.hits), "semantic": list(semantic.hits)}
    names = sorted({h.card for hits in arms_hits.values() for h in hits})
    position = {n: i for i, n in enumerate(names)}
    arms = []
    real: dict[str, dict[int, float]] = {}
    for arm, hits in arms_hits.items():
        # A score that reproduces the engine's order exactly: the rank order sorts it
        # back into the same sequence, and the fusion sees the engine's own ranks.
        scores = np.zeros(len(names), dtype=np.float64)
        for h in hits:
            scores[position[h.card]] = float(len(hits) + 1 - h.rank)
        real[arm] = {h.rank: h.score for h in hits}
        retrieval = bm25.retrieval if arm == "bm25" else semantic.retrieval
        arms.append(hybrid.ArmScores(arm, scores, retrieval))
    config = FusionConfig(RRF, k=k, weights=(weights["bm25"], weights["semantic"]))
    fused = hybrid.fuse(arms, names, query=query, config=config, window=window, limit=limit)
    restored = tuple(
        Hit(h.card, h.score, h.rank, {
            arm: None if a is None else ArmScore(a.rank, real[arm][a.rank])
            for arm, a in h.arms.items()
        }, h.contributions)
        for h in fused.hits
    )
    return replace(fused, hits=restored)
