"""Plan one query: its input, selector, rate limiter and output, as a template that can
be instantiated once (a plain query) or once per partition key."""

from __future__ import annotations

import re
import textwrap
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.events import Chunk
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError, suggest
from engine.plan.fusion import FollowedByFusion, WindowFusion, window_fusion
from engine.plan.ratelimits import plan_rate_limiter
from engine.plan.scope import Scope, Source
from engine.plan.selector import SelectorPlan, compile_selector
from engine.plan.stream_functions import added_attributes, is_supported, plan_handlers
from engine.plan.tables import insert_into_table, plan_table_output
from engine.plan.windows import WindowPlan, plan_window
from engine.query.queries import (
    DeleteFrom,
    Filter,
    InsertInto,
    Query,
    ReturnOutput,
    SingleInput,
    StreamFunction,
    UpdateOrInsert,
    UpdateTable,
)
from engine.runtime.query import (
    CallbackStage,
    FunctionStage,
    SelectStage,
    SlidingAggregateStage,
    Stage,
    WindowStage,
    chain,
)
from engine.runtime.ratelimit import LimiterEnv, LimiterSpec
from engine.runtime.windows.base import WindowContext
from engine.types import AttrType


@dataclass
class QueryInput:
    """One stream a query instance listens to."""

    stream: str
    inner: bool
    receive: Callable[[Chunk], None]


@dataclass
class Built:
    inputs: list[QueryInput]
    states: dict[str, Any]
    start: list[Callable[[], None]] = field(default_factory=list)


@dataclass
class QueryTemplate:
    name: str
    output_stream: str | None
    output_inner: bool
    build: Callable[[Env], Built]
    input_streams: list[tuple[str, bool]]
    followed_by: FollowedByFusion | None = None  # what a partition may fuse (plan/fusion.py)
    keyed_window: WindowFusion | None = None  # likewise


# Plans one query, in a partition (`inner`: its inner streams) or not: the planner's own,
# handed to the partition and anonymous-query planners.
PlanQuery = Callable[[Query, dict[str, StreamInfo] | None], QueryTemplate]


def query_name(ctx: PlanContext, query: Query) -> str:
    ctx.query_count += 1
    return query.name or f"query{ctx.query_count}"


def resolve_input(
    ctx: PlanContext, si: SingleInput, inner_streams: dict[str, StreamInfo] | None
) -> StreamInfo:
    comp_errors = ctx.errors
    if si.inner:
        if inner_streams is None:
            comp_errors.add(
                f"inner stream '#{si.stream}' can only be used inside a partition", si.stream_span
            )
            raise PlanError
        info = inner_streams.get(si.stream)
        if info is None:
            comp_errors.add(
                f"inner stream '#{si.stream}' is not defined before this query",
                si.stream_span,
                hint="an inner stream is defined by an earlier 'insert into #Name' in the same partition",
            )
            raise PlanError
        return info
    info = ctx.streams.get(si.stream) or ctx.window_infos.get(si.stream)
    if info is None:
        if si.stream in ctx.table_infos:
            comp_errors.add(
                f"table '{si.stream}' cannot be a query's stream input",
                si.stream_span,
                hint="join the table with a stream, or use 'in' in a filter",
            )
        else:
            comp_errors.add(
                f"stream '{si.stream}' is not defined",
                si.stream_span,
                hint=suggest(si.stream, list(ctx.streams)),
            )
        raise PlanError
    return info


def compile_filter_condition(comp: ExpressionCompiler, handlers: list[Any], scope: Scope) -> Compiled | None:
    conds: list[Compiled] = []
    for h in handlers:
        if isinstance(h, Filter):
            c = comp.compile(h.expr, scope)
            if c.type is not AttrType.BOOL and not c.failed:
                comp.error(f"a filter needs a bool condition, found {c.type}", h.expr.span)
            conds.append(comp.as_bool(c))
    if not conds:
        return None
    if len(conds) == 1:
        return conds[0]
    return Compiled(
        "(" + " and ".join(c.fast for c in conds) + ")",
        "(" + " and ".join(c.safe for c in conds) + ")",
        AttrType.BOOL,
        may_be_null=False,
    )


_ROW_ITEM = re.compile(r"\br\[(\d+)\]")
_ROW = re.compile(r"\br\b")
_UNPACK_MAX = 6  # wider rows are cheaper to index than to unpack

