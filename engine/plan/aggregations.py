"""Plan `define aggregation A from S[filter] select ... group by ... aggregate [by ts]
every sec ... year`: check it, and generate the code that folds a chunk into partial
states per (root bucket, group key), merges states, and reads a state's values.

Each selected attribute is an incremental aggregate (sum, count, avg, min, max,
distinctCount) at its top, or a plain expression, which keeps the value of the bucket's
last event (by `aggregate by` timestamp when there is one), as Siddhi does. The
aggregation's rows are (AGG_TIMESTAMP, selected...). `aggregate by` reads a long (epoch
ms) or a string timestamp; `@purge` (on by default, as in Siddhi) drops old buckets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import ProcessingError
from engine.plan.aggregates import AGGREGATE_NAMES
from engine.plan.context import PlanContext, StreamInfo
from engine.plan.expressions import Compiled, ExpressionCompiler
from engine.plan.query import compile_filter_condition
from engine.plan.scope import Scope, Source
from engine.query.definitions import AggregationDefinition, find_annotation
from engine.query.expressions import NO_SPAN, Expr, FunctionCall, Variable, walk
from engine.query.queries import OutputAttribute, Selector, SingleInput, StreamFunction
from engine.runtime.aggregation import Aggregation, AggregationError, Purge
from engine.runtime.timebuckets import (
    DURATIONS,
    bucket_start,
    duration_of,
    parse_timestamp,
    shift,
    within_range,
)
from engine.types import NUMERIC_TYPES, AttrType

INCREMENTAL = ("sum", "count", "avg", "min", "max", "distinctCount")
_FIXED = {"sec": 1000, "min": 60_000, "hour": 3_600_000, "day": 86_400_000}


@dataclass
class _Slots:
    """Generated code pieces, one set per selected attribute."""

    init: list[str] = field(default_factory=list)
    add: list[str] = field(default_factory=list)  # statements (fast form)
    add_safe: list[str] = field(default_factory=list)
    merge: list[str] = field(default_factory=list)
    value: list[str] = field(default_factory=list)
    dict_slots: list[int] = field(default_factory=list)
    # plain (non-aggregate) attributes: a value from one event, added by _last_values
    plain_add: list[str] = field(default_factory=list)
    plain_add_safe: list[str] = field(default_factory=list)
    plain_merge: list[str] = field(default_factory=list)


def durations_of(ctx: PlanContext, d: AggregationDefinition) -> list[str] | None:
    """`sec ... year` or `sec, min, hour` as canonical durations, ascending."""
    raw = d.durations
    names = raw[0::2]
    seps = set(raw[1::2])
    found: list[str] = []
    for n in names:
        c = duration_of(n)
        if c is None:
            ctx.errors.add(
                f"'{n}' is not an aggregation duration",
                d.span,
                hint="use sec, min, hour, day, month or year",
            )
            return None
        found.append(c)
    if "..." in seps:
        if len(names) != 2 or seps != {"..."}:
            ctx.errors.add("a duration range is 'every <from> ... <to>', e.g. 'every sec ... year'", d.span)
            return None
        lo, hi = DURATIONS.index(found[0]), DURATIONS.index(found[1])
        if lo > hi:
            ctx.errors.add(f"the range '{names[0]} ... {names[1]}' runs backwards", d.span)
            return None
        return list(DURATIONS[lo : hi + 1])
    if len(set(found)) != len(found):
        ctx.errors.add("a duration is listed twice after 'every'", d.span)
        return None
    return sorted(found, key=DURATIONS.index)


def plan_aggregation(ctx: PlanContext, d: AggregationDefinition) -> tuple[Aggregation, StreamInfo] | None:
    si = d.source
    sel = d.selector
    assert isinstance(si, SingleInput) and isinstance(sel, Selector)
    comp = ctx.compiler()
    errors_before = len(ctx.errors.items)
    info = ctx.streams.get(si.stream)
    if info is None or si.inner:
        hint = "an aggregation reads a stream; tables and windows are not aggregated"
        ctx.errors.add(f"'{si.stream}' is not a stream", si.stream_span, hint=hint)
        return None
    if si.window is not None or any(isinstance(h, StreamFunction) for h in si.handlers + si.post_handlers):
        ctx.errors.add(
            "an aggregation reads a stream with filters only, no window or stream function", si.span
        )
        return None
    durations = durations_of(ctx, d)
    if durations is None:
        return None
    source = Source((si.ref, si.stream), info.attributes, "r", stream=si.stream)
    scope = Scope([source], event_ts="t")
    cond = compile_filter_condition(comp, si.handlers + si.post_handlers, scope)
    ts_code: Compiled | None = None
    by = d.aggregate_by
    if isinstance(by, Variable):
        ts_code = comp.compile(by, scope)
        if not ts_code.failed and ts_code.type not in (AttrType.LONG, AttrType.STRING):
            comp.error(
                f"'aggregate by' needs a long (epoch ms) or string timestamp attribute, found {ts_code.type}",
                by.span,
                hint="a string timestamp is 'yyyy-MM-dd HH:mm:ss' (UTC) or 'yyyy-MM-dd HH:mm:ss +hh:mm'",
            )
    keys = [comp.compile(v, scope) for v in sel.group_by]
    if sel.having is not None or sel.order_by or sel.limit is not None or sel.offset is not None:
        comp.error("an aggregation's select takes no having, order by, limit or offset", sel.span)
    if sel.attributes is None:
        comp.error("an aggregation needs a select list: 'select *' is not aggregated", sel.span)
        return None
    slots = _Slots()
    names: list[str] = ["AGG_TIMESTAMP"]
    types: list[AttrType] = [AttrType.LONG]
    for oa in sel.attributes:
        if _names_the_bucket_start(oa, info.names):
            continue
        if oa.name in names:
            comp.error(f"the aggregation outputs '{oa.name}' twice", oa.span)
            continue
        kind = _attribute(comp, oa.expr, scope, slots)
        names.append(oa.name)
        types.append(kind)
    _last_values(slots, by_timestamp=ts_code is not None)
    buffer_size, ignore_older = _buffer(ctx, d)
    purge = _purge(ctx, d, durations)
    if len(ctx.errors.items) > errors_before:
        return None
    agg = Aggregation(
        d.name,
        durations,
        _accumulate(
            ctx, d.name, slots, keys, ts_code, cond, durations[0], buffer_size, ignore_older, fast=True
        ),
        _lambda(ctx, "lambda: [" + ", ".join(slots.init) + "]"),
        _function(ctx, "def merge(a, p):\n" + _body(slots.merge or ["pass"])),
        _lambda(ctx, "lambda st: (" + "".join(v + ", " for v in slots.value) + ")"),
        tuple(slots.dict_slots),
        purge,
        ctx.namespace["_now"],
    )
    safe = _accumulate(
        ctx, d.name, slots, keys, ts_code, cond, durations[0], buffer_size, ignore_older, fast=False
    )
    fast = agg.accumulate

    def accumulate(ts: list[int], rows: list[Any], a: Aggregation) -> Any:
        try:
            return fast(ts, rows, a)
        except (TypeError, ZeroDivisionError):
            return safe(ts, rows, a)

    agg.accumulate = accumulate
    return agg, StreamInfo(d.name, names, types, d.name_span, kind="aggregation")


def _names_the_bucket_start(oa: OutputAttribute, inputs: list[str]) -> bool:
    """`select AGG_TIMESTAMP, ...` in the definition, as the Siddhi 5 query guide's
    'Join (Aggregation)' example writes it: the bucket start, which is always the
    aggregation's first attribute, so the item adds nothing. (Siddhi's parser would look
    AGG_TIMESTAMP up in the input stream; an input attribute of that name is still taken
    as one, and then clashes with the bucket start.)"""
    e = oa.expr
    return (
        isinstance(e, Variable)
        and e.attribute == "AGG_TIMESTAMP"
        and e.stream is None
        and e.index is None
        and not e.inner
        and oa.name == "AGG_TIMESTAMP"
        and "AGG_TIMESTAMP" not in inputs
    )


_DAY = 86_400_000
# Siddhi's IncrementalDataPurger: (default retention, minimum retention) per duration, ms;
# None keeps every bucket. Months and years count 30 and 365 days, as Siddhi's times do.
_RETENTION: dict[str, tuple[int | None, int]] = {
    "sec": (120_000, 120_000),
    "min": (_DAY, 120 * 60_000),
    "hour": (30 * _DAY, 25 * 3_600_000),
    "day": (365 * _DAY, 32 * _DAY),
    "month": (None, 13 * 30 * _DAY),
    "year": (None, 0),
}
_PURGE_INTERVAL = 15 * 60_000


# Siddhi's normalizeDuration: the units of @purge times and the keys of @retentionPeriod
_UNITS = {
    "sec": "sec", "second": "sec", "seconds": "sec",
    "min": "min", "minute": "min", "minutes": "min",
    "h": "hour", "hour": "hour", "hours": "hour",
    "day": "day", "days": "day",
    "month": "month", "months": "month",
    "year": "year", "years": "year",
}  # fmt: skip
_UNIT_MS = {
    "sec": 1000,
    "min": 60_000,
    "hour": 3_600_000,
    "day": _DAY,
    "month": 30 * _DAY,
    "year": 365 * _DAY,
}
_AMOUNT = re.compile(r"^\s*(\d+)\s*([A-Za-z]+)\s*$")


def _time_ms(text: str) -> int | None:
    """'10 sec', '24 h', '1 year' as ms (a month is 30 days, a year 365, as in Siddhi's
    timeToLong); None when it is not one amount and unit."""
    m = _AMOUNT.match(text)
    unit = _UNITS.get(m.group(2).lower()) if m is not None else None
    if m is None or unit is None:
        return None
    return int(m.group(1)) * _UNIT_MS[unit]


def _purge(ctx: PlanContext, d: AggregationDefinition, durations: list[str]) -> Purge | None:
    """`@purge(enable='true', interval='10 sec', @retentionPeriod(sec='120 sec', ...,
    months='all'))`, with Siddhi's defaults: on, every 15 minutes, each duration kept as
    the Siddhi 5 guide's 'Named Aggregation' table says. `enable='false'` keeps all."""
    retention = {dur: _RETENTION[dur][0] for dur in durations}
    ann = find_annotation(d.annotations, "purge")
    if ann is None:
        return Purge(_PURGE_INTERVAL, retention)
    enable = (ann.get("enable") or "true").strip().lower()
    if enable not in ("true", "false"):
        ctx.errors.add(f"@purge enable takes 'true' or 'false', not '{enable}'", ann.span)
        return None
    if enable == "false":
        return None
    interval = _PURGE_INTERVAL
    raw = ann.get("interval")
    if raw is not None:
        found = _time_ms(raw)
        if not found:
            ctx.errors.add(f"@purge interval '{raw}' is not a time such as '10 sec'", ann.span)
            return None
        interval = found
    for nested in ann.annotations:
        if nested.key != "retentionperiod":
            ctx.errors.add(f"@purge takes @retentionPeriod(...), not @{nested.name}", nested.span)
            continue
        for el in nested.elements:
            dur = _UNITS.get((el.key or "").strip().lower())
            span = el.span if el.span is not NO_SPAN else nested.span
            if dur is None:
                ctx.errors.add(
                    f"@retentionPeriod names durations (sec=..., min=..., hours=...), not '{el.key}'", span
                )
                continue
            if dur not in retention:
                ctx.errors.add(
                    f"@retentionPeriod: aggregation '{d.name}' keeps no '{el.key}' buckets to purge "
                    f"(it aggregates {', '.join(durations)})",
                    span,
                )
                continue
            if el.value.strip().lower() == "all":
                retention[dur] = None
                continue
            keep = _time_ms(el.value)
            if keep is None:
                ctx.errors.add(
                    f"@retentionPeriod {el.key} '{el.value}' is not a time such as '120 sec' or 'all'", span
                )
            elif keep < _RETENTION[dur][1]:
                ctx.errors.add(
                    f"@retentionPeriod {el.key} '{el.value}' is shorter than the minimum retention of "
                    f"{_RETENTION[dur][1] // 60_000} minutes",
                    span,
                )
            else:
                retention[dur] = keep
    return Purge(interval, retention)


