"""Compile the condition of `#window.expression(...)` / `#window.expressionBatch(...)`.

The text is a SiddhiQL expression over the event (its attributes unqualified or with the
stream's name), `first` and `last` (the window's oldest and newest events) and aggregates.
Each aggregate becomes a small function that adds, removes or resets according to the
kind of evaluation and returns its value, called inline so the condition's `and`/`or`
short-circuit reaches the same aggregates Siddhi's executors do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.compiler.parser import Parser
from engine.compiler.tokens import tokenize
from engine.errors import QueryError
from engine.events import CURRENT, EXPIRED
from engine.plan.aggregates import AGGREGATE_NAMES, aggregate_code
from engine.plan.expressions import Compiled, CompileErrors, ExprContext, ExpressionCompiler, PlanError
from engine.plan.scope import Scope, Source
from engine.query.expressions import FunctionCall
from engine.runtime.aggregators import OBJECT_AGGREGATORS
from engine.runtime.windows.expression import ConditionSource, WindowCondition
from engine.types import AttrType

CONDITION_WINDOWS = frozenset({"expression", "expressionbatch"})


def condition_source(
    window: str, call: FunctionCall, first: Any, scope: Scope, comp: ExpressionCompiler
) -> ConditionSource:
    """The window's first argument as a ConditionSource: a constant text is compiled now
    (a mistake in it is a QueryError at the argument), an attribute when it changes."""
    own = scope.sources[0]

    def compile_text(text: str) -> WindowCondition:
        return compile_condition(text, own, comp.ctx)

    if not callable(first):
        try:
            return ConditionSource(compile_text(str(first)))
        except ValueError as e:
            comp.error(f"{window} window: expression '{first}': {e}", call.args[0].span)
            raise PlanError from e
    return ConditionSource(None, first, compile_text)


def compile_condition(text: str, own: Source, base: ExprContext) -> WindowCondition:
    """Compile `text` against the stream `own`; raises ValueError naming the problem."""
    try:
        parser = Parser(tokenize(text), text)
        expr = parser.expression()
        if not parser.at_eof():
            parser.fail("unexpected text after the expression")
    except QueryError as e:
        raise ValueError(_first_problem(e)) from e
    errors = CompileErrors()
    ctx = ExprContext(
        errors,
        base.namespace,
        table_lookup=base.table_lookup,
        function_registry=base.function_registry,
        script_functions=base.script_functions,
        counter=base.counter,
    )
    comp = ExpressionCompiler(ctx)
    me = Source(own.names, own.attributes, "r", stream=own.stream, ts="t")
    scope = Scope(
        [
            me,
            Source(("first",), own.attributes, "f", ts="ft"),
            Source(("last",), own.attributes, "l", ts="lt"),
        ],
        event_ts="t",
        default_source=me,
    )
    helpers: list[str] = []
    init: list[str] = []
    ctx.aggregate_hook = _aggregate_hook(comp, helpers, init)
    result = comp.compile(expr, scope)
    if errors:
        d = errors.items[0]
        msg = f"{d.message} (at column {d.col})"
        raise ValueError(msg)
    if result.type is not AttrType.BOOL:
        msg = f"the expression must be a bool condition, found {result.type}"
        raise ValueError(msg)
    cond = comp.as_bool(result)
    source = "\n\n".join([*helpers, f"def _condition(st, k, t, r, ft, f, lt, l):\n    return {cond.safe}"])
    ns = dict(base.namespace)
    ns.update(OBJECT_AGGREGATORS)
    exec(compile(source, f"<window expression {text!r}>", "exec"), ns)  # noqa: S102 - generated
    new_state: Callable[[], list[Any]] = eval("lambda: [" + ", ".join(init) + "]", ns)  # noqa: S307
    return WindowCondition(text, ns["_condition"], new_state)


def _aggregate_hook(
    comp: ExpressionCompiler, helpers: list[str], init: list[str]
) -> Callable[[FunctionCall, Scope], Compiled | None]:
    def hook(call: FunctionCall, scope: Scope) -> Compiled | None:
        if call.namespace is not None or call.name not in AGGREGATE_NAMES:
            return None
        args = [comp.compile(a, scope) for a in call.args]
        code = aggregate_code(call.name, [a.type for a in args])
        if isinstance(code, str):
            return comp.error(code, call.span)
        base, n = len(init), len(code.init)
        init.extend(code.init)
        name = f"_wagg{len(helpers)}"
        reset = f"st[{base}:{base + n}] = [{', '.join(code.init)}]"
        helpers.append(
            f"def {name}(st, k, v):\n    b = {base}\n"
            f"    if k == {CURRENT}:\n{_indent(code.add, 8)}\n"
            f"    elif k == {EXPIRED}:\n{_indent(code.remove, 8)}\n"
            f"    else:\n        {reset}\n"
            f"    return {code.value}"
        )
        arg = args[0].safe if args else "None"
        value = f"{name}(st, k, {arg})"
        return Compiled(value, value, code.kind)

    return hook


def _indent(code: str, n: int) -> str:
    return "\n".join(" " * n + line for line in code.splitlines())


def _first_problem(e: QueryError) -> str:
    d = e.errors[0]
    return f"{d.message} (at column {d.col})"
