"""One query's rankings and their JSON: what `hql-tui query --json` prints and the
MCP `search` tool returns, built by the same two functions so both carry the same
fields (every arm's ``Ranking.to_json``: hits, retrieval provenance, warnings,
refusal), whatever those come to hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hqltui.core.names import HYBRID, RANKINGS
from hqltui.core.ranking import Ranking, Refusal, merge_warnings

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hqltui.core.session import Session

ALL = "all"  # every ranking of ``RANKINGS``
MODES = (*RANKINGS, ALL)


def search_refusal(session: Session, mode: str, limit: int | None) -> Refusal | None:
    """A refused ``[search]`` table stops what needs it: hybrid (fusion settings) and a
    default limit. Single arms with a limit answer without it."""
    needs_search = mode in (HYBRID, ALL) or limit is None
    config = session.config
    if needs_search and "search" in config.errors:
        fix = config.file_fix or f"edit [search] in {config.file.name}"
        return Refusal(config.errors["search"], fix)
    return None


def rankings(
    session: Session, text: str, mode: str, *, limit: int | None = None, live: bool = False
) -> dict[str, Ranking]:
    """The rankings ``mode`` asks for (one name of ``MODES``), in ``RANKINGS`` order;
    hybrid and the arms it fuses come from one ``Session.query`` call."""
    wanted = RANKINGS if mode == ALL else (mode,)
    answer: Any = session.query(text, limit=limit, live=live) if HYBRID in wanted else {}
    out: dict[str, Ranking] = {}
    for arm in wanted:
        found = answer.get(arm)
        out[arm] = found if found is not None else session.rank(text, arm, limit=limit, live=live)
    return out


def all_warnings(arms: dict[str, Ranking], session: Session) -> list[Any]:
    """Session warnings, then any arm warning not already among them, each once."""
    return list(merge_warnings(session.warnings, *(r.warnings for r in arms.values())))


def rankings_json(
    session: Session, vault: str, text: str, limit: int | None, arms: dict[str, Ranking]
) -> dict[str, Any]:
    """The documented ``query --json`` object."""
    return {
        "vault": vault,
        "query": text,
        "limit": limit if limit is not None else session.search.limit,
        "arms": {name: r.to_json() for name, r in arms.items()},
        "index": session.index_summary().to_json(),
        "warnings": [w.to_json() for w in all_warnings(arms, session)],
    }