# Timestamps of a chunk that is not uniform usually ascend in a few runs (a client's batches):
# each run is then a uniform slice, filtered and projected by one comprehension. Unsorted, or
# with more runs than 1/_RUNS_MIN of the events, a mask selects events and timestamps.
_RUNS_MIN = 32
_RUNS = """
if not chunk.ascending and ts[0] <= ts[-1] and _sorted(ts) == ts:
    chunk.ascending = True  # for the stream's other queries
if chunk.ascending:
    n = len(ts); ends = []; i = 0
    while i < n and len(ends) * {runs_min} <= n:
        i = _bisect(ts, ts[i], i)
        ends.append(i)
    if i >= n:
        out = []; out_ts = []; i = 0
        for j in ends:
            k = len(out)
            out += [{item} for {target} in rows[i:j] if {cond}]
            out_ts += [ts[i]] * (len(out) - k)
            i = j
        return _Chunk(out_ts, out, None, None, False, True)"""


def _runs(indent: int, item: str, target: str, cond: str) -> str:
    text = _RUNS.format(runs_min=_RUNS_MIN, item=item, target=target, cond=cond)
    return textwrap.indent(text, " " * indent)


def _unpacked(arity: int, *exprs: str) -> tuple[str, list[str]] | None:
    """The loop target `_a0, _a1, ...` and `exprs` reading those names instead of `r[i]`,
    when every use of the row is an item access and the row is narrow enough."""
    if arity < 1 or arity > _UNPACK_MAX:
        return None
    out = [_ROW_ITEM.sub(lambda m: f"_a{m.group(1)}", e) for e in exprs]
    if any(_ROW.search(e) for e in out):
        return None
    target = ", ".join(f"_a{i}" for i in range(arity)) + ("," if arity == 1 else "")
    return target, out


def filter_function(
    cond: Compiled, namespace: dict[str, Any], uses_ts: bool, arity: int = 0
) -> Callable[..., Any]:
    """A chunk filter: one comprehension per run of equal timestamps."""
    it = "_et, r in zip(ts, rows)" if uses_ts else "r in rows"
    runs = "" if uses_ts else _runs(12, "r", "r", cond.fast)
    src = f"""
def f(chunk):
    ts = chunk.ts; rows = chunk.rows; kinds = chunk.kinds
    if kinds is None and not {uses_ts}:
        try:
            if chunk.uniform:
                out = [r for r in rows if {cond.fast}]
                return _Chunk(ts[:len(out)], out, None, None, True){runs}
        except (TypeError, ZeroDivisionError):
            pass
    try:
        keep = [{cond.fast} for {it}]
    except (TypeError, ZeroDivisionError):
        keep = [{cond.safe} for {it}]
    if kinds is None:
        return _Chunk(list(_compress(ts, keep)), list(_compress(rows, keep)), None, None, chunk.uniform, chunk.ascending)
    return _Chunk(list(_compress(ts, keep)), list(_compress(rows, keep)), list(_compress(kinds, keep)))
"""
    return _build(src, "<filter>", namespace)


def fused_function(
    cond: Compiled | None, sel: SelectorPlan, namespace: dict[str, Any], arity: int = 0
) -> Callable[..., Any]:
    """Filter and projection in one pass of comprehensions (no per-event calls). Returns
    None when the chunk holds a null the fast code cannot take (the caller falls back)."""
    fast = _tuple(sel.projection_fast)
    uses_ts = "_et" in fast or (cond is not None and "_et" in cond.fast)
    if uses_ts:
        if cond is None:
            body = f"return _Chunk(ts, [{fast} for _et, r in zip(ts, rows)], None, None, chunk.uniform, chunk.ascending)"
        else:
            body = f"""keep = [{cond.fast} for _et, r in zip(ts, rows)]
        ts2 = list(_compress(ts, keep))
        return _Chunk(ts2, [{fast} for _et, r in zip(ts2, _compress(rows, keep))], None, None, chunk.uniform, chunk.ascending)"""
    else:
        test = "True" if cond is None else cond.fast
        unpacked = _unpacked(arity, fast, test)
        target, (item, test) = unpacked if unpacked is not None else ("r", [fast, test])
        where = "" if cond is None else f" if {test}"
        if cond is None:
            body = f"return _Chunk(ts, [{item} for {target} in rows], None, None, chunk.uniform, chunk.ascending)"
        else:
            runs = _runs(8, item, target, test)
            body = f"""if chunk.uniform:
            out = [{item} for {target} in rows{where}]
            return _Chunk(ts[:len(out)], out, None, None, True){runs}
        keep = [{test} for {target} in rows]
        return _Chunk(list(_compress(ts, keep)), [{item} for {target} in _compress(rows, keep)], None, None, False, chunk.ascending)"""
    src = f"""
def f(chunk):
    ts = chunk.ts; rows = chunk.rows
    try:
        {body}
    except (TypeError, ZeroDivisionError):
        return None
"""
    return _build(src, "<fused>", namespace)


