"""hql.toml: the tables we own, one test per refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hqltui.core.config import load_app_config
from producer.config import ConfigError, EmbedderConfig, load_producer_config


def vault_with(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "hql.toml").write_text(toml, encoding="utf-8")
    return tmp_path


def error(tmp_path: Path, toml: str, table: str) -> str:
    config = load_app_config(vault_with(tmp_path, toml))
    assert table in config.errors, config.errors
    return config.errors[table]


def test_no_file_means_defaults(tmp_path):
    config = load_app_config(tmp_path)
    assert not config.exists and config.errors == {}
    assert config.index is None and config.engine is None
    assert config.search.lexical == "bm25" and config.search.rrf_k == 60
    assert (config.search.window, config.search.limit) == (50, 20)
    assert (config.search.weights.lexical, config.search.weights.semantic) == (1.0, 1.0)


def test_a_full_file_is_read(tmp_path):
    config = load_app_config(
        vault_with(
            tmp_path,
            """
[semantics]
index = "./.hql/index.sqlite"
[semantics.embedder]
provider = "http"
model = "text-embedding-3-small"
revision = "2024-01-25"
endpoint = "http://127.0.0.1:9/v1/embeddings"
api_key_env = "OPENAI_API_KEY"
dimensions = 512
[engine]
database = "db_1"
table = "birds"
[search]
lexical = "hashbag"
rrf_k = 30
weights = { lexical = 0.5, semantic = 2 }
window = 40
limit = 5
[extensions]
import = ["lexical"]
anything = 1
[report]
mode = "collect"
""",
        )
    )
    assert config.errors == {}
    assert config.index == ".hql/index.sqlite"
    assert config.index_path == tmp_path / ".hql/index.sqlite"
    assert config.embedder.dimensions == 512 and config.embedder.provider == "http"
    assert config.engine.database == "db_1" and config.engine.table == "birds"
    assert config.engine.api_key_env == "HOTDATA_API_KEY"
    assert config.engine.workspace_env == "HOTDATA_WORKSPACE"
    assert config.search.lexical == "hashbag" and config.search.weights.semantic == 2.0
    assert (config.search.rrf_k, config.search.window, config.search.limit) == (30.0, 40, 5)


@pytest.mark.parametrize(
    "table,toml,expected",
    [
        ("semantics", '[semantics]\nindex = "x.sqlite"\nindx = 1\n', "unknown key `indx`"),
        (
            "semantics.embedder",
            '[semantics.embedder]\nprovider = "local"\nmodle = "m"\n',
            "unknown key `modle`",
        ),
        ("engine", '[engine]\ndatabase = "d"\nregion = "eu"\n', "unknown key `region`"),
        ("search", '[search]\nlimit = 5\nfuse = "rrf"\n', "unknown key `fuse`"),
        ("search", '[search]\n[search.adaptive]\nalpha = 1\n', "unknown key `alpha`"),
        ("search", "[search]\nweights = { lexical = 1, dense = 2 }\n", "unknown key `dense`"),
    ],
)
def test_unknown_keys_in_owned_tables_are_refused_by_name(tmp_path, table, toml, expected):
    message = error(tmp_path, toml, table)
    assert expected in message and "hql.toml" in message


def test_other_tables_are_left_alone(tmp_path):
    config = load_app_config(vault_with(tmp_path, "[extensions]\nwhatever = 1\n[report]\nx = 2\n"))
    assert config.errors == {}


KEY = "pretend-" + "key-value-123"  # not a credential: a value that must never echo


def test_literal_api_key_is_refused_naming_the_variable_and_never_echoed(tmp_path):
    message = error(
        tmp_path, f'[semantics.embedder]\napi_key = "{KEY}"\n', "semantics.embedder"
    )
    assert "api_key_env" in message and KEY not in message
    message = error(tmp_path, f'[engine]\napi_key = "{KEY}"\n', "engine")
    assert 'api_key_env = "HOTDATA_API_KEY"' in message and KEY not in message


def test_unknown_provider_is_refused():
    with pytest.raises(ConfigError, match="unknown embedder provider `ollama`"):
        EmbedderConfig(provider="ollama").check()


def test_http_needs_endpoint_and_model():
    with pytest.raises(ConfigError, match="needs `endpoint`, `model`"):
        EmbedderConfig(provider="http", revision="r").check()
    with pytest.raises(ConfigError, match="needs `model`"):
        EmbedderConfig(provider="http", endpoint="http://x", revision="r").check()


def test_http_needs_revision():
    with pytest.raises(ConfigError, match="needs `revision`"):
        EmbedderConfig(provider="http", endpoint="http://x", model="m").check()


def test_flags_override_field_by_field_and_complete_the_table():
    written = EmbedderConfig(provider="http", endpoint="http://x", model="m")
    resolved = written.resolve(revision="2024-01-25", model=None)
    assert resolved.model == "m" and resolved.revision == "2024-01-25"
    resolved.check()


@pytest.mark.parametrize("value", ["0", "-3", "true", '"384"', "1.5"])
def test_dimensions_must_be_a_positive_integer(tmp_path, value):
    message = error(tmp_path, f"[semantics.embedder]\ndimensions = {value}\n", "semantics.embedder")
    assert "`dimensions` must be a positive integer" in message


def test_an_absolute_index_path_is_refused(tmp_path):
    message = error(tmp_path, '[semantics]\nindex = "/var/index.sqlite"\n', "semantics")
    assert "outside the vault" in message


def test_an_index_path_climbing_out_is_refused(tmp_path):
    message = error(tmp_path, '[semantics]\nindex = "sub/../../index.sqlite"\n', "semantics")
    assert "outside the vault" in message


def test_an_index_path_escaping_through_a_symlink_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    vault = tmp_path / "vault"
    vault.mkdir()
    os.symlink(outside, vault / "link")
    message = error(vault, '[semantics]\nindex = "link/index.sqlite"\n', "semantics")
    assert "through a symlink" in message


def test_malformed_toml_names_file_and_line_and_breaks_every_owned_table(tmp_path):
    config = load_app_config(vault_with(tmp_path, '[semantics]\nindex = ".hql/x.sqlite"\nlimit = \n'))
    message = config.errors["semantics"]
    assert "hql.toml" in message and "line 3" in message
    assert set(config.errors) == {"semantics", "semantics.embedder", "engine", "search"}


def test_a_broken_table_leaves_the_others_working(tmp_path):
    config = load_app_config(
        vault_with(
            tmp_path,
            """
