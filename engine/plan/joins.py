"""Plan a join query: two sides (streams with or without windows, named windows, tables),
an `on` condition compiled into a matcher per triggering side, and one shared selector."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.plan.aggregations import plan_retrieval
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import Compiled, PlanError
from engine.plan.query import (
    Built,
    QueryInput,
    QueryTemplate,
    compile_filter_condition,
    filter_function,
    output_flags,
    output_stages,
    plan_selection,
    query_template,
    resolve_input,
)
from engine.plan.scope import Scope, Source
from engine.plan.windows import WindowPlan, plan_window
from engine.query.queries import JoinInput, Query, SingleInput, StreamFunction
from engine.runtime.join import EmptyWindow, JoinSide, SelfJoinReceiver, no_rows
from engine.runtime.query import FunctionStage, Stage, WindowStage, chain
from engine.runtime.windows.base import WindowContext
from engine.types import AttrType


@dataclass
class _Side:
    si: SingleInput
    kind: str  # stream | window | table
    info: StreamInfo
    pre: Compiled | None
    window: WindowPlan | None
    post: Compiled | None


def _side(ctx: PlanContext, si: SingleInput, inner: dict[str, StreamInfo] | None) -> _Side:
    comp = ctx.compiler()
    kind = "stream"
    if not si.inner and si.stream in ctx.table_infos:
        kind = "table"
        info = ctx.table_infos[si.stream]
    elif not si.inner and si.stream in ctx.window_infos:
        kind = "window"
        info = ctx.window_infos[si.stream]
    elif not si.inner and si.stream in ctx.aggregation_infos:
        kind = "aggregation"
        info = ctx.aggregation_infos[si.stream]
    else:
        info = resolve_input(ctx, si, inner)
    for h in si.handlers + si.post_handlers:
        if isinstance(h, StreamFunction):
            comp.error(f"stream function #{h.call.qualified_name}() is not supported", h.span)
    scope = Scope([Source((si.ref,), info.attributes, "r", stream=si.stream)], event_ts="_et")
    if kind in ("table", "aggregation") and (
        (kind == "aggregation" and si.window is not None) or si.handlers or si.post_handlers
    ):
        what = "a window or filter" if kind == "aggregation" else "a filter"
        comp.error(f"{kind} '{si.stream}' cannot have {what} in a join", si.span)
        raise PlanError
    if kind == "window" and si.window is not None:
        comp.error(f"named window '{si.stream}' cannot have another window", si.window.span)
        raise PlanError
    pre = compile_filter_condition(comp, si.handlers, scope)
    window = plan_window(si.window.call, scope, comp) if si.window is not None else None
    if kind == "table":
        # Siddhi checks a table's window in a join, then replaces the side's processor chain
        # with the table lookup (JoinInputStreamParser: setProcessorChain(TableWindowProcessor)):
        # the window does nothing. WSO2's API Manager analytics join `T#window.time(10 min)`.
        window = None
    post = compile_filter_condition(comp, si.post_handlers, scope)
    if ctx.errors:
        raise PlanError
    return _Side(si, kind, info, pre, window, post)


def _matcher(cond: Compiled | None, trigger_left: bool, namespace: dict[str, Any]) -> Callable[..., Any]:
    if cond is None:
        return lambda row, cands: list(cands)
    if trigger_left:
        head, it = "l", "o"
    else:
        head, it = "o", "l"
    src = f"""
def m({head}, cands):
    try:
        return [{it} for {it} in cands if {cond.fast}]
    except (TypeError, ZeroDivisionError):
        return [{it} for {it} in cands if {cond.safe}]
