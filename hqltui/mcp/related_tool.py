"""The MCP tool ``related``: the same JSON as ``hql-tui related VAULT CARD --json``.

One ``Relatedness`` is kept for the session being served (its term weights
are made once per snapshot; a reload brings a new session and a new scorer).
"""

from __future__ import annotations

import threading
from typing import Any

from hqltui.core.agent import MAX_LIMIT, Refused

DESCRIPTION = (
    "The cards nearest to one card, from the index alone (no model runs): a list of "
    "neighbours in rank order, each with `card`, `score` (card-vector cosine + 2 × the "
    "cosine of the two cards' bm25 term weights; both parts given), `linked` (a link or "
    "relation already joins them) and its index status; identical texts listed apart in "
    "`duplicates`; provenance (model, revision, index)."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "the card's name"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10},
    },
    "required": ["name"],
    "additionalProperties": False,
}

_lock = threading.Lock()
_kept: list[Any] = []  # [Relatedness] of the session served last


def related(session: Any, args: dict[str, Any]) -> dict[str, Any]:
    from hqltui.core.related import Relatedness

    name = args.get("name")
    if not isinstance(name, str) or name not in session.vault.by_name:
        raise Refused(f"no card is named `{name}`",
                      "use a name from search hits (`name`) or from status")
    limit = args.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise Refused(f"limit `{limit}` is not a whole number from 1 to {MAX_LIMIT}",
                      f"give a limit from 1 to {MAX_LIMIT}")
    with _lock:
        if not _kept or _kept[0].session is not session:
            _kept[:] = [Relatedness(session)]
        relatedness = _kept[0]
    answer = relatedness.related(name, limit)
    if answer.refusal is not None:
        raise Refused(answer.refusal.message, answer.refusal.fix)
    return answer.to_json()