[semantics]
index = ".hql/index.sqlite"
[engine]
api_key = "x"
[search]
lexical = "tfidf"
""",
        )
    )
    assert config.index == ".hql/index.sqlite"
    assert set(config.errors) == {"engine", "search"}
    assert "unknown lexical arm `tfidf`" in config.errors["search"]
    with pytest.raises(ConfigError, match="api_key"):
        config.require("engine")
    config.require("semantics")


@pytest.mark.parametrize(
    "toml,expected",
    [
        ("[search]\nrrf_k = 0\n", "`rrf_k` must be a positive number"),
        ("[search]\nwindow = 0\n", "`window` must be a positive integer"),
        ("[search]\nlimit = -1\n", "`limit` must be a positive integer"),
        ("[search]\nweights = { lexical = -1 }\n", "at least 0"),
        ('[engine]\nprovider = "other"\n', "unknown engine provider"),
    ],
)
def test_value_refusals(tmp_path, toml, expected):
    config = load_app_config(vault_with(tmp_path, toml))
    assert any(expected in m for m in config.errors.values()), config.errors


def test_the_producer_reads_only_its_own_tables(tmp_path: Path) -> None:
    """`hql-semantics` owns [semantics]: a broken [search] or [engine] is the app's business."""
    root = vault_with(tmp_path, '[semantics]\nindex = ".hql/i.sqlite"\n[search]\nlexical = "tfidf"\n'
                                '[engine]\nregion = "eu"\n')
    producer = load_producer_config(root)
    assert producer.errors == {} and producer.index == ".hql/i.sqlite"
    assert not hasattr(producer, "search") and not hasattr(producer, "engine")
    app = load_app_config(root)
    assert set(app.errors) == {"search", "engine"}
    assert "unknown lexical arm `tfidf`; accepted: hashbag, bm25" in app.errors["search"]