def _buffer(ctx: PlanContext, d: AggregationDefinition) -> tuple[int, bool]:
    size = 0
    ann = find_annotation(d.annotations, "buffersize")
    if ann is not None:
        raw = ann.get(None) or ""
        if not raw.strip().isdigit():
            ctx.errors.add("@BufferSize needs a whole number of root-duration buckets", ann.span)
        else:
            size = int(raw)
    ignore = False
    ann = find_annotation(d.annotations, "ignoreeventsolderthanbuffer")
    if ann is not None:
        raw = (ann.get(None) or "").strip().lower()
        if raw not in ("true", "false"):
            ctx.errors.add("@IgnoreEventsOlderThanBuffer takes 'true' or 'false'", ann.span)
        ignore = raw == "true"
    return size, ignore


def _attribute(comp: ExpressionCompiler, expr: Any, scope: Scope, slots: _Slots) -> AttrType:
    """Add the slots of one selected attribute; its output type."""
    s = len(slots.init)
    top = expr if isinstance(expr, FunctionCall) and expr.namespace is None else None
    if top is not None and top.name in INCREMENTAL:
        return _aggregate(comp, top, scope, slots, s)
    for node in walk(expr):
        if isinstance(node, FunctionCall) and node.namespace is None and node.name in AGGREGATE_NAMES:
            comp.error(
                f"{node.name}() is not an incremental aggregate here",
                node.span,
                hint="an aggregation selects sum, count, avg, min, max or distinctCount, "
                "each as a whole attribute, and plain attributes",
            )
            return AttrType.OBJECT
    c = comp.compile(expr, scope)
    slots.init.append("None")
    slots.plain_add.append(f"st[{s}] = {c.fast}")
    slots.plain_add_safe.append(f"st[{s}] = {c.safe}")
    slots.plain_merge.append(f"a[{s}] = p[{s}]")
    slots.value.append(f"st[{s}]")
    return c.type


