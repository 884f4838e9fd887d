"""The `str:`, `time:`, `math:` and `regex:` functions WSO2 shipped with CEP 4, SP 4 and SI
(siddhi-execution-string, -time, -math and -regex): parameter checks and result types as the
extensions' `init`, run-time behaviour in engine.runtime.extensions. Dates are UTC."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.plan.expressions import Compiled, ExpressionCompiler
from engine.plan.function_registry import Emit, FunctionRegistry
from engine.query.expressions import FunctionCall
from engine.runtime import extensions as ext
from engine.runtime import java_dates
from engine.types import NUMERIC_TYPES, AttrType

if TYPE_CHECKING:
    from engine.plan.scope import Scope

_S = AttrType.STRING
_FLOATING = frozenset({AttrType.FLOAT, AttrType.DOUBLE})
_INTEGRAL = frozenset({AttrType.INT, AttrType.LONG})


def _none(kind: AttrType) -> Compiled:
    return Compiled("None", "None", kind)


def _call(comp: ExpressionCompiler, fn: Callable[..., Any], args: list[str], kind: AttrType) -> Compiled:
    name = comp.ctx.bind("ext", fn)
    code = f"{name}({', '.join(args)})"
    if kind is AttrType.BOOL:
        code = f"({code} is True)"
        return Compiled(code, code, kind, may_be_null=False)
    return Compiled(code, code, kind)


def _count(comp: ExpressionCompiler, call: FunctionCall, n: int, allowed: tuple[int, ...]) -> bool:
    if n in allowed:
        return True
    if len(allowed) == 1:
        want = str(allowed[0])
    else:
        want = ", ".join(str(a) for a in allowed[:-1]) + f" or {allowed[-1]}"
    comp.error(f"{call.qualified_name}() takes {want} arguments, got {n}", call.span)
    return False


def _type(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], i: int, allowed: frozenset[AttrType]
) -> bool:
    a = args[i]
    if a.const and a.value is None:
        return True
    if a.type in allowed:
        return True
    want = " or ".join(sorted(t.value for t in allowed))
    ordinal = ("first", "second", "third", "fourth")[i] if i < 4 else f"#{i + 1}"
    comp.error(
        f"the {ordinal} argument of {call.qualified_name}() must be {want}, found {a.type}", call.args[i].span
    )
    return False


def _const_text(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], i: int) -> str | None:
    a = args[i]
    if not (a.const and isinstance(a.value, str)):
        comp.error(f"{call.qualified_name}() takes a constant string here", call.args[i].span)
        return None
    return a.value


def _unit(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], i: int, units: tuple[str, ...]
) -> str | None:
    text = _const_text(comp, call, args, i)
    if text is None:
        return None
    unit = text.upper()
    if unit not in units:
        comp.error(
            f"unknown unit '{text}' in {call.qualified_name}()",
            call.args[i].span,
            hint="use " + ", ".join(u.lower() for u in units),
        )
        return None
    return unit


def _pattern_ok(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], i: int) -> bool:
    a = args[i]
    if a.const and isinstance(a.value, str):
        problem = java_dates.check(a.value)
        if problem is not None:
            comp.error(problem, call.args[i].span)
            return False
    return True


# ---- str: ---------------------------------------------------------------------------


def _str_concat(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if len(args) < 2:
        comp.error(f"str:concat() takes at least 2 arguments, got {len(args)}", call.span)
        return _none(_S)
    code = f"{comp.ctx.bind('ext', ext.str_concat)}({', '.join(a.safe for a in args)})"
    return Compiled(code, code, _S, may_be_null=False)


def _str_unary(fn: Callable[..., Any], kind: AttrType) -> Emit:
    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), (1,)) or not _type(comp, call, args, 0, frozenset({_S})):
            return _none(kind)
        return _call(comp, fn, [args[0].safe], kind)

    return emit


def _str_binary(fn: Callable[..., Any], second: AttrType, kind: AttrType) -> Emit:
    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if (
            not _count(comp, call, len(args), (2,))
            or not _type(comp, call, args, 0, frozenset({_S}))
            or not _type(comp, call, args, 1, frozenset({second}))
        ):
            return _none(kind)
        return _call(comp, fn, [args[0].safe, args[1].safe], kind)

    return emit


def _str_substr(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if not _count(comp, call, len(args), (2, 3)) or not _type(comp, call, args, 0, frozenset({_S})):
        return _none(_S)
    if not _type(comp, call, args, 1, frozenset({_S, AttrType.INT})):
        return _none(_S)
    if len(args) == 3 and not _type(comp, call, args, 2, frozenset({AttrType.INT})):
        return _none(_S)
    if args[1].const and isinstance(args[1].value, str):
        try:
            ext.java_regex(args[1].value)
        except Exception as exc:  # re.error: the message says where
            comp.error(f"str:substr(): bad regular expression: {exc}", call.args[1].span)
            return _none(_S)
    third = args[2].safe if len(args) == 3 else "None"
    return _call(comp, ext.str_substr, [args[0].safe, args[1].safe, third, str(len(args) == 3)], _S)


# ---- math: --------------------------------------------------------------------------


def _math_unary(fn: Callable[..., Any], allowed: frozenset[AttrType], kind: AttrType | None) -> Emit:
    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), (1,)) or not _type(comp, call, args, 0, allowed):
            return _none(kind or AttrType.LONG)
        # math:round: int for a float, long for a double (Math.round's overloads)
        result = kind or (AttrType.INT if args[0].type is AttrType.FLOAT else AttrType.LONG)
        return _call(comp, fn, [args[0].safe], result)

    return emit


def _math_power(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
    if (
        not _count(comp, call, len(args), (2,))
        or not _type(comp, call, args, 0, NUMERIC_TYPES)
        or not _type(comp, call, args, 1, NUMERIC_TYPES)
    ):
        return _none(AttrType.DOUBLE)
    return _call(comp, ext.math_power, [args[0].safe, args[1].safe], AttrType.DOUBLE)


# ---- time: --------------------------------------------------------------------------


def _time_extract(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    """`extract(ts long, unit[, locale])`, `extract(unit, date[, format[, locale]])` (the
    default format `yyyy-MM-dd HH:mm:ss.SSS`)."""
    if not _count(comp, call, len(args), (2, 3, 4)):
        return _none(AttrType.INT)
    if args[0].type is AttrType.LONG and len(args) in (2, 3):
        unit = _unit(comp, call, args, 1, ext.TIME_UNITS)
        if unit is None:
            return _none(AttrType.INT)
        return _call(comp, ext.time_extract_ms, [args[0].safe, repr(unit)], AttrType.INT)
    unit = _unit(comp, call, args, 0, ext.TIME_UNITS)
    if unit is None or not _type(comp, call, args, 1, frozenset({_S})):
        return _none(AttrType.INT)
    if len(args) >= 3 and not (
        _type(comp, call, args, 2, frozenset({_S})) and _pattern_ok(comp, call, args, 2)
    ):
        return _none(AttrType.INT)
    fmt = args[2].safe if len(args) >= 3 else repr(ext.DEFAULT_DATE_FORMAT)
    return _call(comp, ext.time_extract_text, [args[1].safe, fmt, repr(unit)], AttrType.INT)


def _time_timestamp(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    """`timestampInMilliseconds()` (the plan's clock), `(date)`, `(date, format)`."""
    if not _count(comp, call, len(args), (0, 1, 2)):
        return _none(AttrType.LONG)
    if not args:
        return Compiled("_now()", "_now()", AttrType.LONG, may_be_null=False)
    if not _type(comp, call, args, 0, frozenset({_S})):
        return _none(AttrType.LONG)
    if len(args) == 2 and not (
        _type(comp, call, args, 1, frozenset({_S})) and _pattern_ok(comp, call, args, 1)
    ):
        return _none(AttrType.LONG)
    fmt = args[1].safe if len(args) == 2 else repr(ext.DEFAULT_DATE_FORMAT)
    return _call(comp, ext.time_parse, [args[0].safe, fmt], AttrType.LONG)


def _time_date_format(
    comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope
) -> Compiled:
    """`dateFormat(ts long, target)`, `dateFormat(date, target[, source])`."""
    if not _count(comp, call, len(args), (2, 3)):
        return _none(_S)
    if not (_type(comp, call, args, 1, frozenset({_S})) and _pattern_ok(comp, call, args, 1)):
        return _none(_S)
    if args[0].type is AttrType.LONG and len(args) == 2:
        return _call(comp, ext.time_format_ms, [args[0].safe, args[1].safe], _S)
    if not _type(comp, call, args, 0, frozenset({_S})):
        return _none(_S)
    if len(args) == 3 and not (
        _type(comp, call, args, 2, frozenset({_S})) and _pattern_ok(comp, call, args, 2)
    ):
        return _none(_S)
    source = args[2].safe if len(args) == 3 else repr(ext.DEFAULT_DATE_FORMAT)
    return _call(comp, ext.time_reformat, [args[0].safe, args[1].safe, source], _S)


_ADD_UNITS = ("YEAR", "MONTH", "QUARTER", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND")


def _time_add(sign: int) -> Emit:
    """`dateSub(ts long, n, unit)` (the result's millis as a string), `dateSub(date, n, unit
    [, format])`; likewise dateAdd."""

    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), (3, 4)) or not _type(comp, call, args, 1, _INTEGRAL):
            return _none(_S)
        unit = _unit(comp, call, args, 2, _ADD_UNITS)
        if unit is None:
            return _none(_S)
        if args[0].type is AttrType.LONG and len(args) == 3:
            return _call(comp, ext.time_add_ms, [args[0].safe, args[1].safe, repr(unit), str(sign)], _S)
        if not _type(comp, call, args, 0, frozenset({_S})):
            return _none(_S)
        if len(args) == 4 and not (
            _type(comp, call, args, 3, frozenset({_S})) and _pattern_ok(comp, call, args, 3)
        ):
            return _none(_S)
        fmt = args[3].safe if len(args) == 4 else repr(ext.DEFAULT_DATE_FORMAT)
        return _call(comp, ext.time_add_text, [args[0].safe, args[1].safe, repr(unit), fmt, str(sign)], _S)

    return emit


