"""Type-check an expression and compile it to Python source, once.

Every expression compiles to two snippets: `fast` (plain operators; raises TypeError or
ZeroDivisionError when it meets a null) and `safe` (null-propagating helpers). Operators
run the fast form over a whole chunk and fall back to the safe form only for chunks that
hold nulls, so the common case walks no tree and calls no helper per event.

Siddhi's semantics: any comparison with a null is false; arithmetic with a null is null;
`and`/`or`/`not` treat null as false; int/int stays int (Java division and remainder).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from engine.errors import Diagnostic
from engine.plan.aggregates import AGGREGATE_NAMES
from engine.query.expressions import (
    BinaryOp,
    Constant,
    Expr,
    FunctionCall,
    In,
    IsNull,
    IsNullStream,
    Negate,
    Not,
    Span,
    Variable,
)
from engine.types import NUMERIC_TYPES, AttrType, widest

if TYPE_CHECKING:
    from engine.plan.scope import Scope, Source

_PEV_EDGE = re.compile(r"^_pev\(((?:p|r)\[\d+\]), (-1|0)\)$")
_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
MAX_CODE_NESTING = 150
_STRING_LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_BRACKET = re.compile(r"[()\[\]{}]")
NESTED_STEPS = 32  # longer arithmetic chains compile to a fold: Python allows 200 nested parentheses
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


@dataclass
class Compiled:
    fast: str
    safe: str
    type: AttrType
    const: bool = False
    value: Any = None
    may_be_null: bool = True
    failed: bool = False  # already reported: operators on it add no further errors

    @classmethod
    def constant(cls, value: Any, kind: AttrType) -> Compiled:
        code = _literal(value)
        return cls(code, code, kind, True, value, value is None)


def _literal(value: Any) -> str:
    if isinstance(value, float):
        if value != value:
            return "_nan"
        if value in (float("inf"), float("-inf")):
            return "_inf" if value > 0 else "(-_inf)"
    return repr(value)


FAILED = Compiled("None", "None", AttrType.OBJECT, failed=True)


class CompileErrors:
    """Collects diagnostics so one pass reports every problem in a plan."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, message: str, span: Span, hint: str | None = None) -> None:
        end_col = span.end_col if span.end_col > span.col or span.end_line > span.line else span.col + 1
        self.items.append(Diagnostic(message, span.line, span.col, span.end_line, end_col, hint))

    def __bool__(self) -> bool:
        return bool(self.items)


class PlanError(Exception):
    """Raised inside the planner to abandon one element after recording its diagnostic."""


@dataclass
class ExprContext:
    """What the expression compiler needs from the planner besides the scope."""

    errors: CompileErrors
    namespace: dict[str, Any]
    # Hooks the planner installs: tables for `in`, functions for calls, aggregates.
    table_lookup: Any = None  # (name) -> (Source-like table info, runtime table object) | None
    function_registry: Any = None
    aggregate_hook: Any = None  # (FunctionCall, Scope) -> Compiled | None
    script_functions: dict[str, Any] = field(default_factory=dict)
    counter: list[int] = field(default_factory=lambda: [0])

    def bind(self, prefix: str, obj: Any) -> str:
        """Put a runtime object into the generated code's namespace; returns its name."""
        self.counter[0] += 1
        name = f"_{prefix}{self.counter[0]}"
        self.namespace[name] = obj
        return name


