"""The app's query history, one JSON string per line, kept between runs.

Where: ``$HQL_TUI_HISTORY`` (a file path) if set, else
``$XDG_STATE_HOME/hql-tui/history.jsonl``, else
``~/.local/state/hql-tui/history.jsonl``. A history that cannot be read or
written never stops the app: it is simply empty, or not saved. A path that is
not a regular file (a FIFO, a device) is never opened for reading nor replaced:
``notice`` says so once.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

ENV = "HQL_TUI_HISTORY"
LIMIT = 500


def default_path() -> Path:
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "hql-tui" / "history.jsonl"


class History:
    def __init__(self, path: Path | None = None, limit: int = LIMIT) -> None:
        self.path = path if path is not None else default_path()
        self.limit = limit
        self.entries: list[str] = []
        self.notice: str | None = None  # why the file is not used, shown once

    def load(self) -> list[str]:
        from producer.vault import NotRegularFile, read_regular

        entries: list[str] = []
        try:
            # A regular file only: a FIFO named by $HQL_TUI_HISTORY would block the load.
            lines = read_regular(self.path).decode("utf-8").splitlines()
        except NotRegularFile as exc:
            lines = []
            self.notice = (f"{self.path}: {exc.strerror}; the query history is neither "
                           f"read nor saved (set {ENV} to a file)")
        except (OSError, UnicodeDecodeError):
            lines = []
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str) and value.strip():
                if value in entries:
                    entries.remove(value)
                entries.append(value)
        self.entries = entries[-self.limit :]
        return list(self.entries)

    def add(self, text: str) -> bool:
        """Remember ``text`` as the newest entry; False when it could not be saved."""
        text = text.strip()
        if not text:
            return True
        if text in self.entries:
            self.entries.remove(text)
        self.entries.append(text)
        self.entries = self.entries[-self.limit :]
        return self.save()

    def save(self) -> bool:
        if self.notice is not None:
            return False  # never replace what is not a regular file
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.entries)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".history.", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except OSError:
            return False
        return True
