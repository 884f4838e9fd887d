"""`FunctionRegistry`: scalar functions by name, each with the code generator of its calls.

The built-ins (`functions`) and the extension namespaces (`ext_functions`: `str:`, `math:`,
...) both register here; neither imports the other's registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.query.expressions import FunctionCall

if TYPE_CHECKING:
    from engine.plan.expressions import Compiled, ExpressionCompiler
    from engine.plan.scope import Scope

Emit = Callable[["ExpressionCompiler", FunctionCall, list["Compiled"], "Scope"], "Compiled"]


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    compile: Emit


class FunctionRegistry:
    def __init__(self) -> None:
        self._specs: dict[str, FunctionSpec] = {}

    def register(self, name: str, emit: Emit) -> None:
        self._specs[name.lower()] = FunctionSpec(name, emit)

    def lookup(self, call: FunctionCall) -> FunctionSpec | None:
        return self._specs.get(call.qualified_name.lower())

    def names(self) -> list[str]:
        return sorted(s.name for s in self._specs.values())
