"""Compile `select ... group by ... having ... order by ... limit ... offset` into one
generated Python function per query.

Siddhi 5 processes every chunk as a batch: a selector with aggregates and no group by
emits only the last qualifying event of a chunk, one with group by emits the last event
of each group (in first-seen order), and a plain projection emits every event. Only the
snapshot rate limiter turns batching off (every qualifying event is emitted).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from engine.plan.aggregates import AGGREGATE_NAMES, AggregateCode, aggregate_code
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError
from engine.plan.scope import Scope
from engine.query.expressions import Constant, FunctionCall, Variable
from engine.query.queries import Selector
from engine.runtime.selector import SelectorCode
from engine.types import AttrType

_ET = re.compile(r"\b_et\b")
_ROW = re.compile(r"\br\b")


@dataclass
class _Agg:
    code: AggregateCode
    arg: Compiled | None
    base: int


@dataclass
class SelectorPlan:
    names: list[str]
    types: list[AttrType]
    code: SelectorCode
    has_aggregates: bool
    group_by: bool
    passthrough: bool  # `select *` with nothing else: output rows are the input rows
    agg_positions: list[int] = field(default_factory=list)
    source: str = ""
    projection_fast: list[str] = field(default_factory=list)
    # the aggregation as code pieces, for a keyed operator's own loop (plan/fusion.py)
    parts: AggregateParts | None = None


@dataclass(frozen=True)
class AggregateParts:
    """An aggregating selector without group by, having, order, limit or offset, that emits
    current events only and batches (the last event of each chunk it is given), as code:
    `add` and `remove` update the slot list `st` for the row `r`; `project` sets `o` from
    `st`, the row `r` and its time `_et`; `init` are the slots' initial values."""

    init: tuple[str, ...]
    add: str
    remove: str
    project: str
    has_objects: bool


def compile_selector(
    selector: Selector,
    scope: Scope,
    comp: ExpressionCompiler,
    *,
    current_on: bool,
    expired_on: bool,
    batching: bool = True,
    star_sources: list[Any] | None = None,
    query_name: str = "query",
) -> SelectorPlan:
    aggs: list[_Agg] = []
    slots = [0]

    def hook(call: FunctionCall, sc: Scope) -> Compiled | None:
        if call.namespace is not None or call.name not in AGGREGATE_NAMES:
            return None
        args = [comp.compile(a, scope) for a in call.args]
        code = aggregate_code(call.name, [a.type for a in args])
        if isinstance(code, str):
            comp.error(code, call.span)
            return Compiled("None", "None", AttrType.OBJECT)
        if call.star and call.name != "count":
            comp.error(f"{call.name}(*) is not allowed", call.span)
        agg = _Agg(code, args[0] if args else None, slots[0])
        slots[0] += len(code.init)
        aggs.append(agg)
        value = _subst(code.value, agg.base)
        return Compiled(value, value, code.kind)

    prev_hook = comp.ctx.aggregate_hook
    comp.ctx.aggregate_hook = hook
    try:
        names, outputs = _outputs(selector, scope, comp, star_sources)
        group_keys = [comp.compile(v, scope) for v in selector.group_by]
        out_scope = scope.with_outputs(
            {n: (f"o[{i}]", c.type) for i, (n, c) in enumerate(zip(names, outputs, strict=True))},
            prefer=True,
        )
        having = comp.compile(selector.having, out_scope) if selector.having is not None else None
    finally:
        comp.ctx.aggregate_hook = prev_hook
    if having is not None and having.type is not AttrType.BOOL:
        comp.error("'having' needs a bool condition", selector.having.span)  # type: ignore[union-attr]
    order = _order_by(selector, names, comp)
    limit = _count_clause(selector.limit, "limit", comp)
    offset = _count_clause(selector.offset, "offset", comp)
    if comp.ctx.errors:
        raise PlanError

    agg_positions = []
    if selector.attributes is not None:
        for i, attr in enumerate(selector.attributes):
            e = attr.expr
            if isinstance(e, FunctionCall) and e.namespace is None and e.name in AGGREGATE_NAMES:
                agg_positions.append(i)
    star_pass = selector.attributes is None and star_sources is not None and len(star_sources) == 1
    plan_has_aggs = bool(aggs)
    group_by = bool(group_keys)
    src = _generate(
        names,
        outputs,
        aggs,
        group_keys,
        having,
        current_on=current_on,
        expired_on=expired_on,
        batching=batching,
        order=order,
        limit=limit,
        offset=offset,
        star_pass=star_pass,
    )
    init = [s for a in aggs for s in a.code.init]
    runtime = SelectorCode(src, comp.ctx.namespace, init, group_by, query_name)
    return SelectorPlan(
        names,
        [c.type for c in outputs],
        runtime,
        plan_has_aggs,
        group_by,
        star_pass and not plan_has_aggs and not group_by and having is None and not order,
        agg_positions=agg_positions,
        source=src,
        projection_fast=[c.fast for c in outputs],
        parts=_parts(
            outputs, aggs, group_keys, having, order, limit, offset, current_on, expired_on, batching
        ),
    )