def _time_now_text(pattern: str, with_format: bool = False) -> Emit:
    """currentDate() `yyyy-MM-dd`, currentTime() `HH:mm:ss`, currentTimestamp() and
    utcTimestamp() `yyyy-MM-dd HH:mm:ss`, at the plan's clock."""

    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), (0, 1) if with_format else (0,)):
            return _none(_S)
        fmt = repr(pattern)
        if args:
            if not (_type(comp, call, args, 0, frozenset({_S})) and _pattern_ok(comp, call, args, 0)):
                return _none(_S)
            fmt = args[0].safe
        return _call(comp, ext.time_format_ms, ["_now()", fmt], _S)

    return emit


# ---- regex: -------------------------------------------------------------------------


def _regex(fn: Callable[..., Any], lo: int, hi: int, kind: AttrType) -> Emit:
    """`regex:matches(regex, s)`, `lookingAt(regex, s)`, `find(regex, s[, start])`,
    `group(regex, s, group)`: a regex first, the text second, an int third."""

    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), tuple(range(lo, hi + 1))):
            return _none(kind)
        if not (_type(comp, call, args, 0, frozenset({_S})) and _type(comp, call, args, 1, frozenset({_S}))):
            return _none(kind)
        if len(args) == 3 and not _type(comp, call, args, 2, frozenset({AttrType.INT})):
            return _none(kind)
        if args[0].const and isinstance(args[0].value, str):
            try:
                ext.java_regex(args[0].value)
            except Exception as exc:  # re.error: the message says where
                comp.error(f"{call.qualified_name}(): bad regular expression: {exc}", call.args[0].span)
                return _none(kind)
        return _call(comp, fn, [a.safe for a in args], kind)

    return emit


