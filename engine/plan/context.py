"""State shared while planning one app: definitions seen so far, diagnostics, the
namespace generated code runs in, and the environment query instances are built in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.plan.expressions import CompileErrors, ExprContext, ExpressionCompiler
from engine.plan.function_registry import FunctionRegistry
from engine.plan.functions import default_registry
from engine.query.expressions import Span
from engine.runtime.clock import Scheduler
from engine.runtime.junction import Junction
from engine.runtime.selector import base_namespace
from engine.types import AttrType


@dataclass
class StreamInfo:
    """A stream's schema as the planner knows it."""

    name: str
    names: list[str]
    types: list[AttrType]
    span: Span | None = None
    implicit: bool = False  # defined by a query's `insert into`
    kind: str = "stream"  # stream | table | window | trigger | aggregation

    @property
    def attributes(self) -> list[tuple[str, AttrType]]:
        return list(zip(self.names, self.types, strict=True))


@dataclass
class PlanContext:
    errors: CompileErrors = field(default_factory=CompileErrors)
    namespace: dict[str, Any] = field(default_factory=base_namespace)
    functions: FunctionRegistry = field(default_factory=default_registry)
    streams: dict[str, StreamInfo] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)  # name -> runtime table
    windows: dict[str, Any] = field(default_factory=dict)  # name -> named window runtime
    table_infos: dict[str, StreamInfo] = field(default_factory=dict)
    window_infos: dict[str, StreamInfo] = field(default_factory=dict)
    aggregations: dict[str, Any] = field(default_factory=dict)  # name -> runtime aggregation
    aggregation_infos: dict[str, StreamInfo] = field(default_factory=dict)
    query_count: int = 0
    legacy: bool = False  # the plan is in the WSO2 CEP 3.x dialect
    app_name: str = "SiddhiApp"  # `@app:name` (`@Plan:name`): the prefix of #log() records
    clock_now: list[Callable[[], int]] = field(default_factory=lambda: [lambda: 0])
    # `cond in Name`: the table or named window `Name` as the expression compiler sees it
    # (installed by the planner from engine.plan.tables, which builds on this module)
    table_lookup: Callable[[str], Any] | None = None

    def __post_init__(self) -> None:
        holder = self.clock_now
        self.namespace["_now"] = lambda: holder[0]()  # currentTimeMillis(): the runtime's clock

    def compiler(self) -> ExpressionCompiler:
        ctx = ExprContext(self.errors, self.namespace, function_registry=self.functions)
        ctx.table_lookup = self.table_lookup
        return ExpressionCompiler(ctx)


class Env:
    """Where a query instance lives: global junctions, or one partition key's inner ones."""

    def __init__(
        self,
        junctions: dict[str, Junction],
        scheduler: Scheduler,
        now: Callable[[], int],
        start_time: Callable[[], int],
        prefix: str = "",
        inner: dict[str, Junction] | None = None,
        partition_key: Any = None,
    ) -> None:
        self.junctions = junctions
        self.scheduler = scheduler
        self.now = now
        self.start_time = start_time
        self.prefix = prefix
        self.inner = inner
        self.partition_key = partition_key

    def junction(self, name: str, inner: bool = False) -> Junction:
        if inner:
            assert self.inner is not None
            return self.inner[name]
        return self.junctions[name]