def _parts(
    outputs: list[Compiled],
    aggs: list[_Agg],
    group_keys: list[Compiled],
    having: Compiled | None,
    order: list[tuple[int, bool]],
    limit: int | None,
    offset: int | None,
    current_on: bool,
    expired_on: bool,
    batching: bool,
) -> AggregateParts | None:
    """The pieces `process_length` is made of, when the selector has that shape."""
    if (
        not aggs
        or group_keys
        or having is not None
        or order
        or limit is not None
        or offset is not None
        or not current_on
        or expired_on
        or not batching
        or any(a.arg is not None and _ET.search(a.arg.fast) for a in aggs)
    ):
        return None

    def update(kind: int) -> str:
        lines: list[str] = []
        for agg in aggs:
            if agg.arg is not None and agg.code.needs_arg:
                lines.extend(_guarded("v", agg.arg.fast, agg.arg.safe, ""))
            lines.append(_subst(agg.code.add if kind == 0 else agg.code.remove, agg.base))
        return "\n".join(lines)

    project = "\n".join(
        _guarded("o", _tuple([c.fast for c in outputs]), _tuple([c.safe for c in outputs]), "")
    )
    init = tuple(s for a in aggs for s in a.code.init)
    has_objects = any(a.code.init[0].startswith("_agg_") for a in aggs)
    return AggregateParts(init, update(0), update(1), project, has_objects)


def _outputs(
    selector: Selector, scope: Scope, comp: ExpressionCompiler, star_sources: list[Any] | None
) -> tuple[list[str], list[Compiled]]:
    names: list[str] = []
    outputs: list[Compiled] = []
    if selector.attributes is None:
        for src in star_sources if star_sources is not None else scope.sources:
            for i, (n, kind) in enumerate(src.attributes):
                fast = src.indexed_row(None) + f"[{i}]" if src.indexed_row is not None else f"{src.row}[{i}]"
                safe = (
                    f"_s_get({src.indexed_row(None)}, {i})"
                    if src.indexed_row is not None
                    else (f"_s_get({src.row}, {i})" if src.nullable else fast)
                )
                names.append(n)
                outputs.append(Compiled(fast, safe, kind))
        return names, outputs
    seen: dict[str, Any] = {}
    for attr in selector.attributes:
        if attr.name in seen:
            comp.error(f"duplicate output attribute '{attr.name}' in select", attr.span)
        seen[attr.name] = attr
        outputs.append(comp.compile(attr.expr, scope))
        names.append(attr.name)
    return names, outputs


def _order_by(selector: Selector, names: list[str], comp: ExpressionCompiler) -> list[tuple[int, bool]]:
    order = []
    for ob in selector.order_by:
        v = ob.variable
        if v.attribute in names and v.stream is None:
            order.append((names.index(v.attribute), ob.ascending))
        else:
            comp.error(
                f"'order by {v.attribute}' must name an attribute of the select clause",
                v.span,
                hint=f"selected: {', '.join(names)}",
            )
    return order


def _count_clause(expr: Any, what: str, comp: ExpressionCompiler) -> int | None:
    if expr is None:
        return None
    if (
        isinstance(expr, Constant)
        and expr.type in (AttrType.INT, AttrType.LONG)
        and isinstance(expr.value, int)
    ):
        if expr.value < 0:
            comp.error(f"'{what}' cannot be negative, found {expr.value}", expr.span)
            return None
        return expr.value
    comp.error(f"'{what}' needs a whole number constant", expr.span)
    return None


