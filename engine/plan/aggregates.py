"""Attribute aggregators (sum, avg, count, min, max, ...) as code templates.

Each aggregator owns a few consecutive slots of a group's state list `st`. It provides
code to initialise, add a value, remove a value (an expired event leaving a window),
reset (a batch window's RESET) and read the current value. Simple aggregators keep
numbers in their slots; the others keep one small object (runtime/aggregators.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.types import NUMERIC_TYPES, AttrType

AGGREGATE_NAMES = frozenset(
    {"sum", "avg", "count", "distinctCount", "min", "max", "minForever", "maxForever", "stdDev",
     "and", "or", "unionSet"}
)  # fmt: skip


@dataclass(frozen=True)
class AggregateCode:
    kind: AttrType
    init: tuple[str, ...]  # initial value code of each slot
    add: str  # statements; `v` is the argument value (may be None), `b` the base slot
    remove: str
    value: str  # expression
    needs_arg: bool = True
    # statements adding many current events at once, the same result as `add` one by one:
    # `vs` is the list of argument values, `n` the number of events; None: no such shortcut
    bulk_add: str | None = None


# left-to-right addition from the current total, exactly as `st[b] += v` event by event
_BULK_SUM = (
    "if None in vs:\n    vs = [x for x in vs if x is not None]\n"
    "st[b] = _reduce(_add, vs, st[b])\nst[b+1] += len(vs)"
)


def _sum(t: AttrType) -> AggregateCode:
    integral = t in (AttrType.INT, AttrType.LONG)
    zero = "0" if integral else "0.0"
    return AggregateCode(
        AttrType.LONG if integral else AttrType.DOUBLE,
        (zero, "0"),
        "if v is not None:\n    st[b] += v\n    st[b+1] += 1",
        "if v is not None:\n    st[b] -= v\n    st[b+1] -= 1",
        "(st[b] if st[b+1] else None)",
        bulk_add=_BULK_SUM,
    )


def _avg(t: AttrType) -> AggregateCode:
    return AggregateCode(
        AttrType.DOUBLE,
        ("0.0", "0"),
        "if v is not None:\n    st[b] += v\n    st[b+1] += 1",
        "if v is not None:\n    st[b] -= v\n    st[b+1] -= 1",
        "(st[b] / st[b+1] if st[b+1] else None)",
        bulk_add=_BULK_SUM,
    )


def _count(t: AttrType | None) -> AggregateCode:
    # counts events, nulls included, as Siddhi does
    return AggregateCode(
        AttrType.LONG,
        ("0",),
        "st[b] += 1",
        "st[b] -= 1",
        "st[b]",
        needs_arg=False,
        bulk_add="st[b] += n",
    )


def _object(cls: str, kind: AttrType) -> AggregateCode:
    return AggregateCode(
        kind,
        (f"_agg_{cls}()",),
        "st[b].add(v)",
        "st[b].remove(v)",
        "st[b].value()",
    )


def _forever(which: str, t: AttrType) -> AggregateCode:
    op = ">" if which == "max" else "<"
    return AggregateCode(
        t,
        ("None",),
        f"if v is not None and (st[b] is None or v {op} st[b]):\n    st[b] = v",
        f"if v is not None and (st[b] is None or v {op} st[b]):\n    st[b] = v",
        "st[b]",
    )


def _bool_agg(which: str) -> AggregateCode:
    # slots: count of true, count of false
    value = "(st[b] > 0 and st[b+1] == 0)" if which == "and" else "(st[b] > 0)"
    return AggregateCode(
        AttrType.BOOL,
        ("0", "0"),
        "if v is not None:\n    if v:\n        st[b] += 1\n    else:\n        st[b+1] += 1",
        "if v is not None:\n    if v:\n        st[b] -= 1\n    else:\n        st[b+1] -= 1",
        value,
    )


def aggregate_code(name: str, arg_types: list[AttrType]) -> AggregateCode | str:
    """The code template for `name(args)`, or an error message."""
    n = len(arg_types)
    t = arg_types[0] if arg_types else None
    if name == "count":
        if n > 1:
            return "count() takes at most one argument"
        return _count(t)
    if n != 1:
        return f"{name}() takes exactly one argument, got {n}"
    assert t is not None
    if name in ("sum", "avg", "stdDev"):
        if t not in NUMERIC_TYPES:
            return f"{name}() needs a numeric argument, found {t}"
        if name == "sum":
            return _sum(t)
        if name == "avg":
            return _avg(t)
        return _object("stddev", AttrType.DOUBLE)
    if name in ("min", "max"):
        if t not in NUMERIC_TYPES:
            return f"{name}() needs a numeric argument, found {t}"
        return _object(name, t)
    if name in ("minForever", "maxForever"):
        if t not in NUMERIC_TYPES:
            return f"{name}() needs a numeric argument, found {t}"
        return _forever(name[:3], t)
    if name == "distinctCount":
        if t in (AttrType.BOOL, AttrType.OBJECT):
            return f"distinctCount() needs a number or string argument, found {t}"
        return _object("distinct", AttrType.LONG)
    if name in ("and", "or"):
        if t is not AttrType.BOOL:
            return f"{name}() needs a bool argument, found {t}"
        return _bool_agg(name)
    if name == "unionSet":
        if t is not AttrType.OBJECT:
            return "unionSet() needs a set argument (createSet(...))"
        return _object("union", AttrType.OBJECT)
    return f"unknown aggregate function {name}()"