"""
    ns = dict(namespace)
    exec(compile(src, "<join>", "exec"), ns)  # noqa: S102 - generated code
    return ns["m"]  # type: ignore[no-any-return]


def plan_join_query(
    ctx: PlanContext, query: Query, name: str, inner: dict[str, StreamInfo] | None
) -> QueryTemplate:
    j = query.input
    assert isinstance(j, JoinInput)
    comp = ctx.compiler()
    left = _side(ctx, j.left, inner)
    right = _side(ctx, j.right, inner)
    if left.kind == "table" and right.kind == "table":
        comp.error("a join needs at least one stream or window side; both sides are tables", j.span)
        raise PlanError
    agg_side = left if left.kind == "aggregation" else right if right.kind == "aggregation" else None
    if agg_side is None and (j.within is not None or j.per is not None):
        comp.error("'within ... per ...' applies only to joins with aggregations", j.span)
        raise PlanError
    stream_side = right if agg_side is left else left
    if agg_side is not None and stream_side.kind in ("table", "aggregation"):
        comp.error(f"an aggregation joins a stream or window, not a {stream_side.kind}", j.span)
        raise PlanError
    if agg_side is not None and (j.within is None or j.per is None):
        comp.error(
            f"a join with aggregation '{agg_side.si.stream}' needs 'within <time range> per <duration>'",
            j.span,
        )
        raise PlanError
    if left.si.ref == right.si.ref:
        comp.error(
            f"both sides of the join are called '{left.si.ref}'",
            j.right.span,
            hint="give each side an alias: 'from S as a join S as b'",
        )
        raise PlanError
    for side in (left, right):
        if side.kind in ("table", "aggregation") and j.unidirectional == (
            "left" if side is left else "right"
        ):
            comp.error(f"a {side.kind} side cannot be unidirectional", side.si.span)
            raise PlanError
    current_on, expired_on = output_flags(query)
    left_nullable = j.join_type in ("right_outer", "full_outer")
    right_nullable = j.join_type in ("left_outer", "full_outer")
    lsrc = Source((left.si.ref,), left.info.attributes, "r[0]", nullable=True, stream=left.si.stream)
    rsrc = Source((right.si.ref,), right.info.attributes, "r[1]", nullable=True, stream=right.si.stream)
    del left_nullable, right_nullable
    # the `on` condition sees the two rows as `l` and `o`
    cond_sources = [
        Source((left.si.ref,), left.info.attributes, "l", stream=left.si.stream),
        Source((right.si.ref,), right.info.attributes, "o", stream=right.si.stream),
    ]
    cond_scope = Scope(
        cond_sources, event_ts="_et", default_source=_legacy_default(ctx, left, right, cond_sources)
    )
    cond = comp.compile(j.on, cond_scope) if j.on is not None else None
    if cond is not None and cond.type is not AttrType.BOOL and not ctx.errors:
        comp.error("the join condition must be a bool expression", j.on.span)  # type: ignore[union-attr]
    if cond is not None:
        cond = comp.as_bool(cond)
    sel_scope = Scope([lsrc, rsrc], event_ts="_et")
    star = [lsrc, rsrc]
    if query.selector.attributes is None:
        names = [n for n, _ in left.info.attributes]
        clash = [n for n, _ in right.info.attributes if n in names]
        if clash:
            comp.error(
                f"'select *' over this join would output '{clash[0]}' twice",
                query.selector.span
                if query.selector.span.line > 1 or query.selector.span.col > 1
                else j.span,
                hint="list the attributes with aliases instead",
            )
            raise PlanError
    sel, limiter, output = plan_selection(ctx, query, sel_scope, comp, star, name, inner)
    expired_used = expired_on or sel.has_aggregates
    uni = j.unidirectional
    left_trigger = left.kind not in ("table", "aggregation") and uni != "right"
    right_trigger = right.kind not in ("table", "aggregation") and uni != "left"
    left_outer = j.join_type in ("left_outer", "full_outer")
    right_outer = j.join_type in ("right_outer", "full_outer")
    match_l = _matcher(cond, True, ctx.namespace)
    match_r = _matcher(cond, False, ctx.namespace)
    if agg_side is not None:
        assert j.within is not None and j.per is not None
        scope = Scope(
            [Source((stream_side.si.ref,), stream_side.info.attributes, "r", stream=stream_side.si.stream)],
            event_ts="_et",
        )
        agg = ctx.aggregations[agg_side.si.stream]
        found = plan_retrieval(ctx, comp, agg, j.within, j.within_end, j.per, scope, name)
        if found is None or ctx.errors:
            raise PlanError
        if agg_side is right:
            match_l = _reading(match_l, found)
        else:
            match_r = _reading(match_r, found)
    filters = {
        id(s): (
            filter_function(s.pre, ctx.namespace, "_et" in s.pre.fast) if s.pre is not None else None,
            filter_function(s.post, ctx.namespace, "_et" in s.post.fast) if s.post is not None else None,
        )
        for s in (left, right)
    }

    legacy = ctx.legacy
    # A selection without state or per-chunk clauses gives the same rows whether it sees
    # each triggering event's matches alone or all of a chunk's matches at once.
    plain_selection = (
        not sel.has_aggregates
        and not sel.group_by
        and not query.selector.order_by
        and query.selector.limit is None
        and query.selector.offset is None
    )
    self_join = (
        left.si.stream == right.si.stream
        and left.si.inner == right.si.inner
        and left.kind == right.kind == "stream"
    )

    def build(env: Env) -> Built:
        states: dict[str, Any] = {}
        starts: list[Callable[[], None]] = []
        selector = sel.code.instance()
        states["selector"] = selector
        downstream = chain(*output_stages(env, name, limiter, output, states, starts))

        holders: dict[str, Callable[[], list[Any]]] = {}
        heads: dict[str, Stage | None] = {}
        tails: dict[str, Stage | None] = {}
        for label, side in (("left", left), ("right", right)):
            pre_fn, post_fn = filters[id(side)]
            stages: list[Stage] = []
            if side.kind == "table":
                holders[label] = ctx.tables[side.si.stream].all_rows
                continue
            if side.kind == "aggregation":  # read per triggering event: see _reading
                holders[label] = no_rows
                continue
            if side.kind == "window":
                holders[label] = ctx.windows[side.si.stream].rows
            if pre_fn is not None:
                stages.append(FunctionStage(pre_fn, name))
            if side.window is not None:
                wctx = WindowContext(
                    env.scheduler,
                    f"{env.prefix}{name}/{label}-window",
                    env.now,
                    expired_on,
                    name,
                    side.info.types,
                    env.start_time,
                    for_join=True,
                    expired_used=expired_used,
                )
                w = side.window.build(wctx)
                stages.append(WindowStage(w))
                states[f"{label}-window"] = w
                starts.append(w.start)
                holders[label] = _window_rows(w)
            elif side.kind == "stream":
                stages.append(EmptyWindow(expired_on, not legacy, env.now))
                holders[label] = no_rows
            if post_fn is not None:
                stages.append(FunctionStage(post_fn, name))
            for a, b in zip(stages, stages[1:], strict=False):
                a.next = b
            heads[label] = stages[0] if stages else None
            tails[label] = stages[-1] if stages else None

        joins: dict[str, JoinSide] = {}
        for label, side, trig, outer, match in (
            ("left", left, left_trigger, left_outer, match_l),
            ("right", right, right_trigger, right_outer, match_r),
        ):
            if side.kind in ("table", "aggregation"):
                continue
            other = holders["right" if label == "left" else "left"]
            js = JoinSide(
                is_left=label == "left",
                trigger=trig,
                outer=outer,
                match=match,
                other_rows=other,
                selector=selector,
                per_chunk=plain_selection,
            )
            js.next = downstream
            joins[label] = js
            tail = tails.get(label)
            if tail is None:
                heads[label] = js
            else:
                tail.next = js
        inputs: list[QueryInput] = []
        if self_join:
            left_head, right_head = heads["left"], heads["right"]
            assert left_head is not None and right_head is not None
            receiver = SelfJoinReceiver(left_head, right_head, joins["left"], joins["right"], downstream)
            inputs.append(QueryInput(left.si.stream, left.si.inner, receiver.receive))
        else:
            for label, side in (("left", left), ("right", right)):
                head = heads.get(label)
                if head is not None:
                    inputs.append(QueryInput(side.si.stream, side.si.inner, head.process))
        return Built(inputs, states, starts)

    return query_template(
        query, name, build, [(left.si.stream, left.si.inner), (right.si.stream, right.si.inner)]
    )


def _reading(match: Callable[..., Any], found: Callable[[Any], list[Any]]) -> Callable[..., Any]:
    """A matcher against the aggregation rows the triggering event's `within ... per` picks."""

    def m(row: Any, _cands: Any) -> Any:
        return match(row, found(row))

    return m


def _window_rows(w: Any) -> Callable[[], Any]:
    return w.rows  # type: ignore[no-any-return]


def _legacy_default(ctx: PlanContext, left: _Side, right: _Side, sources: list[Source]) -> Source | None:
    """In a CEP 3.x plan an unqualified name in a stream-table join's `on` condition means
    the stream's attribute, as Siddhi 3.x read it (Siddhi 4+ refuses it as ambiguous)."""
    if not ctx.legacy or (left.kind == "table") == (right.kind == "table"):
        return None
    return sources[1] if left.kind == "table" else sources[0]