def _subst(code: str, base: int) -> str:
    return code.replace("st[b+1]", f"st[{base + 1}]").replace("st[b]", f"st[{base}]")


def _generate(
    names: list[str],
    outputs: list[Compiled],
    aggs: list[_Agg],
    group_keys: list[Compiled],
    having: Compiled | None,
    *,
    current_on: bool,
    expired_on: bool,
    batching: bool,
    order: list[tuple[int, bool]],
    limit: int | None,
    offset: int | None,
    star_pass: bool,
) -> str:
    proj_fast = _tuple([c.fast for c in outputs])
    proj_safe = _tuple([c.safe for c in outputs])
    uses_ts = any(_ET.search(c.fast) for c in outputs) or any(
        a.arg is not None and _ET.search(a.arg.fast) for a in aggs
    )
    lines: list[str] = []
    emit = lines.append
    if not aggs and not group_keys:
        # processNoGroupBy: project every wanted event
        emit("def process(sel, ts, rows, kinds):")
        if not expired_on or not current_on:
            want = 0 if current_on else 1
            emit("    if kinds is not None:")
            emit(f"        keep = [k == {want} for k in kinds]")
            emit("        ts = list(_compress(ts, keep)); rows = list(_compress(rows, keep))")
            emit(f"        kinds = None if {want} == 0 else [1] * len(rows)")
            if want == 1:
                emit("    else:")
                emit("        return None")
            emit("    if not rows:")
            emit("        return None")
        else:
            emit("    if kinds is not None and 2 in kinds:")
            emit("        keep = [k != 2 for k in kinds]")
            emit(
                "        ts = list(_compress(ts, keep)); rows = list(_compress(rows, keep)); kinds = list(_compress(kinds, keep))"
            )
        if star_pass:
            emit("    out = rows")
        elif uses_ts:
            emit("    try:")
            emit(f"        out = [{proj_fast} for _et, r in zip(ts, rows)]")
            emit("    except (TypeError, ZeroDivisionError):")
            emit(f"        out = [{proj_safe} for _et, r in zip(ts, rows)]")
        else:
            emit("    try:")
            emit(f"        out = [{proj_fast} for r in rows]")
            emit("    except (TypeError, ZeroDivisionError):")
            emit(f"        out = [{proj_safe} for r in rows]")
        if having is not None:
            # `having` may read the input too (a pattern's `e1[1].price`), as `r` and `_et`
            if _ET.search(having.safe):
                emit(f"    keep = [{having.safe} for o, r, _et in zip(out, rows, ts)]")
            elif _ROW.search(having.safe):
                emit(f"    keep = [{having.safe} for o, r in zip(out, rows)]")
            else:
                emit(f"    keep = [{having.safe} for o in out]")
            emit("    ts = list(_compress(ts, keep)); out = list(_compress(out, keep))")
            emit("    kinds = None if kinds is None else list(_compress(kinds, keep))")
        if order or offset is not None or limit is not None:
            emit(
                f"    return _order_limit(ts, out, kinds, None, {order!r}, {offset!r}, {limit!r}, {current_on}, {expired_on})"
            )
        else:
            emit("    if not out:")
            emit("        return None")
            emit("    return ts, out, kinds")
        return "\n".join(lines) + "\n"

    # aggregating and/or grouping: one pass per event
    return _generate_aggregating(
        outputs,
        aggs,
        group_keys,
        having,
        current_on=current_on,
        expired_on=expired_on,
        batching=batching,
        order=order,
        limit=limit,
        offset=offset,
    )


def _guarded(target: str, fast: str, safe: str, indent: str) -> list[str]:
    """`target = fast`, falling back to `safe` on a null, without a try when they agree."""
    if fast == safe:
        return [f"{indent}{target} = {fast}"]
    return [
        f"{indent}try:",
        f"{indent}    {target} = {fast}",
        f"{indent}except (TypeError, ZeroDivisionError):",
        f"{indent}    {target} = {safe}",
    ]


