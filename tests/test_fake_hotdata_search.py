"""End to end through the real SDK: load cards, build both indexes, run the three
query shapes, and check each ranking against a computation that does not use the fake."""

from __future__ import annotations

import math
import re
from collections import Counter

import hotdata
import numpy as np
import pytest

from tests.fake_hotdata.testing import (
    api_client,
    cards_table,
    create_database,
    create_index,
    finish,
    load,
    query,
    vector_literal,
)

pytest_plugins = ["tests.fake_hotdata.fixtures"]

W = 10
RRF_K = 60
TEXT_QUERY = "zanzibar garden lantern"


@pytest.fixture
def corpus():
    return cards_table()


@pytest.fixture
def engine_db(fake_hotdata, corpus):
    with api_client(fake_hotdata) as api:
        db = create_database(api)
        receipt = load(api, db, corpus)
        assert receipt.row_count == corpus.num_rows
        bm25 = create_index(api, db, name="cards_text_bm25", index_type="bm25", columns=["text"])
        vector = create_index(
            api,
            db,
            name="cards_embedding_vector",
            index_type="vector",
            columns=["embedding"],
            metric="cosine",
        )
        for job in (bm25, vector):
            assert finish(fake_hotdata, api, job.id).status.value == "succeeded"
        yield api, db


def _query_vector(corpus):
    emb = np.array(corpus.column("embedding").to_pylist(), dtype=np.float32)
    rng = np.random.default_rng(3)
    return (emb[12] + 0.3 * rng.normal(size=emb.shape[1])).astype(np.float32)


def _numpy_cosine_ranking(corpus, q):
    emb = np.array(corpus.column("embedding").to_pylist(), dtype=np.float64)
    q = q.astype(np.float64)
    dist = 1.0 - emb @ q / (np.linalg.norm(emb, axis=1) * np.linalg.norm(q))
    names = corpus.column("name").to_pylist()
    order = sorted(range(len(names)), key=lambda i: (dist[i], names[i]))
    return [(names[i], float(dist[i])) for i in order]


def _independent_bm25(corpus, text, k1=1.2, b=0.75):
    """Okapi BM25 over lower-cased alphanumeric tokens, written without Tantivy."""
    tokenize = lambda s: re.findall(r"[a-z0-9]+", s.lower())  # noqa: E731
    docs = [tokenize(t) for t in corpus.column("text").to_pylist()]
    names = corpus.column("name").to_pylist()
    avgdl = sum(map(len, docs)) / len(docs)
    terms = list(dict.fromkeys(tokenize(text)))
    df = {t: sum(t in d for d in docs) for t in terms}
    scores = {}
    for name, doc in zip(names, docs, strict=True):
        tf = Counter(doc)
        score = 0.0
        for t in terms:
            if tf[t]:
                idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(doc) / avgdl))
        if score > 0:
            scores[name] = score
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def test_bm25_arm_ranks_like_an_independent_bm25(fake_hotdata, engine_db, corpus):
    api, db = engine_db
    sql = (
        f"SELECT name, score FROM bm25_search('default.public.cards', 'text', "
        f"'{TEXT_QUERY}', {W}) ORDER BY score DESC, name ASC"
    )
    rows = query(api, db, sql).rows
    expected = _independent_bm25(corpus, TEXT_QUERY)
    # The card holding the distinctive word ranks first, under both.
    assert rows[0][0] == expected[0][0] == "card-07"
    assert len(rows) == W
    scores = [r[1] for r in rows]
    assert scores == sorted(scores, reverse=True)
    # Tantivy keeps float32 scores and buckets document lengths; these texts are short enough
    # for the buckets to be exact, so the two agree on order and, closely, on score.
    assert [r[0] for r in rows] == [name for name, _ in expected[:W]]
    for (_, got), (_, want) in zip(rows, expected[:W], strict=True):
        assert got == pytest.approx(want, rel=1e-4)
    independent = dict(expected)
    # The whole match pool agrees when the bound is large enough.
    pool = query(
        api,
        db,
        f"SELECT name FROM bm25_search('default.public.cards', 'text', '{TEXT_QUERY}', 1000)",
    ).rows
    assert {r[0] for r in pool} == set(independent)


