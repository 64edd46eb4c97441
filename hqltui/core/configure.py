"""Writing the default index setting into ``hql.toml``, keeping the rest as it was.

The only edit the app makes to a user's file: after a confirmation, a vault
with no ``[semantics] index`` gets ``index = ".hql/index.sqlite"``. tomlkit
keeps comments, order and formatting of everything else (``producer.tomlfile``
holds the one reader and the one writer of TOML files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from producer.config import CONFIG_NAME, DEFAULT_INDEX, ConfigError
from producer.tomlfile import TomlFileError, edit_toml


def configure_default_index(root: str | Path, index: str = DEFAULT_INDEX) -> Path:
    """Add ``[semantics] index`` to ``ROOT/hql.toml`` (created if absent); return the file."""
    import tomlkit

    file = Path(root) / CONFIG_NAME
    had_text = file.exists() and file.stat().st_size > 0

    def change(document: Any) -> None:
        semantics = document.get("semantics")
        if semantics is None:
            table = tomlkit.table()
            table.add("index", index)
            if had_text and not tomlkit.dumps(document).endswith("\n"):
                document.add(tomlkit.nl())
            document.add("semantics", table)
        elif not isinstance(semantics, dict):
            raise ConfigError(f"{file}: [semantics] is not a table")
        elif "index" in semantics:
            raise ConfigError(f"{file}: [semantics] already names an index: {semantics['index']}")
        else:
            semantics["index"] = index

    try:
        edit_toml(file, change)
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    return file