def _generate_aggregating(
    outputs: list[Compiled],
    aggs: list[_Agg],
    group_keys: list[Compiled],
    having: Compiled | None,
    *,
    current_on: bool,
    expired_on: bool,
    batching: bool,
    order: list[tuple[int, bool]],
    limit: int | None,
    offset: int | None,
) -> str:
    proj_fast = _tuple([c.fast for c in outputs])
    proj_safe = _tuple([c.safe for c in outputs])
    lines: list[str] = []
    emit = lines.append
    emit("def process(sel, ts, rows, kinds):")
    prologue_at = len(lines)
    if group_keys:
        emit("    groups = sel.groups")
        emit(f"    init = {_tuple([s for a in aggs for s in a.code.init]) if aggs else '()'}")
        emit("    fresh = sel.code.new_state")
    else:
        emit("    st = sel.st")
    if batching:
        emit("    chosen = {}" if group_keys else "    chosen = None")
    else:
        emit("    out_ts = []; out_rows = []; out_kinds = []; out_keys = []")
    has_objects = any(a.code.init[0].startswith("_agg_") for a in aggs)
    prologue = lines[prologue_at:]
    if (
        batching
        and current_on
        and not group_keys
        and having is None
        and offset in (None, 0)
        and (limit is None or limit > 0)
        and aggs
        and all(a.code.bulk_add is not None for a in aggs)
        and not any(a.arg is not None and _ET.search(a.arg.fast) for a in aggs)
    ):
        lines.extend(_bulk_branch(aggs, proj_fast, proj_safe))

    def body(kind: int, indent: str, fused: bool = False) -> None:
        if group_keys:
            key = group_keys[0].safe if len(group_keys) == 1 else _tuple([g.safe for g in group_keys])
            emit(f"{indent}key = {key}")
            emit(f"{indent}st = groups.get(key)")
            emit(f"{indent}if st is None:")
            emit(f"{indent}    st = groups[key] = {'fresh()' if has_objects else 'list(init)'}")
        for agg in aggs:
            if agg.arg is not None and agg.code.needs_arg:
                lines.extend(_guarded("v", agg.arg.fast, agg.arg.safe, indent))
            code = agg.code.add if kind == 0 else agg.code.remove
            emit(textwrap.indent(_subst(code, agg.base), indent))
        wanted = current_on if kind == 0 else expired_on
        if not wanted:
            return
        lines.extend(_guarded("o", proj_fast, proj_safe, indent))
        inner = indent
        if having is not None:
            emit(f"{indent}if {having.safe}:")
            inner = indent + "    "
        if fused:
            emit(
                f"{inner}chosen{'[key]' if group_keys else ''} = o; when{'[key]' if group_keys else ''} = _et"
            )
        elif batching:
            emit(f"{inner}chosen{'[key]' if group_keys else ''} = (_et, o, {kind})")
        else:
            emit(f"{inner}out_ts.append(_et); out_rows.append(o); out_kinds.append({kind})")
            if group_keys:
                emit(f"{inner}out_keys.append(key)")

    emit("    if kinds is None:")
    emit("        for _et, r in zip(ts, rows):")
    body(0, " " * 12)
    emit("    else:")
    emit("        for _et, r, k in zip(ts, rows, kinds):")
    emit("            if k == 0:")
    body(0, " " * 16)
    emit("            elif k == 1:")
    before = len(lines)
    body(1, " " * 16)
    if len(lines) == before:
        emit("                pass")
    emit("            else:")
    emit("                sel.reset()")
    if group_keys:
        emit("                groups = sel.groups")
    else:
        emit("                st = sel.st")
    if batching and not group_keys:
        emit("    if chosen is None:")
        emit("        return None")
        if (offset not in (None, 0)) or (limit is not None and limit <= 0):
            emit("    return None")
        else:
            emit("    return [chosen[0]], [chosen[1]], (None if chosen[2] == 0 else [chosen[2]]), None")
    elif batching:
        emit("    if not chosen:")
        emit("        return None")
        emit("    vals = list(chosen.values())")
        emit(
            "    out_ts = [v[0] for v in vals]; out_rows = [v[1] for v in vals]; out_kinds = [v[2] for v in vals]"
        )
        if not order and offset is None and limit is None:
            emit("    return out_ts, out_rows, (None if 1 not in out_kinds else out_kinds), list(chosen)")
        else:
            emit(
                f"    return _order_limit(out_ts, out_rows, (None if 1 not in out_kinds else out_kinds), list(chosen), "
                f"{order!r}, {offset!r}, {limit!r}, {current_on}, {expired_on})"
            )
    if batching:
        uses_et = any(_ET.search(g.fast) for g in group_keys) or any(
            a.arg is not None and _ET.search(a.arg.fast) for a in aggs
        )
        if (
            current_on
            and not expired_on
            and having is None
            and not uses_et
            and not order
            and offset is None
            and limit is None
        ):
            # the sliding length window and this selector in one loop over current events: each
            # event first pushes the oldest one out (its aggregates removed), then is added
            emit("")
            emit("def process_length(sel, win, ts, rows):")
            emit("    length = win.length; buf_ts = win.buf_ts; buf_rows = win.buf_rows")
            emit("    size = len(buf_rows)")
            emit("    pop_ts = buf_ts.popleft; pop_rows = buf_rows.popleft")
            emit("    push_ts = buf_ts.append; push_rows = buf_rows.append")
            lines.extend(prologue)
            emit("    when = {}" if group_keys else "    when = None")
            emit("    for _et, cur in zip(ts, rows):")
            emit("        if size >= length:")
            emit("            pop_ts(); r = pop_rows()")
            before = len(lines)
            body(1, " " * 12, fused=True)
            if len(lines) == before:
                emit("            pass")
            emit("        else:")
            emit("            size += 1")
            emit("        push_ts(_et); push_rows(cur); r = cur")
            body(0, " " * 8, fused=True)
            # only current events are chosen here (no having, order, limit or offset)
            if group_keys:
                emit("    if not chosen:")
                emit("        return None")
                emit("    return list(when.values()), list(chosen.values()), None, list(chosen)")
            else:
                emit("    if when is None:")
                emit("        return None")
                emit("    return [when], [chosen], None, None")
        return "\n".join(lines) + "\n"
    emit("    if not out_rows:")
    emit("        return None")
    if group_keys:
        emit(f"    if {limit!r} is not None:")
        emit(
            f"        out_ts = out_ts[:{limit!r}]; out_rows = out_rows[:{limit!r}]; out_kinds = out_kinds[:{limit!r}]; out_keys = out_keys[:{limit!r}]"
        )
        emit("    return out_ts, out_rows, (None if 1 not in out_kinds else out_kinds), out_keys")
    else:
        emit(
            f"    return _order_limit(out_ts, out_rows, (None if 1 not in out_kinds else out_kinds), None, "
            f"{order!r}, {offset!r}, {limit!r}, {current_on}, {expired_on})"
        )
    return "\n".join(lines) + "\n"