def test_vector_arm_is_index_served_and_matches_numpy_cosine(fake_hotdata, engine_db, corpus):
    api, db = engine_db
    q = _query_vector(corpus)
    sql = (
        f"SELECT name, cosine_distance(embedding, {vector_literal(q)}) AS dist "
        f"FROM default.public.cards ORDER BY dist ASC, name ASC LIMIT {W}"
    )
    rows = query(api, db, sql).rows
    assert fake_hotdata.query_log[-1].served_by == "vector_index"
    expected = _numpy_cosine_ranking(corpus, q)[:W]
    assert [r[0] for r in rows] == [name for name, _ in expected]
    for (_, got), (_, want) in zip(rows, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)
    # A card's own vector ranks it first at distance ~0 (the verify probe).
    own = corpus.column("embedding")[21].as_py()
    probe = query(
        api,
        db,
        f"SELECT name, cosine_distance(embedding, {vector_literal(own)}) "
        f"AS dist FROM default.public.cards ORDER BY dist ASC, name ASC "
        f"LIMIT 3",
    ).rows
    assert probe[0][0] == "card-21" and probe[0][1] == pytest.approx(0, abs=1e-5)


def test_exact_vector_shape_is_a_scan_with_the_same_ranking(fake_hotdata, engine_db, corpus):
    api, db = engine_db
    q = _query_vector(corpus)
    sql = (
        f"SELECT name, dist FROM (SELECT name, cosine_distance(embedding, "
        f"{vector_literal(q)}) AS dist FROM default.public.cards) AS exact "
        f"ORDER BY dist ASC, name ASC LIMIT {W}"
    )
    rows = query(api, db, sql).rows
    assert fake_hotdata.query_log[-1].served_by == "scan"
    assert [r[0] for r in rows] == [n for n, _ in _numpy_cosine_ranking(corpus, q)[:W]]


def _rrf_sql(q):
    return f"""
WITH near AS (
    SELECT name, cosine_distance(embedding, {vector_literal(q)}) AS dist
    FROM default.public.cards
    ORDER BY dist ASC, name ASC
    LIMIT {W}
), near_ranked AS (
    SELECT name, ROW_NUMBER() OVER (ORDER BY dist ASC, name ASC) AS vector_rank FROM near
), text_ranked AS (
    SELECT name, ROW_NUMBER() OVER (ORDER BY score DESC, name ASC) AS bm25_rank
    FROM bm25_search('default.public.cards', 'text', '{TEXT_QUERY}', {W})
)
SELECT base.name, near_ranked.vector_rank, text_ranked.bm25_rank,
       COALESCE(1.0 / ({RRF_K} + near_ranked.vector_rank), 0)
     + COALESCE(1.0 / ({RRF_K} + text_ranked.bm25_rank), 0) AS rrf
FROM near_ranked FULL OUTER JOIN text_ranked ON near_ranked.name = text_ranked.name
JOIN default.public.cards base ON base.name = COALESCE(near_ranked.name, text_ranked.name)
ORDER BY COALESCE(1.0 / ({RRF_K} + near_ranked.vector_rank), 0)
       + COALESCE(1.0 / ({RRF_K} + text_ranked.bm25_rank), 0) DESC, base.name ASC
"""


def test_one_rrf_query_fuses_both_arms_like_an_independent_fusion(fake_hotdata, engine_db, corpus):
    api, db = engine_db
    q = _query_vector(corpus)
    rows = query(api, db, _rrf_sql(q)).rows
    trace = fake_hotdata.query_log[-1]
    assert trace.served_by == "vector_index"
    assert trace.bm25_calls[0]["k"] == W
    # Independent fusion: numpy cosine ranks and the Tantivy-free BM25 ranks.
    vector_rank = {n: i + 1 for i, (n, _) in enumerate(_numpy_cosine_ranking(corpus, q)[:W])}
    bm25_rank = {n: i + 1 for i, (n, _) in enumerate(_independent_bm25(corpus, TEXT_QUERY)[:W])}
    fused = {
        n: (1.0 / (RRF_K + vector_rank[n]) if n in vector_rank else 0.0)
        + (1.0 / (RRF_K + bm25_rank[n]) if n in bm25_rank else 0.0)
        for n in set(vector_rank) | set(bm25_rank)
    }
    expected = sorted(fused, key=lambda n: (-fused[n], n))
    assert [r[0] for r in rows] == expected
    for name, v_rank, t_rank, score in rows:
        assert v_rank == vector_rank.get(name)
        assert t_rank == bm25_rank.get(name)
        assert score == pytest.approx(fused[name], abs=1e-12)


def test_indexes_listed_as_the_verify_step_expects(engine_db):
    api, db = engine_db
    listed = hotdata.IndexesApi(api).list_indexes(db.default_connection_id, "public", "cards")
    layout = {(i.index_type, tuple(i.columns), i.metric, i.status.value) for i in listed.indexes}
    assert layout == {
        ("bm25", ("text",), None, "ready"),
        ("vector", ("embedding",), "cosine", "ready"),
    }
