"""Rules on the imports of the whole tree (engine, adapters, formatters, ha, app), checked by
reading the code with `ast`: the modules import each other without a cycle, and no
function-local import of one of our modules is there to dodge one.

The graph has an edge from a module to every module of ours it imports at module level (also
inside a class body, a module-level `if` or `try`), but not under `if TYPE_CHECKING:`. An
import of `a.b.c` also runs the packages `a` and `a.b` unless the importer is inside them
already, so it counts as importing their `__init__` too; `from a.b import c` imports the
module `a.b.c` when there is one, else the name `c` of `a.b`. A function-local import may
stay lazy for start-up speed (the CLI's commands) or for a heavy optional dependency
(pyspark, pandas), but only if the module it imports does not import the importer back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "adapters", "formatters", "ha", "app")


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    local: bool  # inside a function: runs when the function is called, not at import time


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _ours(name: str) -> str | None:
    """The module of ours that `name` (a dotted module path) is, or lies in; None if not ours."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(nodes: Iterable[ast.AST], local: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import among `nodes` and below, with whether it sits in a function; the imports
    under `if TYPE_CHECKING:` left out (those under its `else:` kept)."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, local
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.orelse, local)
        else:
            inner = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _statements(ast.iter_child_nodes(node), inner)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of ours that `node` in `module` names (packages run on the way excluded)."""
    if isinstance(node, ast.Import):
        found = [_ours(alias.name) for alias in node.names]
        return [t for t in found if t is not None]
    base = node.module or ""
    if node.level:
        package = module if _is_package(module) else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    owner = _ours(base)
    if owner is None:
        return []
    targets = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        targets.append(submodule if submodule in MODULES else owner)
    return targets


def _imports() -> list[Import]:
    found: dict[Import, None] = {}  # one per statement and module it names
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, local in _statements(tree.body, local=False):
            for target in _targets(module, node):
                if target != module:
                    found[Import(module, target, node.lineno, local)] = None
    return list(found)


IMPORTS = _imports()


def _module_level_graph() -> dict[str, dict[str, int]]:
    """importer -> {imported: line}: what importing each module runs, at once, of ours."""
    graph: dict[str, dict[str, int]] = {module: {} for module in MODULES}
    for imp in IMPORTS:
        if imp.local:
            continue
        inside = set(_ancestors(imp.importer))
        for ran in (*_ancestors(imp.target), imp.target):
            if ran not in inside and ran != imp.importer:
                graph[imp.importer].setdefault(ran, imp.line)
    return graph


GRAPH = _module_level_graph()


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph[succ])))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
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
                        components.append(sorted(component))
    return components


def _path(graph: dict[str, dict[str, int]], start: str, goal: str) -> list[str] | None:
    """A shortest chain of module-level imports from `start` to `goal` (breadth first)."""
    came_from: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for succ in graph[node]:
                if succ in came_from:
                    continue
                came_from[succ] = node
                if succ == goal:
                    chain = [succ]
                    back = came_from[succ]
                    while back is not None:
                        chain.append(back)
                        back = came_from[back]
                    return chain[::-1]
                nxt.append(succ)
        frontier = nxt
    return None


def _file(module: str) -> str:
    path = MODULES.get(module)
    return module if path is None else str(path.relative_to(ROOT))


def _described(graph: dict[str, dict[str, int]], chain: list[str]) -> str:
    """`a (a.py:3) -> b (b.py:7) -> c`: each step with the line of its import."""
    steps = [
        f"{here} ({_file(here)}:{graph[here][there]})" for here, there in zip(chain, chain[1:], strict=False)
    ]
    return " -> ".join([*steps, chain[-1]])


def _named_cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each cycle, as its shortest round through its first module."""
    named = []
    for component in _cycles(graph):
        first = component[0]
        back = min(
            (p for succ in graph[first] if succ in component for p in [_path(graph, succ, first)] if p),
            key=len,
        )
        named.append(f"{_described(graph, [first, *back])} (cycle of {len(component)} modules)")
    return named


def test_the_module_level_imports_have_no_cycle() -> None:
    """A cycle works only in the order the modules happen to be imported (`import
    app.console.api` alone once failed: it ran app.node, whose node imports the web app,
    which imports app.console.api); the names the two modules share move to a third that
    both import (STYLE.md, Typing)."""
    assert _named_cycles(GRAPH) == []


def _dodges(imports: list[Import], graph: dict[str, dict[str, int]]) -> list[str]:
    """Each function-local import whose module imports the importer back, with the way back."""
    found = []
    for imp in imports:
        if not imp.local:
            continue
        back = _path(graph, imp.target, imp.importer)
        if back is not None:
            found.append(
                f"{_file(imp.importer)}:{imp.line}: the function-local import of {imp.target} dodges "
                f"the cycle {_described(graph, back)} -> (local import) {imp.target}"
            )
    return found


def test_no_function_local_import_dodges_a_cycle() -> None:
    """A local import of a module that imports the importer back hides a cycle from the test
    above; import it at module level and cut the cycle instead."""
    assert _dodges(IMPORTS, GRAPH) == []


def test_the_rules_name_a_cycle_and_a_dodging_local_import() -> None:
    """The two tests above on a made-up graph: a cycle through three modules is named with
    the line of each import, and a local import of a module that imports the importer back
    is caught, while one of a module that does not is let be."""
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7}, "d": {"a": 1}, "e": {}}
    assert _named_cycles(graph) == ["a (a:3) -> b (b:5) -> c (c:7) -> a (cycle of 3 modules)"]
    lazy = [Import("a", "d", 9, local=True), Import("a", "e", 10, local=True)]
    assert _dodges(lazy, graph) == [
        "a:9: the function-local import of d dodges the cycle d (d:1) -> a -> (local import) d"
    ]


def test_the_graph_reads_relative_submodule_and_package_imports() -> None:
    """`from . import x` of a submodule, `from pkg import Name` of a package's `__init__`, the
    packages an import runs on the way, and `if TYPE_CHECKING:` left out."""
    tree = ast.parse(
        "from . import errors\n"
        "from .errors import PeerError\n"
        "from app.registry import Registry\n"
        "import engine.events\n"
        "if TYPE_CHECKING:\n"
        "    from app.node import Node\n"
        "def f():\n"
        "    from app.spark import runner\n"
    )
    found = [
        (target, local)
        for node, local in _statements(tree.body, local=False)
        for target in _targets("app.cluster.member", node)
    ]
    assert found == [
        ("app.cluster.errors", False),
        ("app.cluster.errors", False),
        ("app.registry", False),
        ("engine.events", False),
        ("app.spark.runner", True),
    ]