_COLUMN = re.compile(r"r\[(\d+)\]")


def _bulk_branch(aggs: list[_Agg], proj_fast: str, proj_safe: str) -> list[str]:
    """Aggregates without group by, when the chunk ends with current events only after its
    last reset (or has no kinds at all): add those events in bulk and project the last one,
    which is the event batching emits. Everything before the last reset cannot matter."""
    lines = [
        "    cut = -1",
        "    if kinds is None:",
        "        cut = 0",
        "    elif 2 in kinds:",
        "        cut = len(kinds) - kinds[::-1].index(2)",
        "        tail = kinds[cut:]",
        "        if tail and tail.count(0) == len(tail):",
        "            sel.reset()",
        "            st = sel.st",
        "        else:",
        "            cut = -1",
        "    if cut >= 0 and len(rows) > cut:",
        "        part = rows[cut:] if cut else rows",
        "        n = len(part)",
    ]
    for agg in aggs:
        if agg.arg is not None and agg.code.needs_arg:
            column = _COLUMN.fullmatch(agg.arg.fast)
            if column is not None and agg.arg.fast == agg.arg.safe:
                lines.append(f"        vs = list(map(_itemgetter({column.group(1)}), part))")
            else:
                lines.extend(
                    _guarded(
                        "vs", f"[{agg.arg.fast} for r in part]", f"[{agg.arg.safe} for r in part]", " " * 8
                    )
                )
        assert agg.code.bulk_add is not None
        lines.append(textwrap.indent(_subst(agg.code.bulk_add, agg.base), " " * 8))
    lines.append("        r = part[-1]; _et = ts[-1]")
    lines.extend(_guarded("o", proj_fast, proj_safe, " " * 8))
    lines.append("        return [_et], [o], None, None")
    return lines


def _tuple(items: list[str]) -> str:
    if not items:
        return "()"
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


__all__ = ["AggregateParts", "SelectorPlan", "compile_selector", "Variable"]
