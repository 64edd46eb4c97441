"""Engine search: BM25, vector (approximate or ``--exact``) and hybrid, as ``Ranking``s.

The shapes are the local ones (``hqltui.core.ranking``), so the app can put an
engine row of columns beside the local row. Each arm's retrieval names the
engine table as its index (``hotdata:<database>/default.public.<table>``).

* ``bm25``: ``bm25_search(..., W)`` ranked by score, then name.
* ``semantic``: the index-served vector shape; ``approximate=True``, since the
  engine answers it from an HNSW index. ``exact=True`` sends the full-scan shape
  and says ``approximate=False``. A hit's score is the cosine similarity
  (``1 - cosine_distance``), the local semantic arm's scale. The engine ranks the
  W nearest rows whatever their sign.
* ``hybrid``: one RRF statement with the local ``[search]`` k, weights and window;
  every hit carries both arms' ranks and scores (``None`` where an arm did not
  select the card).

The query vector comes from the local index exactly as the local semantic arm
gets it (``hqltui.core.semantic.query_vector``): the index's query table, or a
live embedding with the index's own model and revision, else a refusal. A
refused vector arm makes hybrid refuse too; BM25 still answers.

``client_fusion(bm25, semantic, ...)`` fuses two engine arm rankings on this
side with the one local RRF (``hqltui.core.hybrid.fuse``): the check that the
engine's SQL fusion is the same arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hqltui.core import hybrid
from hqltui.core.engine import sql
from hqltui.core.engine.client import EngineClient
from hqltui.core.engine.errors import EngineFailure
from hqltui.core.engine.local import LocalCards
from hqltui.core.engine.operations import Options
from hqltui.core.engine.settings import EngineSettings
from hqltui.core.fusion import RRF, FusionConfig
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

    def rankings(self) -> dict[str, Ranking]:
        return {k: v for k, v in (("bm25", self.bm25), ("semantic", self.semantic),
                                  ("hybrid", self.hybrid)) if v is not None}

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rankings().values())

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, **{k: v.to_json() for k, v in self.rankings().items()}}


def index_label(settings: EngineSettings) -> str:
    return f"hotdata:{settings.database}/{settings.full_table}"


def _bm25_retrieval(settings: EngineSettings, text: str) -> Retrieval:
    return Retrieval(arm="bm25", query=text, index=index_label(settings), model=BM25_MODEL,
                     revision=ENGINE_REVISION, metric="bm25", approximate=False,
                     query_vector_source="text")


def _vector_retrieval(settings: EngineSettings, text: str, local: LocalCards, source: str | None,
                      exact: bool) -> Retrieval:
    ix = local.index
    return Retrieval(
        arm="semantic", query=text, index=index_label(settings),
        model=ix.model if ix else "", revision=ix.revision if ix else "",
        metric="cosine", approximate=not exact, query_vector_source=source,
    )


def _hits(rows: list[tuple[str, float]]) -> tuple[Hit, ...]:
    return tuple(Hit(card=name, score=score, rank=r) for r, (name, score) in
                 enumerate(rows, start=1))


def _query_vector(local: LocalCards, text: str, live: bool) -> Any:
    if local.embed is None:  # a caller bug, not a user's: every command passes one
        raise ValueError("LocalCards.embed is needed for a vector search")
    return local.embed(local, text, live)


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
    try:
        out: dict[str, Ranking] = {}
        vector = None
        source = None
        vwarnings: tuple[Warning, ...] = ()
        vrefusal: Refusal | None = None
        if want & {"semantic", "hybrid"}:
            if local.index is None:
                assert local.refusal is not None
                vrefusal = local.refusal
            else:
                qv = _query_vector(local, text, live)
                vwarnings = tuple(qv.warnings)
                source = qv.source
                if qv.refusal is not None or qv.vector is None:
                    vrefusal = qv.refusal or Refusal("no query vector", "hql-semantics build")
                else:
                    vector = np.asarray(qv.vector, dtype=np.float64).tolist()
        if "bm25" in want:
            out["bm25"] = bm25_ranking(c, settings, text, depth, limit)
        if "semantic" in want:
            retrieval = _vector_retrieval(settings, text, local, source, exact)
            if vector is None:
                out["semantic"] = Ranking.refused(vrefusal, retrieval, vwarnings)  # type: ignore[arg-type]
            else:
                ranking = vector_ranking(c, settings, text, vector, depth, limit, exact=exact,
                                         retrieval=retrieval)
                out["semantic"] = replace(ranking, warnings=vwarnings)
        if "hybrid" in want:
            bm25_r = _bm25_retrieval(settings, text)
            vec_r = _vector_retrieval(settings, text, local, source, False)
            if vector is None:
                retrieval = _hybrid_retrieval(settings, text, local, bm25_r, vec_r)
                out["hybrid"] = Ranking.refused(vrefusal, retrieval, vwarnings)  # type: ignore[arg-type]
            else:
                ranking = hybrid_ranking(c, settings, local, text, vector, limit,
                                         bm25_retrieval=bm25_r, vector_retrieval=vec_r)
                out["hybrid"] = replace(ranking, warnings=vwarnings)
        return EngineAnswer(text, out.get("bm25"), out.get("semantic"), out.get("hybrid"))
    finally:
        if own:
            c.close()


def bm25_ranking(c: EngineClient, settings: EngineSettings, text: str, window: int,
                 limit: int) -> Ranking:
    retrieval = _bm25_retrieval(settings, text)
    if not text.strip():
        return Ranking(retrieval=retrieval)
    _, rows = c.query(sql.bm25_sql(settings.table, text, window), "engine bm25 search")
    pairs = [(str(r[0]), float(r[1])) for r in rows]
    return Ranking(hits=_hits(pairs[:limit]), retrieval=retrieval, total=len(pairs))


def vector_ranking(c: EngineClient, settings: EngineSettings, text: str, vector: list[float],
                   window: int, limit: int, *, exact: bool, retrieval: Retrieval) -> Ranking:
    statement = (sql.vector_exact_sql if exact else sql.vector_sql)(settings.table, vector,
                                                                     window)
    what = "engine exact vector search" if exact else "engine vector search"
    _, rows = c.query(statement, what)
    pairs = [(str(r[0]), 1.0 - float(r[1])) for r in rows]
    return Ranking(hits=_hits(pairs[:limit]), retrieval=retrieval, total=len(pairs))


def _hybrid_retrieval(settings: EngineSettings, text: str, local: LocalCards,
                      bm25_r: Retrieval, vec_r: Retrieval) -> Retrieval:
    # The engine fuses in SQL by RRF whatever the local default is: its retrieval says so.
    s = local.config.search
    config = s.fusion_config(RRF)
    return Retrieval(
        arm="hybrid", query=text, index=index_label(settings), model=hybrid.MODEL,
        revision=hybrid.REVISION, metric=hybrid.METRICS[RRF], approximate=True,
        query_vector_source=vec_r.query_vector_source, fusion=RRF, k=s.rrf_k,
        weights={"bm25": s.weights.lexical, "semantic": s.weights.semantic},
        windows={"bm25": s.window, "semantic": s.window}, arms=(bm25_r, vec_r),
        fusion_config=config.label(), parameters=config.parameters(),
    )


def hybrid_ranking(c: EngineClient, settings: EngineSettings, local: LocalCards, text: str,
                   vector: list[float], limit: int, *, bm25_retrieval: Retrieval,
                   vector_retrieval: Retrieval) -> Ranking:
    s = local.config.search
    retrieval = _hybrid_retrieval(settings, text, local, bm25_retrieval, vector_retrieval)
    statement = sql.hybrid_sql(settings.table, text, vector, k=s.rrf_k,
                               lexical_weight=s.weights.lexical,
                               semantic_weight=s.weights.semantic, window=s.window, limit=limit)
    columns, rows = c.query(statement, "engine hybrid search")
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
    return Ranking(hits=tuple(hits), retrieval=retrieval, total=total)


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
    hits = tuple(
        Hit(h.card, h.score, h.rank, {
            arm: None if a is None else ArmScore(a.rank, real[arm][a.rank])
            for arm, a in h.arms.items()
        }, h.contributions)
        for h in fused.hits
    )
    return replace(fused, hits=hits)
