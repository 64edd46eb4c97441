"""Engine tables this tool did not build: `[engine]` names the catalog, schema and columns.

Against the fake (a test stand-in built from DataFusion, Tantivy and USearch, not the
Hotdata engine), through the real SDK: a table made by hand with other column names and
no model column is searched and verified read-only with a declared model, sync and build
refuse it naming its columns, and the catalog is discovered from information_schema.
"""

from __future__ import annotations

import hotdata
import numpy as np
import pyarrow as pa
import pytest
from hotdata import models as m

from hqltui.core.engine import EngineRefused, LocalCards, settings_or_refuse
from hqltui.core.semantic import embed_local
from tests.fake_hotdata.testing import api_client, load
from tests.helpers.engine_vaults import RANDOM_REVISION, birds_queries, copy_engine_birds, run

pytest_plugins = ["tests.helpers.engine_fixtures"]

DOCS = ('table = "docs"\nkey_column = "id"\ntext_column = "body"\nvector_column = "vec"\n'
        'model = "{model}"\nrevision = "{revision}"\n')


def _database(fake, catalog: str | None = None, table: str = "docs", key: str = "id"):
    decl = m.DatabaseDefaultTableDecl(name=table, key=[key])
    with api_client(fake) as api:
        return hotdata.DatabasesApi(api).create_database(m.CreateDatabaseRequest(
            name="theirs", default_catalog=catalog,
            schemas=[m.DatabaseDefaultSchemaDecl(name="public", tables=[decl])]))


def _their_table(fake, db, root, *, index: bool = True):
    """A table made by hand: id, body, vec (the vault's vectors), a rating; no model column."""
    local = LocalCards.load(root, embed=embed_local)
    matrix = np.asarray(local.index.matrix, dtype=np.float32)
    table = pa.table({
        "id": [c.name for c in local.vault.cards],
        "body": [c.text for c in local.vault.cards],
        "vec": pa.array(matrix.tolist(), type=pa.list_(pa.float32())),
        "rating": pa.array(range(len(local.vault.cards)), pa.int64()),
    })
    with api_client(fake) as api:
        load(api, db, table, name="docs")
        if index:
            indexes = hotdata.IndexesApi(api)
            for name, kind, col, metric in (("docs_body", "bm25", "body", None),
                                            ("docs_vec", "vector", "vec", "cosine")):
                indexes.create_index(db.default_connection_id, "public", "docs",
                                     m.CreateIndexRequest(index_name=name, index_type=kind,
                                                          columns=[col], metric=metric))
    return local


def _declared(root) -> str:
    ix = LocalCards.load(root, embed=embed_local).index
    return DOCS.format(model=ix.model, revision=ix.revision)


def _docs_vault(tmp_path, fake, catalog=None):
    db = _database(fake, catalog)
    root = copy_engine_birds(tmp_path / "birds", db.id)
    (root / "hql.toml").write_text((root / "hql.toml").read_text() + _declared(root))
    _their_table(fake, db, root)
    return root, db


# ---------------------------------------------------------------- read-only use


def test_a_hand_made_table_is_searched_with_its_own_columns_and_a_declared_model(tmp_path, fake,
                                                                                 env):
    root, _ = _docs_vault(tmp_path, fake)
    text = birds_queries()[0]
    answer = run("search", root, env, text=text)
    assert answer.ok, [r.refusal for r in answer.rankings().values()]
    semantic = answer.semantic.retrieval
    assert semantic.approximate is True and semantic.engine["served_by"]["name"] == "docs_vec"
    assert semantic.engine["model_from"] == "declared in [engine]"
    assert semantic.revision == RANDOM_REVISION
    assert semantic.index.endswith("/default.public.docs")
    assert answer.bm25.retrieval.engine["served_by"]["columns"] == ["body"]
    vector_sql = [q.sql for q in fake.query_log if "cosine_distance(vec" in q.sql]
    assert vector_sql and "SELECT id AS name" in vector_sql[0]
    assert fake.query_log[-1].served_by == "vector_index"
    # The hits are the table's keys: here the vault's card names.
    local = LocalCards.load(root, embed=embed_local)
    assert set(answer.semantic.names()) <= set(local.names)
    assert not any("GROUP BY" in q.sql for q in fake.query_log)  # nothing to count: declared


