"""Query nodes: inputs (single, join, pattern/sequence), selector, outputs, partitions, app."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.query.definitions import Annotation, Definition, find_annotation
from engine.query.expressions import NO_SPAN, Expr, FunctionCall, Span, Variable

# ---- stream handlers and inputs -------------------------------------------------


@dataclass(eq=False)
class Filter:
    expr: Expr
    span: Span = NO_SPAN


@dataclass(eq=False)
class StreamFunction:
    call: FunctionCall
    span: Span = NO_SPAN


@dataclass(eq=False)
class Window:
    call: FunctionCall
    span: Span = NO_SPAN


Handler = Filter | StreamFunction


@dataclass(eq=False)
class SingleInput:
    """`S[filter]#fn()#window.x(...)[filter] as alias` (or `e1=S[...]` inside patterns)."""

    stream: str
    handlers: list[Handler] = field(default_factory=list)
    window: Window | None = None
    post_handlers: list[Handler] = field(default_factory=list)
    alias: str | None = None
    inner: bool = False
    fault: bool = False
    span: Span = NO_SPAN
    stream_span: Span = NO_SPAN

    @property
    def ref(self) -> str:
        """The name queries use to refer to this input."""
        return self.alias or self.stream


@dataclass(eq=False)
class JoinInput:
    left: SingleInput
    right: SingleInput
    join_type: str = "inner"  # inner | left_outer | right_outer | full_outer
    unidirectional: str | None = None  # "left" | "right" | None
    on: Expr | None = None
    within: Expr | None = None
    within_end: Expr | None = None
    per: Expr | None = None
    span: Span = NO_SPAN


# ---- pattern and sequence state elements ----------------------------------------


@dataclass(eq=False)
class StateElement:
    span: Span = field(default=NO_SPAN, kw_only=True)


@dataclass(eq=False)
class StreamState(StateElement):
    """`e1=S[cond]` — one event of S that satisfies the filters."""

    input: SingleInput
    ref: str | None = None


@dataclass(eq=False)
class AbsentState(StateElement):
    """`not S[cond] for 5 sec` (waiting_ms) or `not S[cond]` inside a logical `and`."""

    input: SingleInput
    waiting_ms: int | None = None


@dataclass(eq=False)
class CountState(StateElement):
    """`e1=S<2:5>`, `<2:>`, `<:5>`, and sequence `*`, `+`, `?` (max None = unbounded)."""

    state: StreamState
    min_count: int
    max_count: int | None


@dataclass(eq=False)
class LogicalState(StateElement):
    op: str  # and | or
    left: StateElement
    right: StateElement


@dataclass(eq=False)
class NextState(StateElement):
    """`a -> b` in patterns, `a, b` in sequences."""

    first: StateElement
    then: StateElement


@dataclass(eq=False)
class EveryState(StateElement):
    inner: StateElement


@dataclass(eq=False)
class StateInput:
    kind: str  # pattern | sequence
    root: StateElement
    within_ms: int | None = None
    span: Span = NO_SPAN


@dataclass(eq=False)
class AnonymousInput:
    """`from (from S ... return)` — an inline query as a stream."""

    query: Query
    span: Span = NO_SPAN


Input = SingleInput | JoinInput | StateInput | AnonymousInput

# ---- selector ---------------------------------------------------------------------


@dataclass(eq=False)
class OutputAttribute:
    name: str
    expr: Expr
    span: Span = NO_SPAN
    explicit_name: bool = True


@dataclass(eq=False)
class OrderBy:
    variable: Variable
    ascending: bool = True


@dataclass(eq=False)
class Selector:
    attributes: list[OutputAttribute] | None = None  # None: `select *` (or no select)
    group_by: list[Variable] = field(default_factory=list)
    having: Expr | None = None
    order_by: list[OrderBy] = field(default_factory=list)
    limit: Expr | None = None
    offset: Expr | None = None
    span: Span = NO_SPAN


@dataclass(eq=False)
class OutputRate:
    """`output [all|first|last] every N events | every T`, or `output snapshot every T`."""

    kind: str  # all | first | last | snapshot
    events: int | None = None
    time_ms: int | None = None
    span: Span = NO_SPAN


# ---- outputs ----------------------------------------------------------------------


@dataclass(eq=False)
class Output:
    # current | expired | all; "default" when not written: current events, or all events
    # for a query with `output snapshot` (as Siddhi's query API decides).
    event_type: str = "default"
    span: Span = field(default=NO_SPAN, kw_only=True)


@dataclass(eq=False)
class InsertInto(Output):
    target: str = ""
    inner: bool = False
    fault: bool = False
    target_span: Span = field(default=NO_SPAN, kw_only=True)


@dataclass(eq=False)
class ReturnOutput(Output):
    pass


@dataclass(eq=False)
class SetAssignment:
    variable: Variable
    expr: Expr


@dataclass(eq=False)
class DeleteFrom(Output):
    target: str = ""
    on: Expr | None = None
    target_span: Span = field(default=NO_SPAN, kw_only=True)


@dataclass(eq=False)
class UpdateTable(Output):
    target: str = ""
    on: Expr | None = None
    set: list[SetAssignment] | None = None
    target_span: Span = field(default=NO_SPAN, kw_only=True)


@dataclass(eq=False)
class UpdateOrInsert(Output):
    target: str = ""
    on: Expr | None = None
    set: list[SetAssignment] | None = None
    target_span: Span = field(default=NO_SPAN, kw_only=True)


# ---- queries, partitions, the app -------------------------------------------------


@dataclass(eq=False)
class Query:
    input: Input
    output: Output
    selector: Selector = field(default_factory=Selector)
    output_rate: OutputRate | None = None
    annotations: list[Annotation] = field(default_factory=list)
    partition_ref: str | None = None  # Siddhi 2.x `... partition by P`
    span: Span = NO_SPAN

    @property
    def name(self) -> str | None:
        info = find_annotation(self.annotations, "info")
        return info.get("name") if info else None


@dataclass(eq=False)
class ValuePartition:
    expr: Expr
    stream: str
    span: Span = NO_SPAN


@dataclass(eq=False)
class RangePartition:
    ranges: list[tuple[Expr, str]]
    stream: str
    span: Span = NO_SPAN


PartitionType = ValuePartition | RangePartition


@dataclass(eq=False)
class Partition:
    partition_with: list[PartitionType]
    queries: list[Query]
    annotations: list[Annotation] = field(default_factory=list)
    span: Span = NO_SPAN


@dataclass(eq=False)
class PartitionDefinition(Definition):
    """Siddhi 2.x `define partition P by S.attr, T.attr` (used by `partition by P`)."""

    partition_with: list[PartitionType] = field(default_factory=list)


@dataclass(eq=False)
class App:
    annotations: list[Annotation] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    elements: list[Query | Partition] = field(default_factory=list)
    # Written in the WSO2 CEP 3.x dialect (`@Plan:`, `for expired-events`, `define partition`):
    # keeps CEP 3.x semantics where Siddhi 5 differs.
    legacy: bool = False

    @property
    def name(self) -> str | None:
        for a in self.annotations:
            if a.key in ("app:name", "plan:name"):
                return a.get(None) or a.get("name")
        return None


# ---- on-demand (store) queries ------------------------------------------------------


@dataclass(eq=False)
class OnDemandQuery:
    """A query run once against a plan's current state (Siddhi 5's on-demand query):
    `from T [as a] [on cond] [select ...]` reads a table or named window;
    `select ... insert into T`, `[select ...] delete T [on cond]`,
    `[select ...] update T [set ...] on cond` and
    `select ... update or insert into T [set ...] on cond` change a table, with the
    select's one row as the event."""

    source: str | None = None  # `from source`; None for the changing forms
    alias: str | None = None
    on: Expr | None = None  # the `from` form's condition
    within: Expr | None = None  # aggregations only: `within a[, b] per p`
    within_end: Expr | None = None
    per: Expr | None = None
    selector: Selector | None = None  # None: no select clause
    output: InsertInto | DeleteFrom | UpdateTable | UpdateOrInsert | None = None
    span: Span = NO_SPAN
    source_span: Span = NO_SPAN

    @property
    def changes(self) -> bool:
        """Whether running it changes a table (anything but a `from` read)."""
        return self.output is not None
