"""The app's query history, one JSON string per line, kept between runs.

Where: ``$HQL_TUI_HISTORY`` (a file path) if set, else
``$XDG_STATE_HOME/hql-tui/history.jsonl``, else
``~/.local/state/hql-tui/history.jsonl``. A history that cannot be read or
written never stops the app: it is simply empty, or not saved.
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

    def load(self) -> list[str]:
        entries: list[str] = []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
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
