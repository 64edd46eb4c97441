"""The edits hql-tui makes to a user's ``hql.toml``, keeping the rest as it was.

Two edits, each asked for: after a confirmation, a vault with no ``[semantics]
index`` gets ``index = ".hql/index.sqlite"`` (``configure_default_index``); and
``hql-tui tune --write`` puts the winning fusion into ``[search]``
(``write_search``). tomlkit keeps comments, order and formatting of everything
else (``producer.tomlfile`` holds the one reader and the one writer of TOML files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from producer.config import CONFIG_NAME, DEFAULT_INDEX, ConfigError
from producer.tomlfile import TomlFileError, edit_toml, toml_source, written_path


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


def search_change(settings: dict[str, Any], file: Path) -> Any:
    """A tomlkit edit setting ``settings`` in ``[search]`` (a dict value becomes the
    sub-table ``[search.<key>]``, replaced whole); every other key and table is kept.
    The table it makes is checked as the app reads it (``ConfigError``: nothing is
    written), so no edit writes a value the next start would refuse."""
    import tomlkit

    from hqltui.core.config import search_table

    def change(document: Any) -> None:
        search = document.get("search")
        if search is None:
            search = tomlkit.table()
            document.add("search", search)
        elif not isinstance(search, dict):
            raise ConfigError("[search] is not a table")
        for key, value in settings.items():
            if isinstance(value, dict):
                table = tomlkit.table()
                for k, v in value.items():
                    table.add(k, v)
                search[key] = table
            else:
                search[key] = value
        search_table(search.unwrap(), file)

    return change


def preview_search(root: str | Path, settings: dict[str, Any]) -> tuple[str, str]:
    """``hql.toml``'s text before and after ``write_search`` (nothing written)."""
    import tomlkit

    file = Path(root) / CONFIG_NAME
    try:
        before = toml_source(written_path(file))
        document = tomlkit.parse(before)
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - tomlkit's errors have no common base we need
        raise ConfigError(f"{file}: {exc}") from None
    search_change(settings, file)(document)
    return before, tomlkit.dumps(document)


def write_search(root: str | Path, settings: dict[str, Any]) -> Path:
    """Set ``settings`` in ``ROOT/hql.toml``'s ``[search]`` (created if absent)."""
    file = Path(root) / CONFIG_NAME
    try:
        edit_toml(file, search_change(settings, file))
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    return file
