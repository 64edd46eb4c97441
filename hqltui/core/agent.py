"""What the agent interface (`hql-tui mcp`) answers, without the protocol: each tool
is a function of a ``Session`` returning a JSON-able dict, or raising ``Refused``
(the one-line message and its fix). ``hqltui.mcp`` wires these to the MCP SDK;
keeping them here keeps them testable and free of the SDK's import cost.

``search`` returns exactly ``query --json``'s object (``hqltui.core.results``), with
each hit given its card's ``name``, ``title``, ``path`` and a ``snippet`` (of the passage
that answered, where one did), and the query echoed once: at the top, not again in each
arm's ``retrieval``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hqltui.core import snippets
from hqltui.core.arms import ARMS
from hqltui.core.names import DEFAULT_LEXICAL, RANKINGS
from hqltui.core.ranking import Passage
from hqltui.core.results import ALL, rankings, rankings_json, search_refusal

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hqltui.core.session import Session

LEXICAL_MODE = "lexical"  # the configured lexical arm (`[search] lexical`)
SEARCH_MODES = (*RANKINGS, LEXICAL_MODE, ALL)
DEFAULT_MODE = "hybrid"
MAX_LIMIT = 200
SNIPPET_CHARS = 300
TEXT_CHARS = 20_000
STATUS_NAMES = 50


class Refused(Exception):
    """A tool that cannot answer: the message, and the fix (may be empty)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


# ------------------------------------------------------------------------ search


def snippet(body: str, query: str, width: int = SNIPPET_CHARS, arm: str = DEFAULT_LEXICAL) -> str:
    """At most ``width`` characters of ``body`` around the longest term the query shares
    with it (as lexical ``arm`` splits text), else the body's start
    (``hqltui.core.snippets``)."""
    return snippets.snippet(body, query, width, analyser=ARMS[arm].analyser)


def hit_snippet(session: Session, card: Any, hit: dict[str, Any], text: str) -> str:
    """The passage that answered, when one did and the card is not stale; else the body."""
    found = hit.get("passage")
    passage = Passage(found["ordinal"], found["start"], found["end"]) if found else None
    stale = session.card_status(card.name) == "stale"
    answered = snippets.answered_text(card, passage, stale)
    return snippet(card.body if answered is None else answered, text,
                   arm=session.search.lexical)


def search(session: Session, vault: str, text: str, mode: str = DEFAULT_MODE,
           limit: int | None = None, *, live: bool = False) -> dict[str, Any]:
    """``query --json``'s object for ``mode``; ``Refused`` when nothing can answer."""
    if not text.strip():
        raise Refused("the query is blank", "give the text to rank")
    if mode == LEXICAL_MODE:
        mode = session.search.lexical
    if mode not in (*RANKINGS, ALL):
        raise Refused(f"unknown mode `{mode}`", "use one of " + ", ".join(SEARCH_MODES))
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise Refused(f"limit {limit} is out of range", f"give a limit from 1 to {MAX_LIMIT}")
    refusal = search_refusal(session, mode, limit)
    if refusal is not None:
        raise Refused(refusal.message, refusal.fix)
    arms = rankings(session, text, mode, limit=limit, live=live)
    answered = [r for r in arms.values() if r.refusal is None]
    if not answered:  # every asked-for arm refused: the first one's reason is the answer
        first = next(iter(arms.values())).refusal
        assert first is not None
        raise Refused(first.message, _fix(first.fix))
    out = rankings_json(session, vault, text, limit, arms)
    for ranking in out["arms"].values():
        _query_once(ranking["retrieval"])
        if ranking["refusal"] is not None:
            ranking["refusal"]["fix"] = _fix(ranking["refusal"]["fix"])
        for hit in ranking["hits"]:
            card = session.card(hit["card"])
            hit.update(name=card.name, title=card.title, path=card.path,
                       snippet=hit_snippet(session, card, hit, text),
                       index_status=session.card_status(card.name))  # fresh/stale/missing
    return out


def _query_once(retrieval: dict[str, Any] | None) -> None:
    """The query is echoed once, at the top: each retrieval (and each arm hybrid fused)
    answered that same text, and a copy in each made a 1 MB query a 14 MB answer."""
    if retrieval is None:
        return
    retrieval.pop("query", None)
    for arm in retrieval.get("arms") or ():
        _query_once(arm)