def _build(src: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    ns = dict(namespace)
    ns.update(_Chunk=Chunk, _sorted=sorted, _bisect=bisect_right)
    exec(compile(src, name, "exec"), ns)  # noqa: S102 - generated code
    return ns["f"]  # type: ignore[no-any-return]


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def event_type(query: Query) -> str:
    kind = query.output.event_type
    if kind == "default":
        snapshot = query.output_rate is not None and query.output_rate.kind == "snapshot"
        return "all" if snapshot else "current"
    return kind


def output_flags(query: Query) -> tuple[bool, bool]:
    kind = event_type(query)
    return kind in ("current", "all"), kind in ("expired", "all")


def define_output(
    ctx: PlanContext,
    query: Query,
    names: list[str],
    types: list[AttrType],
    inner_streams: dict[str, StreamInfo] | None,
) -> None:
    """Check (or implicitly define) the stream a query inserts into."""
    out = query.output
    if not isinstance(out, InsertInto):
        return
    target = out.target
    if out.inner:
        if inner_streams is None:
            ctx.errors.add(f"inner stream '#{target}' can only be used inside a partition", out.target_span)
            raise PlanError
        existing = inner_streams.get(target)
        if existing is None:
            inner_streams[target] = StreamInfo(target, names, types, out.target_span, implicit=True)
            return
    elif target in ctx.table_infos or target in ctx.window_infos:
        info = ctx.table_infos.get(target) or ctx.window_infos[target]
        _check_compatible(
            ctx, info, names, types, out, what="table" if target in ctx.table_infos else "window"
        )
        return
    else:
        existing = ctx.streams.get(target)
        if existing is None:
            ctx.streams[target] = StreamInfo(target, names, types, out.target_span, implicit=True)
            return
    _check_compatible(ctx, existing, names, types, out, what="stream")


def _check_compatible(
    ctx: PlanContext, info: StreamInfo, names: list[str], types: list[AttrType], out: InsertInto, what: str
) -> None:
    have = list(zip(info.names, info.types, strict=True))
    got = list(zip(names, types, strict=True))
    if what in ("table", "window"):
        if [t for _, t in have] == [t for _, t in got]:
            return
    elif have == got:
        return
    fmt = _signature
    ctx.errors.add(
        f"query output {fmt(got)} does not match {what} '{info.name}' {fmt(have)}",
        out.target_span,
        hint="rename or cast the selected attributes (e.g. 'as name') to match the definition",
    )
    raise PlanError


def plan_selection(
    ctx: PlanContext,
    query: Query,
    scope: Scope,
    comp: ExpressionCompiler,
    star_sources: list[Any],
    name: str,
    inner_streams: dict[str, StreamInfo] | None,
) -> tuple[SelectorPlan, LimiterSpec | None, Callable[[Env], Callable[[Chunk], None]]]:
    """What every kind of query ends with: its selector, the stream it defines, its rate
    limiter and its output."""
    current_on, expired_on = output_flags(query)
    sel = compile_selector(
        query.selector,
        scope,
        comp,
        current_on=current_on,
        expired_on=expired_on,
        batching=query.output_rate is None or query.output_rate.kind != "snapshot",
        star_sources=star_sources,
        query_name=name,
    )
    if ctx.errors:
        raise PlanError
    define_output(ctx, query, sel.names, sel.types, inner_streams)
    return sel, plan_rate_limiter(query, sel, comp), plan_output(ctx, query, sel, comp, inner_streams)


def plain_selection(query: Query, sel: SelectorPlan) -> bool:
    """A selection that maps each event to its row alone: no aggregates, grouping, having,
    ordering, limit or offset."""
    clauses = query.selector
    return (
        not sel.has_aggregates
        and not sel.group_by
        and clauses.having is None
        and not clauses.order_by
        and clauses.limit is None
        and clauses.offset is None
    )


def output_stages(
    env: Env,
    name: str,
    limiter: LimiterSpec | None,
    output: Callable[[Env], Callable[[Chunk], None]],
    states: dict[str, Any],
    starts: list[Callable[[], None]],
) -> list[Stage]:
    """The stages every query ends with: its rate limiter, if it has one, then its output."""
    stages: list[Stage] = []
    if limiter is not None:
        lim = limiter.build(
            LimiterEnv(env.scheduler, f"{env.prefix}{name}/ratelimit", env.now, env.start_time)
        )
        states["ratelimit"] = lim
        starts.append(lim.start)
        stages.append(lim)
    stages.append(CallbackStage(output(env)))
    return stages


def query_template(
    query: Query, name: str, build: Callable[[Env], Built], input_streams: list[tuple[str, bool]]
) -> QueryTemplate:
    out = query.output
    target = out.target if isinstance(out, InsertInto) else None
    return QueryTemplate(name, target, isinstance(out, InsertInto) and out.inner, build, input_streams)


def plan_single_query(
    ctx: PlanContext,
    query: Query,
    name: str,
    inner_streams: dict[str, StreamInfo] | None = None,
) -> QueryTemplate:
    si = query.input
    assert isinstance(si, SingleInput)
    comp = ctx.compiler()
    info = resolve_input(ctx, si, inner_streams)
    names = tuple(dict.fromkeys([si.stream, si.ref, f"#{si.stream}" if si.inner else si.stream]))
    current_on, expired_on = output_flags(query)

    for h in si.handlers + si.post_handlers:
        if isinstance(h, StreamFunction) and not is_supported(h):
            comp.error(f"stream function #{h.call.qualified_name}() is not supported", h.span)
    for h in si.post_handlers:
        if isinstance(h, StreamFunction) and added_attributes([h]):
            comp.error(f"#{h.call.qualified_name}() must come before the window", h.span)
    # each #str:tokenize appends `token`: the handlers after it, the window and the select
    # see the widened event
    scopes: list[Scope] = []
    added = added_attributes(si.handlers)
    for k in range(len(added) + 1):
        wide = StreamInfo(
            info.name, info.names + [n for n, _ in added[:k]], info.types + [t for _, t in added[:k]]
        )
        src = Source(names, wide.attributes, "r", stream=si.stream, inner=si.inner)
        scopes.append(Scope([src], event_ts="_et", lenient_qualifiers=ctx.legacy))
    if added:
        info = StreamInfo(
            info.name,
            info.names + [n for n, _ in added],
            info.types + [t for _, t in added],
            info.span,
            info.implicit,
            info.kind,
        )
    source = scopes[-1].sources[0]
    scope = scopes[-1]
    arity = len(info.attributes)

    def make_filter(run: list[Any], at: Scope) -> Callable[..., Any] | None:
        cond = compile_filter_condition(comp, run, at)
        return filter_function(cond, ctx.namespace, "_et" in cond.fast, arity) if cond is not None else None

    pre_handlers = plan_handlers(si.handlers, scopes, comp, ctx.app_name, name, make_filter)
    post_handlers = plan_handlers(si.post_handlers, [scope], comp, ctx.app_name, name, make_filter)
    pre = compile_filter_condition(comp, si.handlers, scope) if pre_handlers is None else None
    window: WindowPlan | None = None
    if si.window is not None:
        if si.stream in ctx.window_infos:
            comp.error(f"a named window ('{si.stream}') cannot have another window", si.window.span)
            raise PlanError
        window = plan_window(si.window.call, scope, comp)
    post = compile_filter_condition(comp, si.post_handlers, scope) if post_handlers is None else None
    is_named_window = si.stream in ctx.window_infos
    sel, limiter, output = plan_selection(ctx, query, scope, comp, [source], name, inner_streams)
    expired_used = expired_on or sel.has_aggregates
    pre_fn = (
        filter_function(pre, ctx.namespace, "_et" in pre.fast, arity) if pre is not None else pre_handlers
    )
    post_fn = (
        filter_function(post, ctx.namespace, "_et" in post.fast, arity) if post is not None else post_handlers
    )
    plain = (
        window is None
        and not is_named_window
        and plain_selection(query, sel)
        and current_on
        and pre_handlers is None
        and post_handlers is None
    )
    fused = fused_function(pre, sel, ctx.namespace, arity) if plain and not sel.passthrough else None
    sliding_fused = (
        window is not None
        and window.spec.name == "length"
        and post_fn is None
        and not is_named_window
        and sel.code.length_function is not None
    )
    win_types = info.types

    def build(env: Env) -> Built:
        states: dict[str, Any] = {}
        stages: list[Stage] = []
        starts: list[Callable[[], None]] = []
        if fused is not None:
            fused_stage = FunctionStage(_with_fallback(fused, pre_fn, sel), name)
            stages.append(fused_stage)
        else:
            if pre_fn is not None:
                stages.append(FunctionStage(pre_fn, name))
            if window is not None:
                wctx = WindowContext(
                    env.scheduler,
                    f"{env.prefix}{name}/window",
                    env.now,
                    expired_on,
                    name,
                    win_types,
                    env.start_time,
                    expired_used=expired_used,
                )
                w = window.build(wctx)
                states["window"] = w
                starts.append(w.start)
            selector = sel.code.instance()
            states["selector"] = selector
            if window is not None and sliding_fused:
                stages.append(SlidingAggregateStage(w, selector))
            else:
                if window is not None:
                    stages.append(WindowStage(w))
                if post_fn is not None:
                    stages.append(FunctionStage(post_fn, name))
                stages.append(SelectStage(selector))
        stages += output_stages(env, name, limiter, output, states, starts)
        head = chain(*stages)
        return Built([QueryInput(si.stream, si.inner, head.process)], states, starts)

    template = query_template(query, name, build, [(si.stream, si.inner)])
    out = query.output
    if (
        not is_named_window
        and pre_handlers is None
        and post_handlers is None
        and post is None
        and limiter is None
        and sel.parts is not None
        and isinstance(out, InsertInto)
        and not out.inner
        and out.target not in ctx.table_infos
        and out.target not in ctx.window_infos
    ):
        template.keyed_window = window_fusion(si, window, pre, sel, output, name)
    return template


def _with_fallback(
    fused: Callable[..., Any], pre_fn: Callable[..., Any] | None, sel: SelectorPlan
) -> Callable[..., Any]:
    """Run the fused comprehension; on a null in the chunk, take the safe path."""
    code = sel.code

    def run(chunk: Chunk) -> Chunk | None:
        res = fused(chunk)
        if res is not None:
            return res  # type: ignore[no-any-return]
        if pre_fn is not None:
            chunk = pre_fn(chunk)
            if not chunk.rows:
                return None
        out = code.function(code.instance(), chunk.ts, chunk.rows, chunk.kinds)
        if out is None:
            return None
        return Chunk(out[0], out[1], out[2])

    return run


def plan_output(
    ctx: PlanContext,
    query: Query,
    sel: SelectorPlan,
    comp: ExpressionCompiler,
    inner_streams: dict[str, StreamInfo] | None,
) -> Callable[[Env], Callable[[Chunk], None]]:
    out = query.output
    if isinstance(out, InsertInto):
        target = out.target
        if not out.inner and target in ctx.table_infos:
            return insert_into_table(ctx, target, out)
        if not out.inner and target in ctx.window_infos:
            named = ctx.windows[target]
            return lambda env: named.receive
        inner = out.inner

        def to_junction(env: Env) -> Callable[[Chunk], None]:
            return env.junction(target, inner).publish

        return to_junction
    if isinstance(out, ReturnOutput):

        def to_return(env: Env) -> Callable[[Chunk], None]:
            return env.junction("__return__", False).publish

        return to_return
    if isinstance(out, (DeleteFrom, UpdateTable, UpdateOrInsert)):
        return plan_table_output(ctx, query, sel, comp)
    comp.error("unsupported query output", out.span)
    raise PlanError


def _signature(pairs: list[tuple[str, AttrType]]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in pairs) + ")"
