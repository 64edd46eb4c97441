"""Import cycles among a package's modules, imports inside functions included.

    python -m scripts.import_cycles producer hqltui

import-linter's contracts see module-level imports only; a cycle closed by an
import inside a function (the usual way to hide one) is counted here too; an
import under ``if TYPE_CHECKING:`` never runs and is not. Prints each strongly
connected group of modules that import one another, and the count.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every known module ``path`` imports, wherever the import statement stands."""
    found: set[str] = set()
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != here:
                found.add(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def main(packages: list[str]) -> int:
    files = {module_name(p): p for pkg in packages for p in Path(pkg).rglob("*.py")}
    known = set(files)
    graph = {name: imports_of(path, known) for name, path in files.items()}
    found = cycles(graph)
    for group in found:
        print("cycle:", " <-> ".join(group))
    print(f"{len(found)} import cycle(s) in {', '.join(packages)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or ["producer", "hqltui"]))
