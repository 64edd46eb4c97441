"""TOML files: the one reader (every refusal worded once) and the one editing writer.

``read_toml(file)`` returns the parsed tables or raises ``TomlFileError`` with one
line naming the file and, in ``fix``, what to do (for a syntax error: the line
and the table it is in). It reads through ``read_regular``, so a symlink or a
special file is never followed. ``FileNotFoundError`` passes through: an absent
file means something different to each caller.

``edit_toml(file, change)`` applies ``change`` to the tomlkit document of the file
(created when absent), keeping comments, order and formatting of everything
else, and replaces the file atomically.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from producer.vault import read_regular
from producer.wording import with_fix


class TomlFileError(ValueError):
    """A TOML file that cannot be read or edited; ``fix`` says what to do."""

    def __init__(self, message: str, fix: str, *, read: bool = True) -> None:
        super().__init__(message)
        self.message = message  # what is wrong, without the fix (a refusal adds it once)
        self.fix = fix
        self.read = read  # False: the bytes could not even be read

    def __str__(self) -> str:
        return with_fix(self.message, self.fix)


_TABLE_LINE = re.compile(r"^\s*\[\[?\s*([^\]#]+?)\s*\]?\]?\s*(?:#.*)?$")


def _syntax_fix(text: str, error: str) -> str:
    """Which table the syntax error is in, so the fix says where to look."""
    found = re.search(r"at line (\d+)", error)
    if not found:
        return "fix the file"
    line = int(found.group(1))
    table = None
    for raw in reversed(text.splitlines()[:line]):
        header = _TABLE_LINE.match(raw)
        if header and raw.lstrip().startswith("["):
            table = header.group(1)
            break
    where = f"the [{table}] table" if table else "the top of the file, before any table"
    return f"fix line {line}, in {where}"


def read_toml(file: Path) -> dict[str, Any]:
    """The tables of ``file``; ``TomlFileError`` when it cannot be read or parsed."""
    try:
        raw = read_regular(file)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise TomlFileError(f"{file}: cannot be read: {exc.strerror}",
                            f"make {file.name} a readable file", read=False) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TomlFileError(f"{file}: is not UTF-8 (invalid byte at offset {exc.start})",
                            f"save {file.name} as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        fix = _syntax_fix(text, str(exc))
        raise TomlFileError(f"{file}: is not valid TOML: {exc}",
                            f"{fix} of {file.name}") from None


def edit_toml(file: Path, change: Callable[[Any], None]) -> None:
    """Apply ``change`` to the file's tomlkit document and write it back atomically.

    ``change`` may raise ``TomlFileError`` to refuse; nothing is written then."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        source = file.read_text(encoding="utf-8") if file.exists() else ""
        document = tomlkit.parse(source)
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise TomlFileError(f"{file}: cannot be updated: {exc}", f"fix {file.name}",
                            read=False) from None
    change(document)
    text = tomlkit.dumps(document)
    tmp = file.with_name(f".{file.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(file)