def test_a_declared_model_that_is_not_the_query_vectors_refuses_the_vector_arm(tmp_path, fake,
                                                                               env):
    db = _database(fake)
    root = copy_engine_birds(tmp_path / "birds", db.id,
                             DOCS.format(model="other/model", revision="r9"))
    _their_table(fake, db, root)
    answer = run("search", root, env, text=birds_queries()[0])
    assert answer.bm25.ok and not answer.semantic.ok and not answer.hybrid.ok
    message = answer.semantic.refusal.message
    assert "the table declares model other/model revision r9 (declared in [engine])" in message
    assert f"revision {RANDOM_REVISION}" in message


def test_verify_prints_every_check_as_passed_failed_or_not_checkable(tmp_path, fake, env):
    root, _ = _docs_vault(tmp_path, fake)
    report = run("verify", root, env)
    outcomes = {c.name: c.outcome for c in report.checks}
    assert outcomes == {
        "rows": "passed", "bm25 index": "passed", "vector index": "passed", "model": "passed",
        "row parity": "not checkable on this table", "vector probe": "passed",
        "bm25 probe": "not checkable on this table",
    }
    assert report.clean and report.table == "default.public.docs"
    parity = next(c for c in report.checks if c.name == "row parity")
    assert "this table was not written by this tool" in parity.detail
    assert report.summary() == (
        "clean: default.public.docs (read-only): 5 passed, 0 failed, "
        "2 not checkable on this table")


def test_verify_fails_the_checks_a_table_without_indexes_does_not_pass(tmp_path, fake, env):
    db = _database(fake)
    root = copy_engine_birds(tmp_path / "birds", db.id, "")
    (root / "hql.toml").write_text((root / "hql.toml").read_text() + _declared(root))
    _their_table(fake, db, root, index=False)
    report = run("verify", root, env)
    outcomes = {c.name: c.outcome for c in report.checks}
    assert outcomes["bm25 index"] == outcomes["vector index"] == "failed"
    assert outcomes["vector probe"] == "not checkable on this table"
    assert not report.clean and {p.kind for p in report.problems} == {"index-missing"}
    # search: BM25 refuses with the fix, vector answers by a full scan and says so
    answer = run("search", root, env, text=birds_queries()[0])
    assert not answer.bm25.ok and "no bm25 index on body" in answer.bm25.refusal.message
    assert answer.semantic.ok and answer.semantic.retrieval.approximate is False


@pytest.mark.parametrize("operation", ["sync", "build"])
def test_sync_and_build_refuse_a_table_this_tool_did_not_create_naming_its_columns(
        tmp_path, fake, env, operation):
    root, _ = _docs_vault(tmp_path, fake)
    before = [(mm, p) for mm, p in fake.requests if mm != "GET"]
    with pytest.raises(EngineRefused) as info:
        run(operation, root, env)
    message = info.value.refusal.message
    assert f"{operation} refuses public.docs: it has columns this tool did not create: " \
           "id, body, vec, rating" in message
    assert "no name, path, title, text, content_hash, embedding, model, revision" in message
    assert [(mm, p) for mm, p in fake.requests if mm != "GET"] == before  # nothing written


def test_sync_refuses_settings_for_other_columns_even_before_the_table_exists(tmp_path, fake,
                                                                              env):
    db = _database(fake)
    root = copy_engine_birds(tmp_path / "birds", db.id, 'table = "docs"\nkey_column = "id"\n')
    with pytest.raises(EngineRefused, match="key_column = id"):
        run("sync", root, env)


def test_the_bm25_query_text_is_the_querys_tokens_never_raw_text(tmp_path, fake, env):
    root, _ = _docs_vault(tmp_path, fake)
    run("search", root, env, text='Barn-Owl AND "night" OR title:(xyz', mode="bm25")
    [call] = fake.query_log[-1].bm25_calls
    assert call["query"] == "barn owl and night or title xyz"


