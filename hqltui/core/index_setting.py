"""The `index` line: what `[semantics] index` names and whether the file is there.

One wording for `hql-tui VAULT --list` and the MCP `status` tool's `setting`; it lives
in the core because both the commands and the agent interface read it.
"""

from __future__ import annotations

from hqltui.core.config import AppConfig
from producer.terminal import shown


def index_line(root: str, config: AppConfig) -> str:
    """One line, starting `index  `: the configured index and its state, or why none."""
    if config.file_error:
        return f"index  unusable: {shown(config.file.name)} cannot be read (see warnings)"
    if "semantics" in config.errors:
        return f"index  unusable: {shown(config.errors['semantics'])}"
    if config.index is None:
        return (
            'index  none configured: add `[semantics] index = ".hql/index.sqlite"` '
            "to hql.toml, then run `hql-semantics build`"
        )
    path = config.index_path
    if path is not None and path.is_dir():
        state = "a directory, not an index file: name a file in `[semantics] index`"
    elif path is not None and path.is_file():
        state = "present"
    else:
        state = f"not built yet: run `hql-semantics build --vault {root} --out {path}`"
    return f"index  {shown(config.index)}  ({shown(state)})"
