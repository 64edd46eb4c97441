"""Rich styles resolved from the current theme's design tokens.

Cells of a ``DataTable`` and the Rich ``Text`` built in ``render`` cannot name
``$warning`` themselves, so the app resolves the tokens once per theme and
hands the styles down; no colour is written anywhere but in the theme.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.color import Color, ColorParseError


@dataclass(frozen=True)
class Palette:
    warning: str = "bold"
    error: str = "bold"
    success: str = ""
    muted: str = "dim"
    accent: str = "bold"
    primary: str = "bold"
    mark: str = "bold underline"
    heading: str = "bold"
    passage: str = "reverse"  # the passage that answered a semantic query

    @classmethod
    def from_variables(cls, v: dict[str, str]) -> Palette:
        try:
            background = Color.parse(v.get("background", "#000000"))
        except ColorParseError:
            background = Color(0, 0, 0)

        def colour(name: str, fallback: str = "") -> str:
            try:
                value = Color.parse(v.get(name, ""))
            except ColorParseError:
                return fallback
            # Rich has no alpha: composite translucent tokens over the background.
            return (background + value).hex if value.a < 1 else value.hex

        return cls(
            warning=f"bold {colour('text-warning', colour('warning'))}".strip(),
            error=f"bold {colour('text-error', colour('error'))}".strip(),
            success=colour("text-success", colour("success")),
            muted=colour("foreground-muted", "dim") or "dim",
            accent=f"bold {colour('text-accent', colour('accent'))}".strip(),
            primary=f"bold {colour('text-primary', colour('primary'))}".strip(),
            mark=f"bold underline {colour('text-accent', colour('accent'))}".strip(),
            heading=f"bold {colour('text-primary', colour('primary'))}".strip(),
            passage=f"on {colour('primary-muted')}" if colour("primary-muted") else "reverse",
        )