def _last_values(slots: _Slots, *, by_timestamp: bool) -> None:
    """Plain attributes keep the value of one event of the bucket: the last to come when
    the aggregation runs on event time; on an `aggregate by` timestamp, the event with
    the newest timestamp, the later of equal ones (as Siddhi's BaseIncrementalValueStore
    does with its last-timestamp check), so an out-of-order event does not overwrite it."""
    if not slots.plain_add:
        return
    if not by_timestamp:
        slots.add += slots.plain_add
        slots.add_safe += slots.plain_add_safe
        slots.merge += slots.plain_merge
        return
    last = len(slots.init)
    slots.init.append("None")

    def guarded(head: str, body: list[str]) -> str:
        return head + "".join("\n    " + line for stmt in body for line in stmt.splitlines())

    add_head = f"if st[{last}] is None or T >= st[{last}]:\n    st[{last}] = T"
    slots.add.append(guarded(add_head, slots.plain_add))
    slots.add_safe.append(guarded(add_head, slots.plain_add_safe))
    merge_head = f"if p[{last}] is not None and (a[{last}] is None or p[{last}] >= a[{last}]):\n    a[{last}] = p[{last}]"
    slots.merge.append(guarded(merge_head, slots.plain_merge))


def _aggregate(comp: ExpressionCompiler, call: FunctionCall, scope: Scope, slots: _Slots, s: int) -> AttrType:
    name = call.name
    if name == "count":
        if len(call.args) > 1:
            comp.error("count() takes at most one argument", call.span)
        slots.init.append("0")
        slots.add.append(f"st[{s}] += 1")
        slots.add_safe.append(f"st[{s}] += 1")
        slots.merge.append(f"a[{s}] += p[{s}]")
        slots.value.append(f"st[{s}]")
        return AttrType.LONG
    if len(call.args) != 1:
        comp.error(f"{name}() takes exactly one argument, got {len(call.args)}", call.span)
        return AttrType.OBJECT
    arg = comp.compile(call.args[0], scope)
    t = arg.type
    if name != "distinctCount" and t not in NUMERIC_TYPES and not arg.failed:
        comp.error(f"{name}() needs a numeric argument, found {t}", call.args[0].span)
        return AttrType.OBJECT
    fast, safe = f"v = {arg.fast}\n", f"v = {arg.safe}\n"
    if name in ("sum", "avg"):
        integral = name == "sum" and t in (AttrType.INT, AttrType.LONG)
        zero = "0" if integral else "0.0"
        slots.init += [zero, "0"]
        step = f"if v is not None:\n    st[{s}] += v\n    st[{s + 1}] += 1"
        slots.merge.append(f"a[{s}] += p[{s}]\na[{s + 1}] += p[{s + 1}]")
        if name == "sum":
            slots.value.append(f"(st[{s}] if st[{s + 1}] else None)")
        else:
            slots.value.append(f"(st[{s}] / st[{s + 1}] if st[{s + 1}] else None)")
        kind = AttrType.LONG if integral else AttrType.DOUBLE
    elif name in ("min", "max"):
        op = "<" if name == "min" else ">"
        slots.init.append("None")
        step = f"if v is not None and (st[{s}] is None or v {op} st[{s}]):\n    st[{s}] = v"
        slots.merge.append(
            f"if p[{s}] is not None and (a[{s}] is None or p[{s}] {op} a[{s}]):\n    a[{s}] = p[{s}]"
        )
        slots.value.append(f"st[{s}]")
        kind = t
    else:  # distinctCount
        slots.init.append("{}")
        step = f"st[{s}][v] = st[{s}].get(v, 0) + 1"
        slots.merge.append(f"m = a[{s}]\nfor v, n in p[{s}].items():\n    m[v] = m.get(v, 0) + n")
        slots.value.append(f"len(st[{s}])")
        slots.dict_slots.append(s)
        kind = AttrType.LONG
    slots.add.append(fast + step)
    slots.add_safe.append(safe + step)
    return kind


