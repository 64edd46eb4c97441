"""How a build's plan and pace read, in the CLI's human lines and the app's build job
(one wording for both, from the build's own events)."""

from __future__ import annotations

from collections.abc import Mapping


def clock(seconds: float) -> str:
    """``1h02m``, ``4m05s``, ``12s``: an ETA as a person reads it."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _shared(count: object) -> str:
    return f", {count} copied from an identical text" if count else ""


def plan_line(event: Mapping[str, object]) -> str:
    """The ``start`` event: ``cards N (M to embed, K reused), passages P (Q to embed,
    R reused)``; texts identical to another are counted as copied (not embedded)."""
    line = (
        f"cards {event['cards']} ({event['to_embed']} to embed, {event['reused']} reused"
        f"{_shared(event.get('cards_shared'))})"
    )
    if "passages_to_embed" in event:
        to_embed, reused = event["passages_to_embed"], event["passages_reused"]
        total = int(to_embed) + int(reused)  # type: ignore[call-overload]
        line += (
            f", passages {total} ({to_embed} to embed, {reused} reused"
            f"{_shared(event.get('passages_shared'))})"
        )
    return line


def pace_words(event: Mapping[str, object]) -> str:
    """A ``progress`` event's rate and ETA (``41.2 texts/s, 6m57s left``), once measured."""
    if "eta" not in event:
        return ""
    return f"{float(event['texts_per_s']):.1f} texts/s, {clock(float(event['eta']))} left"  # type: ignore[arg-type]
