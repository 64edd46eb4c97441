"""The embedding index's public names, in one import.

Each job has its own module; this one only gathers their names, so a caller
that needs several of them (a build, ``verify``, the app's reader, the tests)
imports one place:

* ``producer.index_format``: the on-disk format (schema, rows, packing, errors);
* ``producer.index_checks``: every check of an index's contents, and its wording;
* ``producer.index_reader``: the one reader of the tables;
* ``producer.index_writer``: the atomic writer;
* ``producer.index_lock``: the build lock; ``producer.index_holders``: who holds
  an index open.
"""

from __future__ import annotations

from producer.index_checks import is_unit
from producer.index_format import (
    CHUNK_SQL,
    LOCK_WAIT_SECONDS,
    MAX_DIMENSIONS,
    METRIC,
    PAGE_SIZE,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    SQLITE_MAGIC,
    TOOL_VERSION,
    UNIT_TOLERANCE,
    CardRow,
    ChunkRow,
    IndexBusy,
    IndexContents,
    MetaRow,
    ModelRow,
    QueryRow,
    StoredRecipe,
    StoreError,
    UnknownSchema,
    aside_path,
    is_sqlite_file,
    lock_path_for,
    move_aside,
    pack,
    same_vault,
    sql_value,
    temp_path_for,
    temp_prefix,
    unpack,
    vector_norm,
)
from producer.index_holders import busy_error, is_busy, lock_holders
from producer.index_lock import BuildLock, LockHeld
from producer.index_reader import (
    connect_readonly,
    doubled_passages,
    has_chunks,
    read_chunks,
    read_index,
    read_recipe,
    read_schema_version,
    readable_query_texts,
)
from producer.index_writer import (
    IndexWriter,
    check_model,
    check_row,
    leftovers,
    remove_leftovers,
    write_index,
)

__all__ = [
    "CHUNK_SQL",
    "LOCK_WAIT_SECONDS",
    "MAX_DIMENSIONS",
    "METRIC",
    "PAGE_SIZE",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "TOOL_VERSION",
    "UNIT_TOLERANCE",
    "BuildLock",
    "CardRow",
    "ChunkRow",
    "IndexBusy",
    "IndexContents",
    "IndexWriter",
    "LockHeld",
    "MetaRow",
    "ModelRow",
    "QueryRow",
    "StoreError",
    "StoredRecipe",
    "UnknownSchema",
    "aside_path",
    "move_aside",
    "busy_error",
    "check_model",
    "check_row",
    "connect_readonly",
    "doubled_passages",
    "has_chunks",
    "is_busy",
    "is_sqlite_file",
    "is_unit",
    "leftovers",
    "lock_holders",
    "lock_path_for",
    "pack",
    "read_chunks",
    "read_index",
    "read_recipe",
    "read_schema_version",
    "readable_query_texts",
    "remove_leftovers",
    "same_vault",
    "sql_value",
    "temp_path_for",
    "temp_prefix",
    "unpack",
    "vector_norm",
    "write_index",
]