def _body(statements: list[str], indent: int = 1) -> str:
    pad = "    " * indent
    return "".join(pad + line + "\n" for stmt in statements for line in stmt.splitlines())


def _function(ctx: PlanContext, src: str) -> Any:
    ns = dict(ctx.namespace)
    exec(compile(src, "<aggregation>", "exec"), ns)  # noqa: S102 - generated code
    return ns["merge"]


def _lambda(ctx: PlanContext, src: str) -> Any:
    return eval(src, dict(ctx.namespace))  # noqa: S307 - generated code


def _stamp_reader(name: str) -> Callable[[Any], int | None]:
    """A string `aggregate by` timestamp as epoch ms (null stays null: the event is skipped).
    Siddhi logs a malformed one and drops the event; here it fails the chunk, as other bad
    event values do, before any of the chunk is aggregated."""

    def stamp(value: Any) -> int | None:
        if value is None:
            return None
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            msg = f"aggregation '{name}': {exc}"
            raise ProcessingError(msg) from None

    return stamp


def _accumulate(
    ctx: PlanContext,
    name: str,
    slots: _Slots,
    keys: list[Compiled],
    ts: Compiled | None,
    cond: Compiled | None,
    root: str,
    buffer_size: int,
    ignore_older: bool,
    *,
    fast: bool,
) -> Any:
    """`acc(ts, rows, agg)`: the chunk's partial states by (root bucket, key)."""

    def pick(c: Compiled) -> str:
        return c.fast if fast else c.safe

    lines = [
        "partial = {}",
        "latest = agg.latest",
        "oldest = None if latest is None else _shift(latest, ROOT, -N)",
    ]
    lines.append("for t, r in zip(ts, rows):")
    loop: list[str] = []
    if cond is not None:
        loop.append(f"if not {pick(cond)}:\n    continue")
    if ts is None:
        loop.append("T = t")
    elif ts.type is AttrType.STRING:
        loop.append(f"T = _stamp({pick(ts)})")
    else:
        loop.append(f"T = {pick(ts)}")
    loop.append("if T is None:\n    continue")
    unit = _FIXED.get(root)
    loop.append(f"b = T - T % {unit}" if unit is not None else "b = _bucket(T, ROOT)")
    if buffer_size > 0:
        older = "continue" if ignore_older else "b = oldest"
        loop.append(
            "if latest is None or b > latest:\n    latest = b\n    oldest = _shift(b, ROOT, -N)\n"
            f"elif b < oldest:\n    {older}"
        )
    if not keys:
        loop.append("k = None")
    elif len(keys) == 1:
        loop.append(f"k = {pick(keys[0])}")
    else:
        loop.append("k = (" + "".join(pick(k) + ", " for k in keys) + ")")
    loop.append("st = partial.get((b, k))")
    loop.append("if st is None:\n    st = partial[(b, k)] = [" + ", ".join(slots.init) + "]")
    loop += slots.add if fast else slots.add_safe
    src = "def acc(ts, rows, agg):\n" + _body(lines) + _body(loop, 2)
    if buffer_size > 0:
        src += "    agg.latest = latest\n"
    src += "    return partial\n"
    ns = dict(ctx.namespace)
    ns.update(_shift=shift, _bucket=bucket_start, _stamp=_stamp_reader(name), ROOT=root, N=buffer_size)
    exec(compile(src, "<aggregation>", "exec"), ns)  # noqa: S102 - generated code
    return ns["acc"]