def _fix(fix: str | None) -> str | None:
    """The app's ``live`` fix (press Enter to embed) said as the server's own flag."""
    if fix == "live":
        return ("restart the server with --allow-remote-embedding (the query text is sent "
                "to the configured http embedder)")
    return fix


# ---------------------------------------------------------------------- get_card


def get_card(session: Session, name: str) -> dict[str, Any]:
    """One card in full (its text cut at ``TEXT_CHARS``), its links and index status."""
    if name not in session.vault.by_name:
        raise Refused(f"no card is named `{name}`",
                      "use a name from search hits (`name`) or from status")
    card = session.card(name)
    vault = session.vault
    return {
        "name": card.name,
        "title": card.title,
        "path": card.path,
        "text": card.text[:TEXT_CHARS],
        "truncated": len(card.text) > TEXT_CHARS,
        "characters": len(card.text),
        "links": [link.target for link in card.links if link.target in vault.by_name],
        "backlinks": vault.backlinks(name),
        "unresolved_links": [target for _, target in vault.unresolved(name)],
        "index_status": session.card_status(name),
    }


# ------------------------------------------------------------------------ status


def index_status(session: Session) -> dict[str, Any]:
    """The index summary with up to ``STATUS_NAMES`` names per state."""
    summary = session.index_summary().to_json()
    ix = session.index
    if ix is None:
        groups: dict[str, list[str]] = {"fresh": [], "stale": [], "missing": list(session.names),
                                        "orphan": []}
    else:
        fresh = [n for i, n in enumerate(ix.names) if ix.present[i] and not ix.stale[i]]
        groups = {"fresh": fresh, "stale": list(ix.stale_names),
                  "missing": list(ix.missing_names), "orphan": list(ix.orphan_names)}
    summary["names"] = {state: names[:STATUS_NAMES] for state, names in groups.items()}
    summary["names_cut_at"] = STATUS_NAMES
    return summary


def status(session: Session, setting: str, engine: dict[str, Any] | None
           ) -> dict[str, Any]:
    """``setting``: the index line of ``hql-tui VAULT --list`` (``index_setting.index_line``,
    a string); ``engine``: one bounded
    engine call's answer, or None when ``[engine]`` is not set."""
    return {
        "vault": str(session.root),
        "cards": len(session.names),
        "setting": setting,
        "index": index_status(session),
        "lexical": session.search.lexical,
        "loaded_at": session.loaded_at.isoformat(),
        "warnings": [w.to_json() for w in session.warnings],
        "engine": engine,
    }


# ------------------------------------------------------------------------ verify


def verify(session: Session) -> dict[str, Any]:
    """``hql-semantics verify``'s report for the configured index."""
    from producer.index_format import StoreError
    from producer.verify import verify as run_verify

    config = session.config
    if config.index is None or config.index_path is None:
        refusal = session.index_refusal
        raise Refused(refusal.message if refusal else "no index is configured",
                      refusal.fix if refusal else "set [semantics] index in hql.toml")
    try:
        return run_verify(session.root, config.index_path).to_json()
    except StoreError as exc:
        raise Refused(str(exc), exc.fix or f"hql-semantics build --vault {session.root}") from None


# ------------------------------------------------------------------------ engine

ENGINE_TIMEOUT = 10.0  # seconds: the status tool's one engine call, never retried


def engine_status(session: Session) -> dict[str, Any] | None:
    """None without ``[engine]``; else the engine table's indexes from one call with a
    short timeout and no retry (``state`` ``ok``), or why there are none (``refused`` /
    ``failed``, with the message and its fix)."""
    if session.config.engine is None:
        return None
    from hqltui.core.engine import EngineFailure, EngineRefused, LocalCards, settings_or_refuse
    from hqltui.core.engine.client import EngineClient
    from hqltui.core.engine.retry import RetryPolicy

    try:
        settings = settings_or_refuse(LocalCards.from_session(session))
    except EngineRefused as exc:
        return {"state": "refused", "message": exc.refusal.message, "fix": exc.refusal.fix}
    policy = RetryPolicy(max_attempts=1, deadline=ENGINE_TIMEOUT)
    try:
        with EngineClient(settings, operation="status", policy=policy,
                          request_timeout=ENGINE_TIMEOUT) as client:
            indexes = client.list_indexes()
    except EngineFailure as exc:
        return {"state": "failed", "message": str(exc), "fix": None}
    return {"state": "ok", "table": settings.table, "indexes": [i.to_json() for i in indexes]}