# ---------------------------------------------------------------- the catalog


def test_the_catalog_is_discovered_from_information_schema_not_the_database_record(tmp_path,
                                                                                   fake, env):
    root, db = _docs_vault(tmp_path, fake, catalog="f1")
    assert db.default_catalog == "default"  # what the record says
    answer = run("search", root, env, text=birds_queries()[0])
    assert answer.ok
    assert answer.semantic.retrieval.index.endswith("/f1.public.docs")
    asked = [q.sql for q in fake.query_log]
    assert any("FROM information_schema.tables" in q for q in asked)
    assert any("FROM f1.public.docs" in q for q in asked)
    assert not any("default.public.docs" in q for q in asked)
    assert run("verify", root, env).table == "f1.public.docs"


def test_this_tools_own_table_in_another_catalog_syncs_builds_and_searches(tmp_path, fake, env):
    db = _database(fake, "f1", table="cards", key="name")
    root = copy_engine_birds(tmp_path / "birds", db.id, "")
    assert run("sync", root, env).table == "f1.public.cards"
    assert run("build", root, env).table == "f1.public.cards"
    assert run("verify", root, env).clean
    assert run("search", root, env, text=birds_queries()[0]).ok


def test_a_catalog_set_in_engine_is_checked_there(tmp_path, fake, env):
    root, db = _docs_vault(tmp_path, fake, catalog="f1")
    (root / "hql.toml").write_text((root / "hql.toml").read_text() + 'catalog = "default"\n')
    with pytest.raises(EngineRefused) as info:
        run("search", root, env, text=birds_queries()[0])
    assert info.value.refusal.message == (
        "[engine] catalog = default, but information_schema.tables lists public.docs under f1")
    assert info.value.refusal.fix == 'set catalog = "f1" in [engine]'
    good = (root / "hql.toml").read_text().replace('catalog = "default"', 'catalog = "f1"')
    (root / "hql.toml").write_text(good)
    assert run("search", root, env, text=birds_queries()[0]).ok


def test_no_table_of_that_name_in_information_schema_refuses(tmp_path, fake, env):
    root, db = _docs_vault(tmp_path, fake)
    (root / "hql.toml").write_text((root / "hql.toml").read_text().replace(
        'table = "docs"', 'table = "nothing_here"'))
    with pytest.raises(EngineRefused, match="lists no table public.nothing_here"):
        run("search", root, env, text=birds_queries()[0])


def test_several_catalogs_refuse_naming_them_and_a_set_one_chooses(tmp_path, fake, env):
    """The fake cannot attach a second catalog, so the choice over what
    information_schema.tables lists (as two attachments would list) is checked alone."""
    from hqltui.core.engine.client import choose_catalog

    root, _ = _docs_vault(tmp_path, fake)
    settings = settings_or_refuse(LocalCards.load(root, embed=embed_local), env)
    with pytest.raises(EngineRefused) as info:
        choose_catalog(["default", "f1"], settings)
    assert info.value.refusal.message.startswith(
        "public.docs answers to 2 catalogs (default, f1)")
    assert info.value.refusal.fix == 'set catalog = "<one of default, f1>" in [engine]'
    assert choose_catalog(["default", "f1"], settings.with_catalog("f1")) == "f1"
    assert choose_catalog(["f1"], settings) == "f1"


def test_a_catalog_setting_changed_after_a_discovery_is_checked_again(tmp_path, fake, env):
    root, _ = _docs_vault(tmp_path, fake, catalog="f1")
    assert run("search", root, env, text=birds_queries()[0]).ok  # discovered: f1 (cached)
    (root / "hql.toml").write_text((root / "hql.toml").read_text() + 'catalog = "default"\n')
    with pytest.raises(EngineRefused, match="catalog = default, but"):
        run("search", root, env, text=birds_queries()[0])
