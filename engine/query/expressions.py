"""Expression nodes of the SiddhiQL tree; each carries its source span."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.types import AttrType


@dataclass(frozen=True, slots=True)
class Span:
    """1-based start line/column and end line/column (end exclusive)."""

    line: int
    col: int
    end_line: int
    end_col: int

    def to(self, other: Span) -> Span:
        return Span(self.line, self.col, other.end_line, other.end_col)


NO_SPAN = Span(1, 1, 1, 2)


@dataclass(eq=False)
class Expr:
    span: Span = field(default=NO_SPAN, kw_only=True, compare=False)


@dataclass(eq=False)
class Constant(Expr):
    value: object
    type: AttrType
    is_time: bool = False  # written as a time value (`5 sec`): a long in ms


@dataclass(frozen=True)
class EventIndex:
    """`e1[0]`, `e1[last]`, `e1[last - 2]`: `position` counts from the start, or
    `from_last` counts back from the last event."""

    position: int | None = None
    from_last: int | None = None


@dataclass(eq=False)
class Variable(Expr):
    """An attribute reference: `price`, `S.price`, `e1.price`, `e2[last].price`, `#Inner.x`."""

    attribute: str
    stream: str | None = None
    index: EventIndex | None = None
    inner: bool = False
    fault: bool = False


@dataclass(eq=False)
class BinaryOp(Expr):
    op: str  # + - * / % < > <= >= == != and or
    left: Expr
    right: Expr


@dataclass(eq=False)
class Not(Expr):
    operand: Expr


@dataclass(eq=False)
class Negate(Expr):
    operand: Expr


@dataclass(eq=False)
class IsNull(Expr):
    operand: Expr


@dataclass(eq=False)
class IsNullStream(Expr):
    """`e1 is null`, `e2[0] is null`: a pattern state with no matched event."""

    stream: str
    index: EventIndex | None = None
    inner: bool = False


@dataclass(eq=False)
class In(Expr):
    """`cond in Table`: whether any row of the table satisfies `cond`."""

    operand: Expr
    table: str
    table_span: Span = NO_SPAN


@dataclass(eq=False)
class FunctionCall(Expr):
    name: str
    args: list[Expr]
    namespace: str | None = None
    star: bool = False  # `count(*)`-style argument list

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}:{self.name}" if self.namespace else self.name


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression tree, parents first."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, BinaryOp):
            stack.extend((node.right, node.left))
        elif isinstance(node, (Not, Negate, IsNull)):
            stack.append(node.operand)
        elif isinstance(node, In):
            stack.append(node.operand)
        elif isinstance(node, FunctionCall):
            stack.extend(reversed(node.args))