class ExpressionCompiler:
    def __init__(self, ctx: ExprContext) -> None:
        self.ctx = ctx
        self._depth = 0

    def error(self, message: str, span: Span, hint: str | None = None) -> Compiled:
        self.ctx.errors.add(message, span, hint)
        return FAILED

    def compile(self, expr: Expr, scope: Scope) -> Compiled:
        self._depth += 1
        try:
            result = self._compile(expr, scope)
        finally:
            self._depth -= 1
        if self._depth == 0 and _nests_too_deeply(result):
            return self.error(
                "expression too deeply nested to compile",
                expr.span,
                hint="write long conditions as flat chains (a or b or c) or split them over several queries",
            )
        return result

    def _compile(self, expr: Expr, scope: Scope) -> Compiled:
        if isinstance(expr, Constant):
            return Compiled.constant(expr.value, expr.type)
        if isinstance(expr, Variable):
            return self.variable(expr, scope)
        if isinstance(expr, BinaryOp):
            return self.binary(expr, scope)
        if isinstance(expr, Not):
            inner = self.compile(expr.operand, scope)
            if inner.failed:
                return FAILED
            if inner.type is not AttrType.BOOL:
                return self.error(f"'not' needs a bool operand, found {inner.type}", expr.operand.span)
            b = self.as_bool(inner)
            return Compiled(f"(not {b.fast})", f"(not {b.safe})", AttrType.BOOL, may_be_null=False)
        if isinstance(expr, Negate):
            inner = self.compile(expr.operand, scope)
            if inner.failed:
                return FAILED
            if inner.type not in NUMERIC_TYPES:
                return self.error(f"cannot negate a {inner.type}", expr.span)
            if inner.const:
                return Compiled.constant(-inner.value, inner.type)
            return Compiled(f"(-{inner.fast})", f"_s_neg({inner.safe})", inner.type)
        if isinstance(expr, IsNull):
            if isinstance(expr.operand, Variable) and expr.operand.stream is None:
                src = scope.find_source(expr.operand.attribute)
                # `e1 is null` in a pattern, `t is null` for a join side (Siddhi's
                # IsNullStream): a name that is a source's and no attribute's
                if (
                    src is not None
                    and all(s.index_of(expr.operand.attribute) is None for s in scope.sources)
                    and expr.operand.attribute not in scope.outputs
                ):
                    return self.stream_is_null(IsNullStream(expr.operand.attribute, span=expr.span), scope)
            inner = self.compile(expr.operand, scope)
            return Compiled(
                f"({inner.safe} is None)", f"({inner.safe} is None)", AttrType.BOOL, may_be_null=False
            )
        if isinstance(expr, IsNullStream):
            return self.stream_is_null(expr, scope)
        if isinstance(expr, FunctionCall):
            return self.call(expr, scope)
        if isinstance(expr, In):
            return self.in_table(expr, scope)
        return self.error(f"unsupported expression {type(expr).__name__}", expr.span)

    # ---- pieces -------------------------------------------------------------------

    def as_bool(self, c: Compiled) -> Compiled:
        """A bool operand for and/or/not: a null bool attribute counts as false."""
        if not c.may_be_null or c.const:
            return c
        return Compiled(f"({c.fast} is True)", f"({c.safe} is True)", AttrType.BOOL, may_be_null=False)

    def stream_is_null(self, expr: IsNullStream, scope: Scope) -> Compiled:
        src = scope.find_source(expr.stream)
        if src is None:
            return self.error(f"unknown event reference '{expr.stream}'", expr.span)
        if src.indexed_row is not None:
            row = src.indexed_row(expr.index)
        else:
            row = src.row
        return Compiled(f"({row} is None)", f"({row} is None)", AttrType.BOOL, may_be_null=False)

    def variable(self, v: Variable, scope: Scope) -> Compiled:
        if v.stream is None and scope.prefer_outputs and v.attribute in scope.outputs:
            code, kind = scope.outputs[v.attribute]
            return Compiled(code, code, kind)
        if v.stream is not None:
            src = scope.find_source(v.stream)
            if src is None and scope.lenient_qualifiers and len(scope.sources) == 1:
                only = scope.sources[0]
                j = only.index_of(v.attribute)
                if j is not None and only.indexed_row is None:
                    return self._access(only, j, Variable(v.attribute, span=v.span))
            if src is None:
                return self.error(
                    f"unknown stream or reference '{v.stream}'",
                    v.span,
                    hint=_suggest(v.stream, [n for s in scope.sources for n in s.names]),
                )
            i = src.index_of(v.attribute)
            if i is None:
                return self.error(
                    f"'{v.stream}' has no attribute '{v.attribute}'",
                    v.span,
                    hint=_suggest(v.attribute, [n for n, _ in src.attributes]),
                )
            return self._access(src, i, v)
        if scope.default_source is not None:
            ds = scope.default_source
            i = ds.index_of(v.attribute)
            if i is not None:
                return self._access(ds, i, v)
        found = [(s, s.index_of(v.attribute)) for s in scope.sources]
        found = [(s, i) for s, i in found if i is not None]
        if not found:
            if v.attribute in scope.outputs:
                code, kind = scope.outputs[v.attribute]
                return Compiled(code, code, kind)
            names = [n for s in scope.sources for n, _ in s.attributes] + list(scope.outputs)
            return self.error(f"unknown attribute '{v.attribute}'", v.span, hint=_suggest(v.attribute, names))
        if len(found) > 1:
            refs = ", ".join(f"{s.names[0]}.{v.attribute}" for s, _ in found)
            return self.error(f"attribute '{v.attribute}' is ambiguous", v.span, hint=f"qualify it: {refs}")
        src, i = found[0]
        assert i is not None
        return self._access(src, i, v)

    def _access(self, src: Source, i: int, v: Variable) -> Compiled:
        kind = src.type_of(i)
        if src.indexed_row is not None:
            row = src.indexed_row(v.index)
            # the fast path reads the first or last event of a state's chain by plain
            # indexing (a missing state raises TypeError: the safe path then runs)
            fast_row = _PEV_EDGE.sub(r"\1[\2][1]", row)
            return Compiled(f"{fast_row}[{i}]", f"_s_get({row}, {i})", kind)
        if v.index is not None:
            return self.error(f"'{v.stream}' is not a counting state; it cannot be indexed", v.span)
        if src.nullable:
            return Compiled(f"{src.row}[{i}]", f"_s_get({src.row}, {i})", kind)
        code = f"{src.row}[{i}]"
        return Compiled(code, code, kind)

    def binary(self, e: BinaryOp, scope: Scope) -> Compiled:
        """A chain of binary operators down the left side, `((a op b) op c) op d`, step by
        step without recursion; `and`/`or` runs compile flat, long arithmetic runs to folds."""
        steps: list[BinaryOp] = []
        node: Expr = e
        while isinstance(node, BinaryOp):
            steps.append(node)
            node = node.left
        steps.reverse()
        acc = self.compile(node, scope)
        i = 0
        while i < len(steps):
            op = steps[i].op
            j = i + 1
            if op in ("and", "or"):
                while j < len(steps) and steps[j].op == op:
                    j += 1
                acc = self.junction(op, acc, steps[i:j], scope)
            elif op in _ARITH:
                while j < len(steps) and steps[j].op in _ARITH:
                    j += 1
                acc = self.arithmetic_chain(acc, steps[i:j], scope)
            else:
                right = self.compile(steps[i].right, scope)
                acc = FAILED if acc.failed or right.failed else self.comparison(steps[i], acc, right)
            i = j
        return acc

    def junction(self, op: str, first: Compiled, steps: list[BinaryOp], scope: Scope) -> Compiled:
        """`a or b or c`: one flat Python `or` (or `and`) however long the chain."""
        parts = [first]
        failed = first.failed
        for step in steps:
            right = self.compile(step.right, scope)
            if failed or right.failed:
                failed = True
                continue
            sides = [(first, step.left), (right, step.right)] if len(parts) == 1 else [(right, step.right)]
            wrong = next(((side, at) for side, at in sides if side.type is not AttrType.BOOL), None)
            if wrong is not None:
                self.error(f"'{op}' needs bool operands, found {wrong[0].type}", wrong[1].span)
                failed = True
                continue
            parts.append(right)
        if failed:
            return FAILED
        bools = [self.as_bool(part) for part in parts]
        sep = f" {op} "
        return Compiled(
            f"({sep.join(b.fast for b in bools)})",
            f"({sep.join(b.safe for b in bools)})",
            AttrType.BOOL,
            may_be_null=False,
        )

    def arithmetic_chain(self, first: Compiled, steps: list[BinaryOp], scope: Scope) -> Compiled:
        """`a + b - c * ...` down the left side. Each step is typed as a lone BinaryOp would
        be; up to NESTED_STEPS steps nest as usual, a longer run becomes one call of a fold
        so the generated Python stays flat."""
        base = first
        failed = first.failed
        templates: list[tuple[Compiled, Compiled]] = []  # (step code over {0}/{1}, operand)
        for step in steps:
            right = self.compile(step.right, scope)
            if failed or right.failed:
                failed = True
                continue
            if not templates and base.const and right.const:
                base = self.arithmetic(step, base, right)
                failed = base.failed
                continue
            kind = templates[-1][0].type if templates else base.type
            left_slot = Compiled("{0}", "{0}", kind, base.const and not templates, base.value)
            right_slot = Compiled("{1}", "{1}", right.type, right.const, right.value)
            code = self.arithmetic(step, left_slot, right_slot)
            if code.failed:
                failed = True
                continue
            templates.append((code, right))
        if failed:
            return FAILED
        if not templates:
            return base
        kind = templates[-1][0].type
        if len(templates) <= NESTED_STEPS:
            fast, safe = base.fast, base.safe
            for code, right in templates:
                fast = code.fast.format(fast, right.fast)
                safe = code.safe.format(safe, right.safe)
            return Compiled(fast, safe, kind)
        ns = self.ctx.namespace
        fast_steps = [eval(f"lambda x, y: {c.fast.format('x', 'y')}", ns) for c, _ in templates]  # noqa: S307
        safe_steps = [eval(f"lambda x, y: {c.safe.format('x', 'y')}", ns) for c, _ in templates]  # noqa: S307
        fast_fold = self.ctx.bind("fold", _fold(fast_steps))
        safe_fold = self.ctx.bind("fold", _fold(safe_steps))
        return Compiled(
            f"{fast_fold}({base.fast}, {', '.join(r.fast for _, r in templates)})",
            f"{safe_fold}({base.safe}, {', '.join(r.safe for _, r in templates)})",
            kind,
        )

    def arithmetic(self, e: BinaryOp, left: Compiled, right: Compiled) -> Compiled:
        """Result type as Siddhi: the widest numeric side; an error only when neither
        side is a number."""
        op = e.op
        lt, rt = left.type, right.type
        if lt not in NUMERIC_TYPES and rt not in NUMERIC_TYPES:
            if not (left.const and left.value is None) and not (right.const and right.value is None):
                return self.error(f"arithmetic '{op}' between {lt} and {rt} is not possible", e.span)
        lt = lt if lt in NUMERIC_TYPES else rt
        rt = rt if rt in NUMERIC_TYPES else lt
        if lt not in NUMERIC_TYPES:
            lt = rt = AttrType.INT
        kind = widest(lt, rt)
        integral = kind in (AttrType.INT, AttrType.LONG)
        a, b = left.fast, right.fast
        if op == "/":
            fast = f"_idiv({a}, {b})" if integral else f"_fdiv({a}, {b})"
            safe = (
                f"_s_idiv({left.safe}, {right.safe})" if integral else f"_s_fdiv({left.safe}, {right.safe})"
            )
        elif op == "%":
            fast = f"_imod({a}, {b})" if integral else f"_fmod({a}, {b})"
            safe = (
                f"_s_imod({left.safe}, {right.safe})" if integral else f"_s_fmod({left.safe}, {right.safe})"
            )
        else:
            fast = f"({a} {op} {b})"
            safe = f"_s_{_ARITH[op]}({left.safe}, {right.safe})"
        if kind is AttrType.FLOAT:
            fast, safe = f"_f32({fast})", f"_s_f32({safe})"
        if left.const and right.const and left.value is not None and right.value is not None:
            value = eval(safe, dict(self.ctx.namespace))  # noqa: S307 - our own generated code
            return Compiled.constant(value, kind)
        return Compiled(fast, safe, kind)

    def comparison(self, e: BinaryOp, left: Compiled, right: Compiled) -> Compiled:
        op = e.op
        lt, rt = left.type, right.type
        null_const = (left.const and left.value is None) or (right.const and right.value is None)
        if null_const:
            return Compiled("False", "False", AttrType.BOOL, may_be_null=False)
        problem = _comparison_problem(op, lt, rt)
        if problem is not None:
            return self.error(problem, e.span)
        a, b = left.fast, right.fast
        if op == "==":
            if left.may_be_null and right.may_be_null:
                fast = f"({a} == {b} != None)"
            else:
                fast = f"({a} == {b})"
            safe = (
                f"({left.safe} == {right.safe} != None)"
                if left.may_be_null and right.may_be_null
                else f"({left.safe} == {right.safe})"
            )
        elif op == "!=":
            fast = f"(None != {a} != {b} != None)"
            safe = f"(None != {left.safe} != {right.safe} != None)"
        else:
            fast = f"({a} {op} {b})"
            safe = f"_s_{_COMPARE[op]}({left.safe}, {right.safe})"
        return Compiled(fast, safe, AttrType.BOOL, may_be_null=False)

    def call(self, call: FunctionCall, scope: Scope) -> Compiled:
        if self.ctx.aggregate_hook is not None:
            agg: Compiled | None = self.ctx.aggregate_hook(call, scope)
            if agg is not None:
                return agg
        registry = self.ctx.function_registry
        spec = registry.lookup(call) if registry is not None else None
        if spec is None:
            if call.namespace is None and call.name in AGGREGATE_NAMES:
                return self.error(
                    f"aggregate function {call.name}() is not allowed here",
                    call.span,
                    hint="aggregates belong in 'select' and 'having'",
                )
            return self.error(f"unknown function '{call.qualified_name}'", call.span)
        if call.star:
            call = self.expand_star(call, scope)
        if _names_an_event(call, scope):
            # `eventTimestamp(e1)`, `eventTimestamp(first)`: the argument is an event, not a value
            return spec.compile(self, call, [Compiled("None", "None", AttrType.OBJECT)], scope)  # type: ignore[no-any-return]
        args = [self.compile(a, scope) for a in call.args]
        if any(a.failed for a in args):
            return FAILED
        return spec.compile(self, call, args, scope)  # type: ignore[no-any-return]

    def expand_star(self, call: FunctionCall, scope: Scope) -> FunctionCall:
        """`f(*)` passes every attribute of the query's input, as Siddhi's ExpressionParser
        does; in a join or pattern a name found in two inputs is an error there too."""
        args: list[Expr] = []
        seen: set[str] = set()
        for src in scope.sources:
            for name, _ in src.attributes:
                if name in seen:
                    self.error(f"{call.name}(*): attribute '{name}' is in more than one input", call.span)
                seen.add(name)
                args.append(Variable(name, src.names[0] if src.names else None, span=call.span))
        return replace(call, args=args, star=False)

    def in_table(self, e: In, scope: Scope) -> Compiled:
        lookup = self.ctx.table_lookup
        found = lookup(e.table) if lookup is not None else None
        if found is None:
            return self.error(f"unknown table '{e.table}' after 'in'", e.table_span)
        result: Compiled = found.compile_in(self, e, scope)
        return result


