"""Check the documentation a newcomer reads first: its links, and its quick start.

* every relative link in ``README.md``, ``docs/*.md`` and ``benchmarks/README.md``
  names a file or folder that exists, and an ``#anchor`` names a heading of its page
  (GitHub's heading slugs); ``tests/test_docs.py`` runs this part with the suite;
* the quick start's ``make run`` reaches the app's first frame on a 120×36
  pseudo-terminal (the ``first-paint`` marker of ``hqltui.ui.marks``), then ctrl+q
  quits it; and ``hql-tui VAULT --list`` answers on a copy of the fixture vault.

Run from the repository root: ``make check-docs`` (it needs the Makefile's ``.venv``;
``--make-args`` passes variables to that ``make run``). ``make test``, the other quick
start command, is the test suite itself and is not run from here.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = ["README.md", "docs/*.md", "benchmarks/README.md"]
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def pages(root: Path = ROOT) -> list[Path]:
    return sorted({p for pattern in PAGES for p in root.glob(pattern)})


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a link in a code sample is not a link)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(root: Path = ROOT) -> list[str]:
    """One line per relative link that leads nowhere: ``page: target (why)``."""
    problems = []
    for page in pages(root):
        for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where} (no heading with that anchor)")
    return problems


def quick_start(make_args: list[str], timeout: float) -> list[str]:
    """``make run`` to its first frame and out again; ``--list`` on a copy of the birds."""
    from benchmarks.bench_app import run_on_pty

    problems = []
    with tempfile.TemporaryDirectory(prefix="hql-quick-start-") as tmp:
        scratch = Path(tmp)
        run = run_on_pty(ROOT, scratch / "cache", command=["make", "-s", "run", *make_args],
                         timeout=timeout, until=("first-paint",))
        if "first-paint" not in run.events:
            problems.append(f"make run: no first frame within {timeout:g} s")
        vault = scratch / "birds"
        shutil.copytree(ROOT / "fixtures" / "birds", vault)
        listed = subprocess.run([sys.executable, "-m", "hqltui.cli", str(vault), "--list"],
                                capture_output=True, text=True, timeout=timeout)
        if listed.returncode != 0 or "index  .hql/index.sqlite  (present)" not in listed.stdout:
            problems.append(f"hql-tui VAULT --list: exit {listed.returncode}: "
                            f"{(listed.stderr or listed.stdout).strip()[:200]}")
        else:
            print(f"make run: first frame after {run.events['first-paint'][0]:.2f} s, "
                  "quit with ctrl+q; hql-tui VAULT --list: the index is present")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links-only", action="store_true", help="skip the quick start")
    parser.add_argument("--make-args", default="", help="variables for `make run`, e.g. BIN=...")
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    problems = broken_links()
    print(f"links: {len(pages())} pages checked, {len(problems)} broken")
    if not args.links_only:
        problems += quick_start(args.make_args.split(), args.timeout)
    for line in problems:
        print(f"  {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