# ---- map: and list: -----------------------------------------------------------------

_O = AttrType.OBJECT


def _obj(
    fn: Callable[..., Any],
    counts: tuple[int, ...],
    kind: AttrType,
    first: frozenset[AttrType] | None = frozenset({_O}),
    even: bool = False,
) -> Emit:
    """A map:/list: function: `counts` the argument numbers it takes (() for any), `first`
    the types its first argument may have (None: any), `even` an even number of them."""

    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if counts and not _count(comp, call, len(args), counts):
            return _none(kind)
        if even and len(args) % 2:
            comp.error(
                f"{call.qualified_name}() takes key and value pairs, got {len(args)} arguments", call.span
            )
            return _none(kind)
        if first is not None and args and not _type(comp, call, args, 0, first):
            return _none(kind)
        return _call(comp, fn, [a.safe for a in args], kind)

    return emit


# ---- json: --------------------------------------------------------------------------


def _json(fn: Callable[..., Any], counts: tuple[int, ...], kind: AttrType) -> Emit:
    """A json: function of (json string or object, path, ...): a constant path is checked."""

    def emit(comp: ExpressionCompiler, call: FunctionCall, args: list[Compiled], scope: Scope) -> Compiled:
        if not _count(comp, call, len(args), counts):
            return _none(kind)
        if not _type(comp, call, args, 0, frozenset({_S, _O})):
            return _none(kind)
        if len(args) > 1:
            if not _type(comp, call, args, 1, frozenset({_S})):
                return _none(kind)
            if args[1].const and isinstance(args[1].value, str):
                try:
                    ext.json_path(args[1].value)
                except ValueError as exc:
                    comp.error(str(exc), call.args[1].span)
                    return _none(kind)
        return _call(comp, fn, [a.safe for a in args], kind)

    return emit


