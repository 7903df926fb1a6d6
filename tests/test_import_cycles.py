"""No import cycles between the modules of the package and the benchmarks.

Every import counts: at module level, inside functions (a lazy import is still
a dependency, only a later one), and under `if TYPE_CHECKING:` (the type
checker follows it). A cycle means neither module can be read, tested or moved
without the other; a lower module that needs a higher one's type states what it
needs as a small Protocol instead.

Modules are found by walking the folders, so the check needs no list of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("laminar_kafka", "benchmarks")

Graph = dict[str, set[str]]


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module under `root/<package>`, by dotted name (a package by its folder's)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The known modules one import statement loads (a `from pkg import name` whose
    `name` is a submodule counts as that submodule)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
            base = ".".join([*anchor, base] if base else anchor)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    else:
        return []
    targets = []
    for name in names:
        # `import a.b.attr` is not valid Python, but `a.b.c` may name a package's module.
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return targets


def import_graph(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> Graph:
    """Module -> the modules of `packages` it imports, anywhere in its text."""
    files = module_files(root, packages)
    known = set(files)
    graph: Graph = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            edges.update(_targets(node, module, is_package, known))
        graph[module] = edges - {module}
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def a_cycle(graph: Graph, component: list[str]) -> list[str]:
    """One cycle through the component's first module: the shortest way back to it."""
    start = component[0]
    inside = set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for step in sorted(graph[node] & inside):
                if step == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if step not in came_from:
                    came_from[step] = node
                    following.append(step)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def cycles(graph: Graph) -> list[str]:
    """One cycle per strongly connected component, as `a -> b -> a`, then the
    component's other modules, if any (each is on a cycle with these)."""
    found = []
    for component in strongly_connected(graph):
        cycle = a_cycle(graph, component)
        others = sorted(set(component) - set(cycle))
        found.append(" -> ".join(cycle) + (f" (also: {', '.join(others)})" if others else ""))
    return found


def test_the_package_and_benchmarks_have_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_the_walk_sees_modules_in_any_folder() -> None:
    graph = import_graph()
    assert "laminar_kafka.formats.avro" in graph["laminar_kafka.formats"]
    assert any(name.startswith("benchmarks.baselines.") for name in graph)


def test_the_check_names_a_cycle_through_lazy_and_typing_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "deep" / "er").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.top import TOP\n")
    (pkg / "deep" / "__init__.py").write_text("")
    (pkg / "deep" / "er" / "__init__.py").write_text("")
    (pkg / "top.py").write_text("from pkg.deep import lazy\nTOP = 1\n")
    (pkg / "deep" / "lazy.py").write_text(
        "def later():\n    from .er import typed\n    return typed\n"
    )
    (pkg / "deep" / "er" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from pkg import TOP\n"  # a name, not a module: the package's __init__
        "if TYPE_CHECKING:\n    from ... import side\n"
    )
    (pkg / "side.py").write_text("import pkg.top\n")
    (pkg / "alone.py").write_text("import pkg.deep.lazy\nfrom pkg.top import TOP\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.deep.lazy"] == {"pkg.deep.er.typed"}
    assert graph["pkg.deep.er.typed"] == {"pkg", "pkg.side"}
    assert graph["pkg.alone"] == {"pkg.deep.lazy", "pkg.top"}
    assert cycles(graph) == [
        "pkg -> pkg.top -> pkg.deep.lazy -> pkg.deep.er.typed -> pkg (also: pkg.side)"
    ]


def test_a_graph_without_cycles_passes(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "low.py").write_text("import json\n")
    (tmp_path / "pkg" / "high.py").write_text("from . import low\nfrom .low import x\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.high"] == {"pkg.low"}
    assert cycles(graph) == []
