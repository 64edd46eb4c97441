"""Helpers for tests that drive the fake through the real ``hotdata`` SDK.

Only SDK calls go over the wire; these helpers just save repeating them.
"""

from __future__ import annotations

import io
from typing import Any

import hotdata
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hotdata import models as m

from .server import FakeHotdata

VECTOR = pa.list_(pa.float32())


def api_client(fake: FakeHotdata, **config: Any) -> hotdata.ApiClient:
    return hotdata.ApiClient(fake.configuration(**config))


def create_database(
    api: hotdata.ApiClient,
    name: str = "cards",
    *,
    table: str = "cards",
    key: list[str] | None = None,
) -> m.CreateDatabaseResponse:
    decl = m.DatabaseDefaultTableDecl(name=table, key=key or ["name"])
    return hotdata.DatabasesApi(api).create_database(
        m.CreateDatabaseRequest(
            name=name, schemas=[m.DatabaseDefaultSchemaDecl(name="public", tables=[decl])]
        )
    )


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def upload(api: hotdata.ApiClient, table: pa.Table) -> str:
    return hotdata.UploadsApi(api).upload_file(parquet_bytes(table)).upload_id


def load(
    api: hotdata.ApiClient,
    db: Any,
    table: pa.Table,
    *,
    mode: str = "replace",
    name: str = "cards",
    var_async: bool = False,
    **kwargs: Any,
) -> Any:
    """Upload ``table`` as Parquet and load it; returns the SDK's response model."""
    request = m.LoadManagedTableRequest(
        mode=mode, upload_id=upload(api, table), var_async=var_async, **kwargs
    )
    generated = hotdata.api.databases_api.DatabasesApi(api)  # no automatic lock retry
    return generated.load_database_table(db.id, "public", name, request)


def create_index(
    api: hotdata.ApiClient,
    db: Any,
    *,
    name: str,
    index_type: str,
    columns: list[str],
    table: str = "cards",
    **kwargs: Any,
) -> Any:
    return hotdata.IndexesApi(api).create_index(
        db.default_connection_id,
        "public",
        table,
        m.CreateIndexRequest(
            index_name=name, index_type=index_type, columns=columns, var_async=True, **kwargs
        ),
    )


def finish(fake: FakeHotdata, api: hotdata.ApiClient, job_id: str) -> m.JobStatusResponse:
    """Run the fake's jobs to the end and read the job record through the SDK."""
    fake.run_jobs()
    return hotdata.JobsApi(api).get_job(job_id)


def query(api: hotdata.ApiClient, db: Any, sql: str) -> m.QueryResponse:
    return hotdata.QueryApi(api).query(m.QueryRequest(sql=sql), x_database_id=db.id)


def vector_literal(vector: Any) -> str:
    return "ARRAY[" + ", ".join(repr(float(x)) for x in vector) + "]"


def error_body(exc: hotdata.ApiException) -> dict[str, Any]:
    import json

    return json.loads(exc.body)


def cards_table(n: int = 40, dim: int = 16, seed: int = 7) -> pa.Table:
    """A small card corpus: names, texts drawn from a shared vocabulary, unit embeddings.

    Card ``card-07`` carries the distinctive word ``zanzibar``; everything else shares the
    common vocabulary, so term statistics vary the way real text does.
    """
    rng = np.random.default_rng(seed)
    vocab = [
        "garden",
        "quiet",
        "river",
        "stone",
        "lantern",
        "harbor",
        "meadow",
        "copper",
        "violet",
        "orchard",
        "thunder",
        "marble",
        "willow",
        "ember",
        "cedar",
        "falcon",
    ]
    names, texts = [], []
    for i in range(n):
        words = list(rng.choice(vocab, size=int(rng.integers(4, 12))))
        if i == 7:
            words.append("zanzibar")
        names.append(f"card-{i:02d}")
        texts.append(" ".join(words))
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return pa.table(
        {
            "name": names,
            "path": [f"cards/{x}.md" for x in names],
            "text": texts,
            "embedding": pa.array(emb.tolist(), type=VECTOR),
        }
    )