# ------------------------------------------------------------------ [search] fusion


def test_the_default_fusion_is_adaptive_over_max_with_the_lexical_gap(tmp_path):
    config = load_app_config(tmp_path).search.fusion_config()
    assert (config.method, config.norm) == ("adaptive", "max")
    assert (config.adaptive.alpha_keyword, config.adaptive.alpha_prose) == (0.2, 0.8)
    assert (config.adaptive.gap_weight, config.adaptive.gap_full) == (0.5, 0.4)
    assert config.adaptive.name_weight == 1.0  # the lexical top card's name in the query
    assert config.adaptive.ident_weight == 0.5  # a rare identifier only lexical's top holds


def test_the_name_signal_is_switched_off_in_hql_toml_and_checked(tmp_path):
    off = load_app_config(vault_with(tmp_path, "[search.adaptive]\nname_weight = 0\n"))
    assert off.search.fusion_config().adaptive.name_weight == 0.0
    message = error(tmp_path, "[search.adaptive]\nname_weight = 2\n", "search")
    assert "`adaptive.name_weight` must be between 0 and 1" in message
    off = load_app_config(vault_with(tmp_path, "[search.adaptive]\nident_weight = 0\n"))
    assert off.search.fusion_config().adaptive.ident_weight == 0.0
    message = error(tmp_path, "[search.adaptive]\nident_weight = 1.5\n", "search")
    assert "`adaptive.ident_weight` must be between 0 and 1" in message


def test_fusion_alpha_norm_and_the_adaptive_table_are_read(tmp_path):
    search = load_app_config(vault_with(tmp_path, """
[search]
fusion = "convex"
alpha = 0.7
norm = "zscore"
[search.adaptive]
alpha_keyword = 0.1
words_long = 5
idf_weight = 0.25
""")).search
    config = search.fusion_config()
    assert (config.method, config.alpha, config.norm) == ("convex", 0.7, "zscore")
    a = config.adaptive
    assert (a.alpha_keyword, a.alpha_prose, a.words_long, a.idf_weight) == (0.1, 0.8, 5.0, 0.25)
    assert search.fusion_config("rrf").method == "rrf"  # the app's cycle keeps the parameters


@pytest.mark.parametrize("toml", ["[search]\nrrf_k = 20\n",
                                  "[search]\nweights = { lexical = 2, semantic = 1 }\n"])
def test_rrf_k_or_weights_without_fusion_keep_rrf(tmp_path, toml):
    assert load_app_config(vault_with(tmp_path, toml)).search.fusion == "rrf"


def test_an_explicit_fusion_wins_over_rrf_k(tmp_path):
    toml = '[search]\nrrf_k = 20\nfusion = "adaptive"\n'
    assert load_app_config(vault_with(tmp_path, toml)).search.fusion == "adaptive"


# ---------------------------------------------------------------- [engine]: every refusal here


@pytest.mark.parametrize(
    "toml,expected",
    [
        ('provider = "other"\ndatabase = "d"\n', "unknown engine provider `other`"),
        ('provider = "hotdata"\n', 'names no database: set database = "<database id>"'),
        ('database = ""\n', "`database` must be a non-empty string"),
        ('database = "d"\ntable = "my cards"\n', "`table` = `my cards` is not a plain identifier"),
        ('database = "d"\ntable = "public.cards"\n', "is not a plain identifier"),
        ('database = "d"\ntable = "1cards"\n', "is not a plain identifier"),
        ('database = "d"\nworkspace_env = "ws-1"\n', "`workspace_env` must name an environment"),
        ('database = "d"\nregion = "eu"\n', "unknown key `region`"),
    ],
)
def test_every_engine_refusal_is_made_by_the_config_reader(tmp_path, toml, expected):
    message = error(tmp_path, "[engine]\n" + toml, "engine")
    assert expected in message and "hql.toml: [engine]" in message


