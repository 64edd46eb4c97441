"""Writing the default index setting into ``hql.toml``, keeping the rest as it was.

The only edit the app makes to a user's file: after a confirmation, a vault
with no ``[semantics] index`` gets ``index = ".hql/index.sqlite"``. tomlkit
keeps comments, order and formatting of everything else.
"""

from __future__ import annotations

from pathlib import Path

from producer.config import CONFIG_NAME, DEFAULT_INDEX, ConfigError


def configure_default_index(root: str | Path, index: str = DEFAULT_INDEX) -> Path:
    """Add ``[semantics] index`` to ``ROOT/hql.toml`` (created if absent); return the file."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    file = Path(root) / CONFIG_NAME
    try:
        source = file.read_text(encoding="utf-8") if file.exists() else ""
        document = tomlkit.parse(source)
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{file}: cannot be updated: {exc}") from None
    semantics = document.get("semantics")
    if semantics is None:
        table = tomlkit.table()
        table.add("index", index)
        if source and not source.endswith("\n"):
            document.add(tomlkit.nl())
        document.add("semantics", table)
    elif not isinstance(semantics, dict):
        raise ConfigError(f"{file}: [semantics] is not a table")
    elif "index" in semantics:
        raise ConfigError(f"{file}: [semantics] already names an index: {semantics['index']}")
    else:
        semantics["index"] = index
    text = tomlkit.dumps(document)
    tmp = file.with_name(f".{file.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(file)
    return file