# ---- retrieval: `within a[, b] per p` ------------------------------------------------------


def plan_retrieval(
    ctx: PlanContext,
    comp: ExpressionCompiler,
    agg: Aggregation,
    within: Expr,
    within_end: Expr | None,
    per: Expr,
    scope: Scope,
    query: str,
) -> Callable[[Any], list[Any]] | None:
    """`rows(r)`: the aggregation's rows for `within ... per ...` evaluated over the row
    `r` of `scope` (the triggering event; nothing for an on-demand read). Constant values
    are checked here, positioned; values read from events are checked as they come."""
    parts = [within] if within_end is None else [within, within_end]
    compiled = [comp.compile(e, scope) for e in parts]
    per_c = comp.compile(per, scope)
    ok = True
    for e, c in zip(parts, compiled, strict=True):
        if c.failed:
            ok = False
        elif c.type not in (AttrType.LONG, AttrType.INT, AttrType.STRING):
            comp.error(
                f"a 'within' value is epoch milliseconds (long) or a time string, found {c.type}", e.span
            )
            ok = False
    if per_c.failed:
        ok = False
    elif per_c.type is not AttrType.STRING:
        comp.error(f"'per' takes a duration string such as \"hours\", found {per_c.type}", per.span)
        ok = False
    if not ok:
        return None
    if all(c.const for c in compiled):
        try:
            within_range(*[c.value for c in compiled], two=len(compiled) == 2)
        except ValueError as exc:
            comp.error(str(exc), within.span)
            ok = False
    if per_c.const:
        try:
            agg.duration(per_c.value)
        except AggregationError as exc:
            comp.error(str(exc), per.span)
            ok = False
    if not ok:
        return None
    code = "lambda r: (" + "".join(c.safe + ", " for c in compiled) + ")"
    within_of = eval(code, ctx.namespace)  # noqa: S307 - generated code
    per_of = eval(f"lambda r: {per_c.safe}", ctx.namespace)  # noqa: S307 - generated code
    find = agg.find

    def rows(r: Any) -> list[Any]:
        try:
            return find(within_of(r), per_of(r))
        except AggregationError as exc:
            raise ProcessingError(str(exc), query) from None

    return rows