def test_an_engine_key_variable_that_looks_like_a_key_is_refused_and_never_echoed(tmp_path):
    value = "hd-live-" + "9f8e7d"  # not a credential: a value that must never echo
    message = error(tmp_path, f'[engine]\ndatabase = "d"\napi_key_env = "{value}"\n', "engine")
    assert "`api_key_env` must name an environment variable" in message
    assert 'api_key_env = "HOTDATA_API_KEY"' in message and value not in message


def test_a_plain_engine_table_is_accepted_with_the_defaults(tmp_path):
    config = load_app_config(vault_with(tmp_path, '[engine]\ndatabase = "db_1"\ntable = "Birds_2"\n'))
    assert config.errors == {}
    assert (config.engine.table, config.engine.api_key_env) == ("Birds_2", "HOTDATA_API_KEY")


@pytest.mark.parametrize(
    "toml,expected",
    [
        ('database = "d"\ncatalog = "my-catalog"\n', "`catalog` = `my-catalog` is not a plain"),
        ('database = "d"\nschema = "a.b"\n', "`schema` = `a.b` is not a plain identifier"),
        ('database = "d"\nkey_column = "id x"\n', "`key_column` = `id x` is not a plain"),
        ('database = "d"\ntext_column = "1body"\n', "`text_column` = `1body` is not a plain"),
        ('database = "d"\nvector_column = "v-1"\n', "`vector_column` = `v-1` is not a plain"),
        ('database = "d"\nmodel_column = "m m"\n', "`model_column` = `m m` is not a plain"),
        ('database = "d"\nrevision_column = "r.r"\n', "`revision_column` = `r.r` is not a"),
        ('database = "d"\nmodel = "m"\n', "declares `model` without `revision`"),
        ('database = "d"\nrevision = "r"\n', "declares `revision` without `model`"),
        ('database = "d"\nmodel = "m"\nrevision = "r"\nmodel_column = "mm"\n',
         "declares a model and also names model columns"),
        ('database = "d"\nkey_column = "text"\n', "gives column `text` more than one role"),
        ('database = "d"\nvector_column = "Model"\n', "gives column `model` more than one role"),
    ],
)
def test_every_engine_table_setting_is_checked_by_the_config_reader(tmp_path, toml, expected):
    message = error(tmp_path, "[engine]\n" + toml, "engine")
    assert expected in message and "hql.toml: [engine]" in message


def test_engine_table_settings_for_a_table_this_tool_did_not_build(tmp_path):
    config = load_app_config(vault_with(tmp_path, """[engine]
database = "d"
catalog = "F1"
schema = "docs"
table = "notes"
key_column = "ID"
text_column = "body"
vector_column = "vec"
model = "sentence-transformers/all-MiniLM-L6-v2"
revision = "r1"
"""))
    assert config.errors == {}
    assert config.engine.columns == {"key": "id", "text": "body", "vector": "vec",
                                     "model": None, "revision": None}
    stored = load_app_config(vault_with(tmp_path, '[engine]\ndatabase = "d"\nmodel_column = "m"\n'))
    assert stored.engine.columns["model"] == "m" and stored.engine.columns["revision"] == "revision"


@pytest.mark.parametrize(
    "toml,expected",
    [
        ('[search]\nfusion = "borda"\n', "unknown fusion `borda`; accepted: rrf, convex, adaptive"),
        ('[search]\nnorm = "l2"\n', "unknown norm `l2`; accepted: max, minmax, zscore, dbsf"),
        ("[search]\nalpha = 1.5\n", "`alpha` must be between 0 and 1"),
        ("[search]\nalpha = true\n", "`alpha` must be a number of at least 0"),
        ("[search]\nadaptive = 3\n", "`adaptive` must be a table"),
        ("[search.adaptive]\nalpha_prose = 2\n", "`adaptive.alpha_prose` must be between 0 and 1"),
        ("[search.adaptive]\nwords_short = 5\n", "`words_short` must be above 0 and below"),
    ],
)
def test_bad_fusion_settings_are_refused_by_name(tmp_path, toml, expected):
    message = error(tmp_path, toml, "search")
    assert expected in message and "hql.toml" in message