def _names_an_event(call: FunctionCall, scope: Scope) -> bool:
    """A call whose one argument is a bare name of an input (an event reference) rather
    than an attribute: only eventTimestamp() takes one."""
    if call.name.lower() != "eventtimestamp" or call.namespace is not None or len(call.args) != 1:
        return False
    arg = call.args[0]
    if not isinstance(arg, Variable) or arg.stream is not None:
        return False
    if any(s.index_of(arg.attribute) is not None for s in scope.sources):
        return False
    return scope.find_source(arg.attribute) is not None


def _nests_too_deeply(c: Compiled) -> bool:
    """Whether the generated code nests brackets deeper than Python's parser allows (with
    room left for the operator code wrapped around it)."""
    for code in (c.fast, c.safe):
        if len(code) <= MAX_CODE_NESTING:
            continue
        depth = 0
        for bracket in _BRACKET.findall(_STRING_LITERAL.sub("", code)):
            depth += 1 if bracket in "([{" else -1
            if depth > MAX_CODE_NESTING:
                return True
    return False


def _fold(steps: list[Callable[[Any, Any], Any]]) -> Callable[..., Any]:
    """`fold(a, b, c)` is `steps[1](steps[0](a, b), c)`: a long arithmetic chain in one call."""

    def fold(first: Any, *operands: Any) -> Any:
        acc = first
        for step, operand in zip(steps, operands, strict=True):
            acc = step(acc, operand)
        return acc

    return fold


def _comparison_problem(op: str, lt: AttrType, rt: AttrType) -> str | None:
    """Which type pairs Siddhi can compare (numbers with numbers, strings and bools
    with their own kind using ==/!=; objects never)."""
    if lt in NUMERIC_TYPES and rt in NUMERIC_TYPES:
        return None
    if op in ("==", "!="):
        if AttrType.OBJECT in (lt, rt):
            return f"an object cannot be compared with '{op}'"
        if lt == rt:
            return None
        return f"{lt} cannot be compared with {rt}"
    for side in (lt, rt):
        if side not in NUMERIC_TYPES:
            return f"{side} cannot be compared with '{op}'; only numbers can"
    return None


def _suggest(name: str, candidates: list[str]) -> str | None:
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def suggest(name: str, candidates: list[str]) -> str | None:
    return _suggest(name, candidates)
