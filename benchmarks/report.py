"""Writing benchmark reports: one JSON file and one Markdown table per benchmark."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

# The committed results; `make bench` points HQL_BENCH_OUT at benchmarks/out/ (gitignored)
# so that a quick, smaller run never overwrites them.
OUT = Path(os.environ.get("HQL_BENCH_OUT") or Path(__file__).resolve().parent / "results")


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }


def median(values: list[float]) -> float:
    return statistics.median(values)


def write_report(
    name: str, title: str, columns: list[str], rows: list[list[Any]], notes: list[str] = ()
) -> Path:
    """Write ``<name>.json`` and ``<name>.md`` in ``OUT``; return the Markdown path."""
    OUT.mkdir(parents=True, exist_ok=True)
    data = {
        "title": title,
        "machine": machine(),
        "columns": columns,
        "rows": rows,
        "notes": list(notes),
    }
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
    m = machine()
    lines = [
        f"### {title}",
        "",
        f"_{m['date']}, Python {m['python']}, {m['cpus']} CPUs ({m['machine']})_",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    if notes:
        lines.append("")
        lines.extend(f"- {note}" for note in notes)
    md = OUT / f"{name}.md"
    md.write_text("\n".join(lines) + "\n")
    return md


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
    return str(value)
