"""Check a `#window.name(args)` against the window's signatures and prepare its arguments:
constants become values, attribute parameters become row accessor functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.plan.expressions import ExpressionCompiler, PlanError, suggest
from engine.plan.scope import Scope
from engine.plan.window_conditions import CONDITION_WINDOWS, condition_source
from engine.query.expressions import Constant, FunctionCall, Span, Variable
from engine.runtime.windows import REGISTRY, WindowSpec
from engine.runtime.windows.base import Param, Window, WindowContext
from engine.types import AttrType


@dataclass
class WindowPlan:
    spec: WindowSpec
    args: list[Any]

    def build(self, ctx: WindowContext) -> Window:
        return self.spec.factory(ctx, self.args)


def _window_name(call: FunctionCall) -> str:
    # `#window.unique:length(...)` is the unique extension's length window
    if call.namespace:
        return f"{call.namespace}:{call.name}".lower()
    return call.name.lower()


def plan_window(call: FunctionCall, scope: Scope, comp: ExpressionCompiler) -> WindowPlan:
    spec = REGISTRY.get(_window_name(call))
    if spec is None:
        known = sorted({s.name for s in REGISTRY.values()})
        comp.error(
            f"unknown window '{call.qualified_name}'",
            call.span,
            hint=suggest(call.qualified_name, known) or f"known windows: {', '.join(known)}",
        )
        raise PlanError
    compiled = [comp.compile(a, scope) for a in call.args]
    if comp.ctx.errors:
        raise PlanError
    problems: list[tuple[str, Span]] = []
    arity_problems: list[tuple[str, Span]] = []
    for signature in spec.signatures:
        arity = _arity_problem(signature, compiled)
        if arity is not None:
            arity_problems.append((arity, call.span))
            continue
        problem = _match(signature, call, compiled)
        if problem is None:
            args = _prepare(signature, call, compiled, comp)
            if spec.name.lower() in CONDITION_WINDOWS:
                args[0] = condition_source(spec.name, call, args[0], scope, comp)
            bad = spec.check(args, [c.type for c in compiled]) if spec.check is not None else None
            if bad:
                comp.error(f"{call.name} window: {bad}", call.span, hint=_usage(spec))
                raise PlanError
            return WindowPlan(spec, args)
        problems.append(problem)
    message, span = (problems or arity_problems)[0]
    comp.error(f"{call.name} window: {message}", span, hint=_usage(spec))
    raise PlanError


def _usage(spec: WindowSpec) -> str:
    if spec.description:
        return f"usage: {spec.description}"
    forms = []
    for sig in spec.signatures:
        parts = []
        for p in sig:
            types = "|".join(str(t) for t in p.types)
            text = f"{p.name} <{types}>"
            parts.append(f"[{text}]" if p.optional else text)
        forms.append(f"{spec.name}({', '.join(parts)})")
    return "usage: " + " or ".join(forms)


def _arity_problem(signature: tuple[Param, ...], compiled: list[Any]) -> str | None:
    required = sum(1 for p in signature if not p.optional)
    if required <= len(compiled) <= len(signature):
        return None
    if required == len(signature):
        return f"expects {required} parameter{'s' if required != 1 else ''}, got {len(compiled)}"
    return f"expects {required} to {len(signature)} parameters, got {len(compiled)}"


def _match(signature: tuple[Param, ...], call: FunctionCall, compiled: list[Any]) -> tuple[str, Span] | None:
    """What keeps the arguments from fitting the signature, and where. A parameter that is
    neither an attribute nor dynamic must be a literal, as Siddhi's InputParameterValidator
    requires a ConstantExpressionExecutor: `lengthBatch(1/2)` is refused, not folded."""
    for i, (param, arg) in enumerate(zip(signature, compiled, strict=False)):
        node = call.args[i]
        if param.attribute and arg.const and not param.dynamic:
            return f"parameter {i + 1} ({param.name}) must be an attribute", node.span
        if not param.attribute and not param.dynamic and not isinstance(node, Constant):
            found = "an expression" if arg.const else "a value read from each event"
            return f"parameter {i + 1} ({param.name}) must be a constant, found {found}", node.span
        if arg.type not in param.types and not (arg.const and arg.value is None):
            types = " or ".join(str(t) for t in param.types)
            return f"parameter {i + 1} ({param.name}) must be {types}, found {arg.type}", node.span
    return None


def _prepare(
    signature: tuple[Param, ...], call: FunctionCall, compiled: list[Any], comp: ExpressionCompiler
) -> list[Any]:
    args: list[Any] = []
    for arg in compiled:
        if arg.const:
            args.append(arg.value)
        else:
            args.append(_accessor(arg.safe, comp))
    return args


def _accessor(code: str, comp: ExpressionCompiler) -> Callable[[tuple[Any, ...]], Any]:
    fn = eval(f"lambda r: {code}", comp.ctx.namespace)  # noqa: S307 - generated code
    fn.code = code
    return fn  # type: ignore[no-any-return]


def is_attribute(expr: Any) -> bool:
    return isinstance(expr, Variable)


def constant_value(expr: Any) -> Any:
    return expr.value if isinstance(expr, Constant) else None


__all__ = ["WindowPlan", "plan_window", "AttrType"]
