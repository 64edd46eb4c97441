"""``[engine]`` plus the environment, resolved once, with every refusal by name.

Refusals (each one line naming what to set; a key's value is never shown):

* no ``[engine]`` table in ``hql.toml``, or the table refused by
  ``hqltui.core.config`` (the one home of every check of its values: a literal
  ``api_key``, an unknown key or provider, no ``database``, a ``table`` that is
  not an identifier, a variable name that looks like a key);
* the key variable unset or empty;
* the workspace variable unset or empty -- the SDK would otherwise pick a
  workspace by itself, and the wrong one silently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hqltui.core.config import AppConfig
from hqltui.core.ranking import Refusal

CATALOG = "default"
SCHEMA = "public"
HOST_ENV = "HOTDATA_API_URL"


OWN_COLUMNS = {"key": "name", "text": "text", "vector": "embedding", "model": "model",
               "revision": "revision"}  # the roles' columns in a table this tool syncs


@dataclass(frozen=True)
class EngineSettings:
    database: str
    table: str
    api_key: str
    workspace: str
    host: str | None  # None: the SDK default
    api_key_env: str
    workspace_env: str
    catalog: str | None = None  # None: discovered from information_schema.tables
    schema: str = SCHEMA
    # role (key, text, vector, model, revision) -> column; None: declared, not stored
    columns: Mapping[str, str | None] = field(default_factory=lambda: dict(OWN_COLUMNS))
    declared_model: str | None = None  # for a table without model columns
    declared_revision: str | None = None

    @property
    def full_table(self) -> str:
        """The three-part name when the catalog is known (set, or discovered and put back
        with ``with_catalog``); ``schema.table`` until then, for messages only."""
        if self.catalog is None:
            return f"{self.schema}.{self.table}"
        return f"{self.catalog}.{self.schema}.{self.table}"

    def with_catalog(self, catalog: str) -> EngineSettings:
        return replace(self, catalog=catalog)

    @property
    def foreign(self) -> list[str]:
        """How ``[engine]`` describes a table this tool did not create (empty: its own)."""
        out = [f"{role}_column = {col}" for role, col in self.columns.items()
               if col is not None and col != OWN_COLUMNS[role]]
        if self.declared_model is not None:
            out.append("a declared model (no model and revision columns)")
        return out

    def describe(self) -> str:
        where = self.host or "the SDK's default host"
        return (f"database {self.database}, table {self.full_table}, "
                f"workspace {self.workspace} at {where}")

    def __repr__(self) -> str:  # never show the key
        return (
            f"EngineSettings(database={self.database!r}, table={self.full_table!r}, "
            f"workspace={self.workspace!r}, host={self.host!r}, api_key=<from "
            f"{self.api_key_env}>)"
        )


def resolve(config: AppConfig, env: Mapping[str, str] | None = None) -> EngineSettings | Refusal:
    """The settings for this vault, or the refusal that names what to set."""
    env = os.environ if env is None else env
    name = config.file.name
    if "engine" in config.errors:
        return Refusal(config.errors["engine"], f"edit [engine] in {name}")
    engine = config.engine
    if engine is None:
        return Refusal(
            f"engine indexes are off: {name} has no [engine] table",
            f'add [engine] with provider = "hotdata" and database = "<database id>" to {name}',
        )
    assert engine.database  # hqltui.core.config checks every value of [engine]
    key = (env.get(engine.api_key_env) or "").strip()
    if not key:
        return Refusal(
            f"the Hotdata API key variable {engine.api_key_env} is not set",
            f"export {engine.api_key_env}=<your key>",
        )
    workspace = (env.get(engine.workspace_env) or "").strip()
    if not workspace:
        return Refusal(
            f"the Hotdata workspace variable {engine.workspace_env} is not set; the engine "
            "client will not guess a workspace",
            f"export {engine.workspace_env}=<workspace id>",
        )
    host = engine.host or (env.get(HOST_ENV) or "").strip() or None
    if host is not None:
        host = host.rstrip("/")
        if host.endswith("/v1"):
            host = host[: -len("/v1")]
    return EngineSettings(
        database=engine.database,
        table=engine.table.lower(),
        api_key=key,
        workspace=workspace,
        host=host,
        api_key_env=engine.api_key_env,
        workspace_env=engine.workspace_env,
        catalog=engine.catalog.lower() if engine.catalog else None,
        schema=engine.schema.lower(),
        columns=engine.columns,
        declared_model=engine.model,
        declared_revision=engine.revision,
    )
