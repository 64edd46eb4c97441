"""TOML files: the one reader (every refusal worded once) and the one editing writer.

``read_toml(file)`` returns the parsed tables or raises ``TomlFileError`` with one
line naming the file and, in ``fix``, what to do (for a syntax error: the line
and the table it is in). It reads through ``read_regular``, so a special file
(a FIFO, a device) is never opened for reading. ``FileNotFoundError`` passes
through: an absent file means something different to each caller.

``edit_toml(file, change)`` applies ``change`` to the tomlkit document of the file
(created when absent), keeping comments, order, formatting, line ends and
permission bits of everything else, and replaces the file atomically; a symlink
is written through to its target, a read-only file is refused. Edits of one file
are serialised by an ``flock`` on ``.{name}.lock`` beside it, and each process
writes through a temporary file of its own, so a confirmed edit is never lost.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    if text.startswith("\ufeff"):  # invisible in an editor: say what it is, not "line 1"
        raise TomlFileError(f"{file}: starts with a byte-order mark (U+FEFF), which TOML "
                            "does not allow", f"save {file.name} as UTF-8 without a BOM")
    try:
        return tomllib.loads(text)
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise TomlFileError(f"{file}: nests arrays or tables too deeply to be read",
                            f"flatten the nesting in {file.name}") from None
    except tomllib.TOMLDecodeError as exc:
        fix = _syntax_fix(text, str(exc))
        raise TomlFileError(f"{file}: is not valid TOML: {exc}",
                            f"{fix} of {file.name}") from None


def toml_source(file: Path) -> str:
    """The file's text exactly as on disk (no newline translation: a CRLF file stays
    CRLF through an edit); "" when absent. Raises ``TomlFileError``."""
    try:
        return read_regular(file).decode("utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8"
        raise TomlFileError(f"{file}: cannot be updated: {reason}", f"fix {file.name}",
                            read=False) from None


def written_path(file: Path) -> Path:
    """The file an edit of ``file`` writes: itself, or a symlink's target (the link stays).
    A dangling link or a loop of links is refused: no file is created at its far end."""
    if not file.is_symlink():
        return file
    try:
        return file.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
        raise TomlFileError(f"{file}: is a symlink to a file that does not exist (or a loop "
                            "of links), so it was not changed",
                            f"point {file.name} at an existing file, or replace the link "
                            "with a file", read=False) from None


def _same_newlines(source: str, text: str) -> str:
    """tomlkit writes the lines it adds with LF: in a file whose every line ends CRLF,
    give them CRLF too."""
    if "\r\n" in source and "\n" not in source.replace("\r\n", ""):
        return re.sub(r"(?<!\r)\n", "\r\n", text)
    return text


def edit_toml(file: Path, change: Callable[[Any], None]) -> None:
    """Apply ``change`` to the file's tomlkit document and write it back atomically.

    The file written is the one read: a symlink is written through (its target is
    replaced, the link stays), the file's permission bits are kept, and a read-only
    file is refused, not replaced. ``change`` may raise ``TomlFileError`` to refuse;
    nothing is written then. Two processes editing one file (two app windows
    labelling) take turns (``_locked``), so neither writes over the other's edit."""
    target = written_path(file)
    with _locked(file, target):
        _edit(file, target, change)


LOCK_SUFFIX = ".lock"


@contextmanager
def _locked(file: Path, target: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``.{name}.lock`` beside the file written, held from the
    read to the rename. A separate file: the edited file itself is replaced by each
    write, so a lock on it would guard an inode nobody opens again. The lock file is
    removed on release (no litter in the vault or a dotfiles repository); a writer that
    was waiting on the removed file sees it is no longer the one at that name, and
    locks the new one instead."""
    lock = target.with_name(f".{target.name}{LOCK_SUFFIX}")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise TomlFileError(f"{file}: cannot be updated: its lock file {lock.name} cannot "
                                f"be made ({exc.strerror})", _write_fix(exc, target),
                                read=False) from None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            held = os.fstat(fd)
            current = os.stat(lock, follow_symlinks=False)
            if (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # the file was removed while this writer waited: lock the new one
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # while still held: the next writer then re-opens
        os.close(fd)


def _write_fix(exc: OSError, target: Path) -> str:
    """What to do when a write failed: a full disk is not a permissions problem."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free space on the disk holding {target.parent} and try again"
    if exc.errno == errno.EROFS:
        return f"{target.parent} is on a read-only file system: edit the file elsewhere"
    return f"check the permissions of {target.parent}"


def _edit(file: Path, target: Path, change: Callable[[Any], None]) -> None:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    source = toml_source(target)
    try:
        document = tomlkit.parse(source)
    except TOMLKitError as exc:
        raise TomlFileError(f"{file}: cannot be updated: {exc}", f"fix {file.name}",
                            read=False) from None
    except RecursionError:
        raise TomlFileError(f"{file}: cannot be updated: it nests arrays or tables too deeply",
                            f"flatten the nesting in {file.name}", read=False) from None
    mode = None
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
        if not mode & stat.S_IWUSR:
            raise TomlFileError(f"{file}: is read-only, so it was not changed",
                                f"make it writable (chmod u+w {file.name}) and try again",
                                read=False)
    change(document)
    text = _same_newlines(source, tomlkit.dumps(document))
    # A name of this process's own: another writer never truncates or renames it.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(text.encode("utf-8"))
        if mode is not None:
            os.chmod(tmp, mode)
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        reason = "the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else exc.strerror
        raise TomlFileError(f"{file}: cannot be written: {reason}", _write_fix(exc, target),
                            read=False) from None
