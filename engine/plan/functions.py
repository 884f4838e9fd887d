"""Built-in scalar functions: parameter checks, result types and code generation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.plan import ext_functions
from engine.plan.expressions import Compiled, ExpressionCompiler
from engine.plan.function_registry import Emit, FunctionRegistry
from engine.query.expressions import FunctionCall, IsNullStream, Variable
from engine.types import NUMERIC_TYPES, AttrType

if TYPE_CHECKING:
    from engine.plan.scope import Scope


def _c(fast: str, safe: str, kind: AttrType, may_be_null: bool = True) -> Compiled:
    return Compiled(fast, safe, kind, may_be_null=may_be_null)


def _arity(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], lo: int, hi: int | None
) -> bool:
    n = len(args)
    if n < lo or (hi is not None and n > hi):
        if hi == lo:
            want = f"{lo} argument{'s' if lo != 1 else ''}"
        elif hi is None:
            want = f"at least {lo} arguments"
        else:
            want = f"{lo} to {hi} arguments"
        comp.error(f"{call.name}() takes {want}, got {n}", call.span)
        return False
    return True


def _coalesce(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 1, None):
        return comp.error("", call.span) if False else _c("None", "None", AttrType.OBJECT)
    kinds = {a.type for a in args if not (a.const and a.value is None)}
    if len(kinds) > 1:
        return comp.error(
            f"coalesce() arguments must all have one type, found {', '.join(sorted(str(k) for k in kinds))}",
            call.span,
        )
    kind = kinds.pop() if kinds else AttrType.OBJECT
    if kind is AttrType.BOOL:
        return _bool_result(args, "_coalesce")
    if len(args) == 1:
        return _c(args[0].fast, args[0].safe, kind)
    fast = "_coalesce(" + ", ".join(a.fast for a in args) + ")"
    safe = "_coalesce(" + ", ".join(a.safe for a in args) + ")"
    if len(args) == 2:
        fast = f"(_v if (_v := {args[0].safe}) is not None else {args[1].fast})"
        safe = f"(_v if (_v := {args[0].safe}) is not None else {args[1].safe})"
    return _c(fast, safe, kind)


def _bool_result(args: list[Compiled], fn: str) -> Compiled:
    """Siddhi turns a null from a bool-returning function into false."""
    code = f"({fn}(" + ", ".join(a.safe for a in args) + ") is True)"
    return _c(code, code, AttrType.BOOL, may_be_null=False)


def _if_then_else(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    if not _arity(comp, call, args, 3, 3):
        return _c("None", "None", AttrType.OBJECT)
    cond, a, b = args
    if cond.type is not AttrType.BOOL:
        return comp.error("the first argument of ifThenElse() must be a bool condition", call.args[0].span)
    if a.type != b.type and not (a.const and a.value is None) and not (b.const and b.value is None):
        return comp.error(f"ifThenElse() branches must have one type, found {a.type} and {b.type}", call.span)
    kind = a.type if not (a.const and a.value is None) else b.type
    cb = comp.as_bool(cond)
    if kind is AttrType.BOOL:
        code = f"(({a.safe} if {cb.safe} else {b.safe}) is True)"
        return _c(code, code, kind, may_be_null=False)
    return _c(f"({a.fast} if {cb.fast} else {b.fast})", f"({a.safe} if {cb.safe} else {b.safe})", kind)


_TYPE_NAMES = {t.value: t for t in AttrType}


def _target_type(comp: ExpressionCompiler, call: FunctionCall, arg: Compiled, fname: str) -> AttrType | None:
    if not (arg.const and isinstance(arg.value, str)):
        comp.error(
            f"the second argument of {fname}() must be a constant type name such as 'double'",
            call.args[1].span,
        )
        return None
    kind = _TYPE_NAMES.get(arg.value.lower())
    if kind is None:
        comp.error(
            f"unknown type '{arg.value}' in {fname}()",
            call.args[1].span,
            hint="use string, int, long, float, double, bool or object",
        )
    return kind


def _cast(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 2, 2):
        return _c("None", "None", AttrType.OBJECT)
    kind = _target_type(comp, call, args[1], "cast")
    if kind is None:
        return _c("None", "None", AttrType.OBJECT)
    name = comp.ctx.bind("cast", kind)
    code = f"_cast({args[0].safe}, {name})"
    if kind is AttrType.BOOL:
        code = f"({code} is True)"
        return _c(code, code, kind, may_be_null=False)
    return _c(code, code, kind)


def _convert(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 2, 2):
        return _c("None", "None", AttrType.OBJECT)
    kind = _target_type(comp, call, args[1], "convert")
    if kind is None:
        return _c("None", "None", AttrType.OBJECT)
    if kind is AttrType.OBJECT:
        return comp.error("convert() cannot convert to object", call.args[1].span)
    if args[0].type is AttrType.OBJECT and kind is not AttrType.STRING:
        return comp.error("convert() can turn an object only into a string", call.args[1].span)
    src = comp.ctx.bind("ty", args[0].type)
    dst = comp.ctx.bind("ty", kind)
    code = f"_convert({args[0].safe}, {src}, {dst})"
    if kind is AttrType.BOOL:
        code = f"({code} is True)"
        return _c(code, code, kind, may_be_null=False)
    return _c(code, code, kind)


def _instance_of(kind: AttrType) -> Emit:
    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _arity(comp, call, args, 1, 1):
            return _c("None", "None", AttrType.BOOL)
        a = args[0]
        if a.type is not AttrType.OBJECT:
            if a.type is kind:
                code = f"({a.safe} is not None)"
            else:
                code = "False"
        else:
            name = comp.ctx.bind("ty", kind)
            code = f"_instance_of({a.safe}, {name})"
        return _c(code, code, AttrType.BOOL, may_be_null=False)

    return emit


def _default(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 2, 2):
        return _c("None", "None", AttrType.OBJECT)
    a, d = args
    if not d.const:
        return comp.error("default() takes a constant as its second argument", call.args[1].span)
    if a.type != d.type:
        return comp.error(
            f"default() value must have the attribute's type {a.type}, found {d.type}", call.args[1].span
        )
    if a.type is AttrType.BOOL:
        code = f"((_v if (_v := {a.safe}) is not None else {d.safe}) is True)"
        return _c(code, code, AttrType.BOOL, may_be_null=False)
    return _c(
        f"(_v if (_v := {a.safe}) is not None else {d.fast})",
        f"(_v if (_v := {a.safe}) is not None else {d.safe})",
        a.type,
    )


def _extreme(fn: str) -> Emit:
    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _arity(comp, call, args, 1, None):
            return _c("None", "None", AttrType.OBJECT)
        kind = args[0].type
        for a, node in zip(args, call.args, strict=True):
            if a.type not in NUMERIC_TYPES:
                return comp.error(f"{call.name}() takes numeric arguments, found {a.type}", node.span)
            if a.type != kind:
                return comp.error(
                    f"{call.name}() arguments must all have one type, found {kind} and {a.type}", node.span
                )
        if len(args) == 1:
            return _c(args[0].fast, args[0].safe, kind)
        joined = ", ".join(a.safe for a in args)
        code = f"_{fn}_of({comp.ctx.bind('ty', kind)}, {joined})"
        return _c(code, code, kind, may_be_null=False)

    return emit


def _uuid(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 0, 0):
        return _c("None", "None", AttrType.STRING)
    return _c("_new_uuid()", "_new_uuid()", AttrType.STRING, may_be_null=False)


def _current_time(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    if not _arity(comp, call, args, 0, 0):
        return _c("None", "None", AttrType.LONG)
    return _c("_now()", "_now()", AttrType.LONG, may_be_null=False)


def _event_timestamp(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    if not _arity(comp, call, args, 0, 1):
        return _c("None", "None", AttrType.LONG)
    if args:
        arg = call.args[0]
        ref = arg.attribute if isinstance(arg, Variable) and arg.stream is None else None
        ref = arg.stream if isinstance(arg, IsNullStream) else ref
        src = scope.find_source(ref) if ref else None
        if src is not None and src.ts is not None:
            return _c(src.ts, src.ts, AttrType.LONG, may_be_null=False)
        if src is None or src.indexed_row is None:
            return comp.error("eventTimestamp() takes a pattern event reference such as e1", arg.span)
        row_code = src.indexed_row(getattr(arg, "index", None))
        ts_code = row_code.replace("_pev(", "_pts(", 1) if row_code.startswith("_pev(") else "p[-1]"
        return _c(ts_code, ts_code, AttrType.LONG)
    return _c(scope.event_ts, scope.event_ts, AttrType.LONG, may_be_null=False)


def _size_of_set(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    if not _arity(comp, call, args, 1, 1):
        return _c("None", "None", AttrType.INT)
    code = f"_size_of_set({args[0].safe})"
    return _c(code, code, AttrType.INT, may_be_null=False)


def _create_set(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _arity(comp, call, args, 1, 1):
        return _c("None", "None", AttrType.OBJECT)
    if args[0].type is AttrType.OBJECT:
        return comp.error("createSet() takes a string, number or bool, not an object", call.args[0].span)
    code = f"_create_set({args[0].safe})"
    return _c(code, code, AttrType.OBJECT, may_be_null=False)


def default_registry() -> FunctionRegistry:
    reg = FunctionRegistry()
    reg.register("coalesce", _coalesce)
    reg.register("ifThenElse", _if_then_else)
    reg.register("cast", _cast)
    reg.register("convert", _convert)
    for kind, suffix in (
        (AttrType.BOOL, "Boolean"),
        (AttrType.DOUBLE, "Double"),
        (AttrType.FLOAT, "Float"),
        (AttrType.INT, "Integer"),
        (AttrType.LONG, "Long"),
        (AttrType.STRING, "String"),
    ):
        reg.register(f"instanceOf{suffix}", _instance_of(kind))
    reg.register("default", _default)
    reg.register("maximum", _extreme("max"))
    reg.register("minimum", _extreme("min"))
    reg.register("UUID", _uuid)
    reg.register("currentTimeMillis", _current_time)
    reg.register("eventTimestamp", _event_timestamp)
    reg.register("sizeOfSet", _size_of_set)
    reg.register("createSet", _create_set)
    ext_functions.register(reg)
    return reg
