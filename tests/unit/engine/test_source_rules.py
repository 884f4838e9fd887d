"""Rules on the engine's source that keep it deterministic and its modules acyclic,
checked by reading the code with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import engine

ENGINE = Path(engine.__file__).parent

WALL_CLOCK_READS = {
    "time.time",
    "time.time_ns",
    "datetime.now",
    "datetime.utcnow",
    "datetime.today",
    "date.today",
    "datetime.datetime.now",
}
# Modules of engine/plan and engine/runtime allowed to read the wall clock, with the reason.
WALL_CLOCK_ALLOWED: dict[str, str] = {}


def _modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ENGINE / package).rglob("*.py"))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _wall_clock_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and _dotted(node) in WALL_CLOCK_READS:
            found.append(f"{path.relative_to(ENGINE)}:{node.lineno}: {_dotted(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            if {alias.name for alias in node.names} & {"time", "time_ns"}:
                found.append(f"{path.relative_to(ENGINE)}:{node.lineno}: from time import time")
    return found


def test_plan_and_runtime_never_read_the_wall_clock() -> None:
    reads = [
        read
        for path in _modules("plan", "runtime")
        if str(path.relative_to(ENGINE)) not in WALL_CLOCK_ALLOWED
        for read in _wall_clock_reads(path)
    ]
    assert reads == []


def _imports_inside_functions(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.append(
                        f"{path.relative_to(ENGINE)}:{inner.lineno}: import in {getattr(node, 'name', 'lambda')}()"
                    )
    return found


def test_every_engine_import_sits_at_module_level() -> None:
    """A function-local import hides an import cycle or a slow import; neither is allowed."""
    assert [found for path in sorted(ENGINE.rglob("*.py")) for found in _imports_inside_functions(path)] == []


def test_wall_clock_mode_reads_the_time_source_it_is_given() -> None:
    now = [5_000]
    rt = engine.compile(
        "define stream S (a int); from S select a insert into Out;", clock="wall", wall_time=lambda: now[0]
    )
    assert rt.now() == 5_000
    now[0] = 7_000
    assert rt.now() == 7_000