def register(reg: FunctionRegistry) -> None:
    reg.register("str:concat", _str_concat)
    reg.register("str:length", _str_unary(ext.str_length, AttrType.INT))
    reg.register("str:lower", _str_unary(ext.str_lower, _S))
    reg.register("str:upper", _str_unary(ext.str_upper, _S))
    reg.register("str:contains", _str_binary(ext.str_contains, _S, AttrType.BOOL))
    reg.register("str:charAt", _str_binary(ext.str_char_at, AttrType.INT, _S))
    reg.register("str:strcmp", _str_binary(ext.str_strcmp, _S, AttrType.INT))
    reg.register("str:substr", _str_substr)
    any_number = NUMERIC_TYPES
    reg.register("math:ceil", _math_unary(ext.math_ceil, _FLOATING, AttrType.DOUBLE))
    reg.register("math:floor", _math_unary(ext.math_floor, any_number, AttrType.DOUBLE))
    reg.register("math:round", _math_unary(ext.math_round, _FLOATING, None))
    reg.register("math:ln", _math_unary(ext.math_ln, any_number, AttrType.DOUBLE))
    reg.register("math:getExponent", _math_unary(ext.math_get_exponent, any_number, AttrType.INT))
    reg.register("math:parseLong", _math_unary(ext.math_parse_long, frozenset({_S}), AttrType.LONG))
    reg.register("math:power", _math_power)
    reg.register("regex:matches", _regex(ext.regex_matches, 2, 2, AttrType.BOOL))
    reg.register("regex:lookingAt", _regex(ext.regex_looking_at, 2, 2, AttrType.BOOL))
    reg.register("regex:find", _regex(ext.regex_find, 2, 3, AttrType.BOOL))
    reg.register("regex:group", _regex(ext.regex_group, 3, 3, _S))
    maps: list[tuple[str, Callable[..., Any], tuple[int, ...], AttrType]] = [
        ("put", ext.map_put, (3,), _O),
        ("putAll", ext.map_put_all, (2,), _O),
        ("get", ext.map_get, (2, 3), _O),
        ("containsKey", ext.map_contains_key, (2,), AttrType.BOOL),
        ("containsValue", ext.map_contains_value, (2,), AttrType.BOOL),
        ("isEmpty", ext.map_is_empty, (1,), AttrType.BOOL),
        ("keys", ext.map_keys, (1,), _O),
        ("values", ext.map_values, (1,), _O),
        ("size", ext.map_size, (1,), AttrType.INT),
        ("clone", ext.map_clone, (1,), _O),
        ("replace", ext.map_replace, (3,), _O),
        ("replaceAll", ext.map_replace_all, (2,), _O),
        ("remove", ext.map_remove, (), _O),
        ("clear", ext.map_clear, (1,), _O),
        ("toJSON", ext.map_to_json, (1,), _S),
    ]
    for name, fn, counts, kind in maps:
        reg.register(f"map:{name}", _obj(fn, counts, kind))
    reg.register("map:create", _obj(ext.map_create, (), _O, first=None, even=True))
    reg.register("map:createFromJSON", _obj(ext.map_create_from_json, (1,), _O, first=frozenset({_S})))
    reg.register("map:isMap", _obj(ext.map_is_map, (1,), AttrType.BOOL, first=None))
    lists: list[tuple[str, Callable[..., Any], tuple[int, ...], AttrType]] = [
        ("add", ext.list_add, (2, 3), _O),
        ("get", ext.list_get, (2,), _O),
        ("contains", ext.list_contains, (2,), AttrType.BOOL),
        ("isEmpty", ext.list_is_empty, (1,), AttrType.BOOL),
        ("remove", ext.list_remove, (2,), _O),
        ("size", ext.list_size, (1,), AttrType.INT),
        ("clone", ext.list_clone, (1,), _O),
    ]
    for name, fn, counts, kind in lists:
        reg.register(f"list:{name}", _obj(fn, counts, kind))
    reg.register("list:create", _obj(ext.list_create, (), _O, first=None))
    reg.register("list:isList", _obj(ext.list_is_list, (1,), AttrType.BOOL, first=None))
    jsons: list[tuple[str, Callable[..., Any], tuple[int, ...], AttrType]] = [
        ("getString", ext.json_get_string, (2,), _S),
        ("getInt", ext.json_get_int, (2,), AttrType.INT),
        ("getLong", ext.json_get_long, (2,), AttrType.LONG),
        ("getDouble", ext.json_get_double, (2,), AttrType.DOUBLE),
        ("getFloat", ext.json_get_float, (2,), AttrType.FLOAT),
        ("getBool", ext.json_get_bool, (2,), AttrType.BOOL),
        ("getObject", ext.json_get_object, (2,), _O),
        ("isExists", ext.json_is_exists, (2,), AttrType.BOOL),
        ("setElement", ext.json_set_element, (3, 4), _O),
    ]
    for name, fn, counts, kind in jsons:
        reg.register(f"json:{name}", _json(fn, counts, kind))
    reg.register("json:toString", _obj(ext.json_to_string, (1, 2), _S, first=None))
    reg.register("json:toObject", _obj(ext.json_to_object, (1,), _O, first=frozenset({_S})))
    reg.register("time:extract", _time_extract)
    reg.register("time:timestampInMilliseconds", _time_timestamp)
    reg.register("time:dateFormat", _time_date_format)
    reg.register("time:dateSub", _time_add(-1))
    reg.register("time:dateAdd", _time_add(1))
    reg.register("time:currentDate", _time_now_text("yyyy-MM-dd"))
    reg.register("time:currentTime", _time_now_text("HH:mm:ss"))
    reg.register("time:currentTimestamp", _time_now_text("yyyy-MM-dd HH:mm:ss"))
    reg.register("time:utcTimestamp", _time_now_text("yyyy-MM-dd HH:mm:ss", with_format=True))
