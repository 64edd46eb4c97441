"""When the app may rebuild the index by itself, and when it must leave it alone.

The watcher notices an edit; once the vault has been quiet for ``SETTLE``
seconds, the incremental build F7 runs is started in the background, through
the producer (the only writer of the index). This module is the rule, pure:
``decide`` looks at what is on screen and says ``build``, ``wait`` (for the
quiet time or a running build), ``idle`` (nothing to do) or ``refuse`` (with
the one line shown instead). A refusal is never "fixed" here: a refused
``hql.toml`` or index, a vault with no index yet and a change touching more
than ``CARD_LIMIT`` cards are the user's to rebuild on purpose. What only the
producer can know (a new model, revision, precision or passage recipe, which
would embed every card again) it refuses itself when given
``--changed-at-most`` (``producer.build_plan.only_changed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

# Seconds the vault must stay quiet after an edit before a build starts: an editor's
# save (write, rename, touch) and a burst of edits make one build, not several.
SETTLE = 0.5
# The most changed cards an automatic build embeds; more (a branch switch, a bulk
# rename) waits for the user's F7.
CARD_LIMIT = 200

Action = Literal["build", "wait", "idle", "refuse"]


class Summary(Protocol):
    """What ``decide`` reads of ``hqltui.core.session.IndexSummary`` (read-only)."""

    @property
    def state(self) -> str: ...
    @property
    def stale(self) -> int: ...
    @property
    def missing(self) -> int: ...
    @property
    def orphan(self) -> int: ...


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str = ""
    delay: float = 0.0  # ``wait``: seconds until the quiet time is over (0: a build runs)


def decide(
    *,
    enabled: bool,
    pending: bool,
    paused: bool,
    running: bool,
    config_error: str | None,
    summary: Summary | None,
    refusal: str | None,
    quiet_for: float,
    settle: float = SETTLE,
    limit: int = CARD_LIMIT,
) -> Decision:
    """What to do now about the index.

    ``pending``: the watcher saw a change since the last build started (a build only
    ever answers an edit, so a build that leaves cards stale never loops);
    ``paused``: the last automatic build failed, and no edit or F7 came since;
    ``running``: a build (automatic or F7) runs; ``config_error``: the ``[semantics]``
    table's refusal; ``refusal``: the index's (``summary.state`` ``refused`` or
    ``none``); ``quiet_for``: seconds since the last change was seen.
    """
    if not enabled:
        return Decision("idle", "auto-build is off")
    if not pending:
        return Decision("idle")
    if config_error is not None:
        return Decision("refuse", f"hql.toml is refused: {config_error}")
    if summary is None or summary.state == "opening":
        return Decision("wait")
    if summary.state != "ok":
        return Decision("refuse", refusal or "there is no usable index")
    changed = summary.stale + summary.missing
    if changed + summary.orphan == 0:
        return Decision("idle")
    if changed > limit:
        return Decision("refuse", f"{changed} cards changed, more than the {limit} an "
                                  "automatic build embeds")
    if paused:
        return Decision("idle", "paused after a failed build")
    if running:
        return Decision("wait")
    if quiet_for < settle:
        return Decision("wait", delay=settle - quiet_for)
    return Decision("build")
