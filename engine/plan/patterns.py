"""Plan pattern and sequence queries into state machines (runtime/pattern.py).

State ids follow Siddhi's parse order (for `a and b`, b first), which decides how `every`
copies are cleared and where counting states look for their next state. Filters see the
candidate event as `r` and the partial match as `p`; the selector sees the partial.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import CEPError
from engine.events import Chunk
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError
from engine.plan.fusion import FollowedByFusion
from engine.plan.query import (
    Built,
    QueryInput,
    QueryTemplate,
    compile_filter_condition,
    output_flags,
    output_stages,
    plain_selection,
    plan_selection,
    query_template,
    resolve_input,
)
from engine.plan.scope import Scope, Source
from engine.query.expressions import EventIndex
from engine.query.queries import (
    AbsentState,
    CountState,
    EveryState,
    InsertInto,
    LogicalState,
    NextState,
    Query,
    StateElement,
    StateInput,
    StreamFunction,
    StreamState,
)
from engine.runtime.followed_by import FollowedBy
from engine.runtime.pattern import AbsentNode, CountNode, LogicalNode, Machine, Node
from engine.runtime.query import chain


@dataclass
class Leaf:
    sid: int
    kind: str  # stream | count | absent
    state: StreamState | AbsentState
    stream: str
    inner: bool
    info: StreamInfo
    ref: str | None
    lo: int = 1
    hi: int | None = 1
    waiting: int | None = None
    logical: str | None = None  # "and"/"or" when a side of a logical
    partner: int | None = None
    filter_src: str | None = None
    filter_fast: str | None = None


@dataclass
class Shape:
    """What the runtime tree needs: per leaf its links, as leaf ids."""

    first: list[int]
    last: list[int]
    nodes: list[int] = field(default_factory=list)


def _index_code(chain: str, index: EventIndex | None, default: int, own_count: bool = False) -> str:
    if index is None:
        pos = default
    elif index.position is not None:
        pos = index.position
    else:
        assert index.from_last is not None
        pos = -1 - index.from_last - (1 if own_count else 0)
    return f"_pev({chain}, {pos})"


class _Planner:
    def __init__(self, ctx: PlanContext, query: Query, inner: dict[str, StreamInfo] | None) -> None:
        self.ctx = ctx
        self.query = query
        self.inner = inner
        self.leaves: list[Leaf] = []
        self.sid_of: dict[int, int] = {}  # id(state element) -> state id
        self.comp = ctx.compiler()

    # ---- ids ------------------------------------------------------------------------

    def assign(self, e: StateElement) -> None:
        if isinstance(e, NextState):
            self.assign(e.first)
            self.assign(e.then)
        elif isinstance(e, LogicalState):
            self.assign(e.right)
            self.assign(e.left)
        elif isinstance(e, EveryState):
            self.assign(e.inner)
        elif isinstance(e, CountState):
            self._leaf(e.state, "count", lo=e.min_count, hi=e.max_count)
            self.sid_of[id(e.state)] = self.sid_of[id(e)] = self.leaves[-1].sid
        elif isinstance(e, (StreamState, AbsentState)):
            self._leaf(e, "absent" if isinstance(e, AbsentState) else "stream")
            self.sid_of[id(e)] = self.leaves[-1].sid
        else:  # pragma: no cover
            raise PlanError

    def _leaf(self, s: StreamState | AbsentState, kind: str, lo: int = 1, hi: int | None = 1) -> None:
        si = s.input
        for h in si.handlers:
            if isinstance(h, StreamFunction):
                self.comp.error(f"stream function #{h.call.qualified_name}() is not supported", h.span)
        info = resolve_input(self.ctx, si, self.inner)
        ref = s.ref if isinstance(s, StreamState) else None
        leaf = Leaf(len(self.leaves), kind, s, si.stream, si.inner, info, ref, lo, hi)
        if isinstance(s, AbsentState):
            leaf.waiting = s.waiting_ms
        self.leaves.append(leaf)

    # ---- shape ----------------------------------------------------------------------

    def shape(self, e: StateElement, links: list[tuple[str, int, int]]) -> Shape:
        """Collect (link kind, from leaf, to leaf) and return first/last leaves of `e`."""
        if isinstance(e, NextState):
            a = self.shape(e.first, links)
            b = self.shape(e.then, links)
            for n in a.last:
                links.append(("next", n, b.first[0]))
            return Shape(a.first, b.last, a.nodes + b.nodes)
        if isinstance(e, LogicalState):
            r = self.shape(e.right, links)
            left = self.shape(e.left, links)
            if len(r.nodes) != 1 or len(left.nodes) != 1:
                self.comp.error("'and'/'or' combine two single states", e.span)
                raise PlanError
            li, ri = left.nodes[0], r.nodes[0]
            for x, y in ((li, ri), (ri, li)):
                self.leaves[x].logical = e.op
                self.leaves[x].partner = y
            return Shape([li, ri], [li, ri], [ri, li])
        if isinstance(e, EveryState):
            inner = self.shape(e.inner, links)
            for n in inner.last:
                links.append(("every", n, inner.first[0]))
            for n in inner.nodes:
                links.append(("within_every", n, inner.first[0]))
            return inner
        sid = self.sid_of[id(e)]
        return Shape([sid], [sid], [sid])

    # ---- filters --------------------------------------------------------------------

    def sources(self, own: int | None, for_select: bool) -> list[Source]:
        out = []
        row = "r" if for_select else "p"
        for leaf in self.leaves:
            if leaf.kind == "absent":
                continue
            names = (leaf.ref,) if leaf.ref else (leaf.stream,)
            sid = leaf.sid
            out.append(
                Source(
                    names,
                    leaf.info.attributes,
                    row,
                    indexed_row=_indexer(sid, for_select, sid == own, leaf.kind == "count"),
                    counted=leaf.kind == "count",
                    stream=leaf.stream,
                )
            )
        return out

    def compile_filters(self) -> None:
        for leaf in self.leaves:
            si = leaf.state.input
            sources = self.sources(leaf.sid, for_select=False)
            own = next((s for s in sources if s.indexed_row is not None and s.indexed_row(None) == "r"), None)
            if own is None:  # an absent state: its own attributes are the candidate row
                own = Source((leaf.stream,), leaf.info.attributes, "r", stream=leaf.stream)
                sources = [*sources, own]
            scope = Scope(sources, default_source=own, event_ts="p[-1]")
            cond = compile_filter_condition(self.comp, si.handlers, scope)
            if cond is not None:
                leaf.filter_src = _filter_source(cond)
                leaf.filter_fast = _fast_access(cond.fast)


def _receiver(machine: Machine | FollowedBy, stream: str) -> Callable[[Chunk], None]:
    def receive(chunk: Chunk) -> None:
        machine.receive(stream, chunk)

    return receive


def _indexer(sid: int, for_select: bool, own: bool, counted: bool) -> Callable[[EventIndex | None], str]:
    """Code for the row of state `sid`: in the select the partial is `r` and an unindexed
    reference means the first event; in a state's filter the partial is `p`, the event
    being tested is `r`, and an unindexed reference means the latest event."""

    def indexed(idx: EventIndex | None) -> str:
        if for_select:
            return _index_code(f"r[{sid}]", idx, 0)
        if own:
            return "r" if idx is None else _index_code(f"p[{sid}]", idx, -1, own_count=counted)
        return _index_code(f"p[{sid}]", idx, -1)

    return indexed


def _filter_source(cond: Compiled) -> str:
    fast = _fast_access(cond.fast)
    if fast == cond.safe:
        return f"lambda p, r: {cond.safe}"
    return f"""def f(p, r):
    try:
        return {fast}
    except (TypeError, ZeroDivisionError):
        return {cond.safe}
"""


def _fast_access(code: str) -> str:
    """Inline `_pev(p[k], -1)` / `_pev(r[k], 0)` as plain indexing for the fast path."""
    return re.sub(r"_pev\(((?:p|r)\[\d+\]), (-1|0)\)", r"\1[\2][1]", code)


def plan_state_query(
    ctx: PlanContext, query: Query, name: str, inner: dict[str, StreamInfo] | None
) -> QueryTemplate:
    """Plan one pattern or sequence query. A failure we did not foresee (a bug) becomes a
    diagnostic at the query's input: the user sees where, never a traceback."""
    try:
        return _plan_state_query(ctx, query, name, inner)
    except (PlanError, CEPError):
        raise
    except Exception as exc:
        ctx.errors.add(
            f"cannot plan this pattern ({type(exc).__name__}: {exc})",
            query.input.span,
            hint="this is a Cepheus bug; please report it with the query",
        )
        raise PlanError from exc


def _plan_state_query(
    ctx: PlanContext, query: Query, name: str, inner: dict[str, StreamInfo] | None
) -> QueryTemplate:
    si = query.input
    assert isinstance(si, StateInput)
    planner = _Planner(ctx, query, inner)
    comp = planner.comp
    planner.assign(si.root)
    links: list[tuple[str, int, int]] = []
    root = planner.shape(si.root, links)
    if ctx.errors:
        raise PlanError
    planner.compile_filters()
    leaves = planner.leaves
    current_on, expired_on = output_flags(query)
    select_sources = planner.sources(None, for_select=True)
    sel_scope = Scope(select_sources, event_ts="r[-1]")
    if query.selector.attributes is None:
        names = [n for s in select_sources for n, _ in s.attributes]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            comp.error(
                f"'select *' over this pattern would output '{clash[0]}' twice",
                si.span,
                hint="list the attributes to select",
            )
            raise PlanError
    sel, limiter, output = plan_selection(ctx, query, sel_scope, comp, select_sources, name, inner)
    ns = ctx.namespace
    filters: dict[int, Any] = {}
    for leaf in leaves:
        if leaf.filter_src is None:
            filters[leaf.sid] = None
        elif leaf.filter_src.startswith("lambda"):
            filters[leaf.sid] = eval(leaf.filter_src, ns)  # noqa: S307 - generated code
        else:
            local = dict(ns)
            exec(compile(leaf.filter_src, f"<pattern {name}>", "exec"), local)  # noqa: S102 - generated code
            filters[leaf.sid] = local["f"]
    sequence = si.kind == "sequence"
    start_ids = list(root.first)
    element = si.root
    sid_of = planner.sid_of
    fast = _followed_by_shape(si, leaves) if FAST_PATHS else False

    def build_machine(env: Env, prefix: str) -> Machine | FollowedBy:
        if fast:
            e1, e2 = leaves
            fb = FollowedBy(
                e1.stream,
                e2.stream,
                filters[e1.sid],
                filters[e2.sid],
                si.within_ms,
                "p[1]" in (e2.filter_src or ""),
            )
            fb.bind_within_timer(env.scheduler, f"{prefix}within")
            return fb
        m = Machine(len(leaves), sequence, si.within_ms, start_ids)
        nodes: list[Node] = []
        for leaf in leaves:
            filt = filters[leaf.sid]
            node: Node
            if leaf.kind == "count":
                node = CountNode(m, leaf.sid, leaf.stream, filt, leaf.lo, leaf.hi)
            elif leaf.kind == "absent":
                node = AbsentNode(m, leaf.sid, leaf.stream, filt, leaf.waiting)
                node.bind_timer(env.scheduler, f"{prefix}absent{leaf.sid}")
                node.op = leaf.logical
            elif leaf.logical is not None:
                node = LogicalNode(m, leaf.sid, leaf.stream, filt, leaf.logical)
            else:
                node = Node(m, leaf.sid, leaf.stream, filt)
            nodes.append(node)
        for leaf in leaves:
            if leaf.partner is not None:
                nodes[leaf.sid].partner = nodes[leaf.partner]  # type: ignore[attr-defined]
        for kind, a, b in links:
            if kind == "next":
                nodes[a].next = nodes[b]
                if isinstance(nodes[a], CountNode):
                    target = nodes[b]
                    ids = [target.sid]
                    partner = getattr(target, "partner", None)
                    if partner is not None:
                        ids.append(partner.sid)
                    nodes[a].next_ids = ids  # type: ignore[attr-defined]
            elif kind == "every":
                nodes[a].every_next = nodes[b]
            else:
                nodes[a].within_every = nodes[b]
        for sid in root.first:
            nodes[sid].is_start = True
        for sid in root.last:
            nodes[sid].final = True
        m.nodes = nodes
        m.bind_within_timer(env.scheduler, f"{prefix}within")
        for sid in _registration_order(element, sid_of):
            m.receivers.setdefault(leaves[sid].stream, []).append(nodes[sid])
        m.backwards = {s: list(reversed(ns)) for s, ns in m.receivers.items()}
        if sequence:
            m.root_reset = _resetter(element, nodes, sid_of)
            m.root_update = _updater(element, nodes, sid_of)
        return m

    streams: list[tuple[str, bool]] = []
    for leaf in leaves:
        key = (leaf.stream, leaf.inner)
        if key not in streams:
            streams.append(key)

    def build(env: Env) -> Built:
        states: dict[str, Any] = {}
        starts: list[Callable[[], None]] = []
        selector = sel.code.instance()
        states["selector"] = selector
        downstream = chain(*output_stages(env, name, limiter, output, states, starts))
        machine = build_machine(env, f"{env.prefix}{name}/")
        states["pattern"] = machine

        def emit(partials: list[Any]) -> None:
            for p in partials:
                q = p[:]
                out = selector.process(Chunk([q[-1]], [q]))
                if out is not None:
                    downstream.process(out)

        machine.emit = emit
        starts.append(lambda: machine.start(env.now()))
        inputs = [
            QueryInput(stream, inner_flag, _receiver(machine, stream)) for stream, inner_flag in streams
        ]
        return Built(inputs, states, starts)

    template = query_template(query, name, build, streams)
    out = query.output
    plain = plain_selection(query, sel) and current_on and not expired_on
    fusable = fast or (FAST_PATHS and _followed_by_shape(si, leaves, "sequence"))
    if fusable and limiter is None and plain and isinstance(out, InsertInto) and not out.inner:
        e1, e2 = leaves
        template.followed_by = FollowedByFusion(
            streams=(e1.stream, e2.stream),
            inner=e1.inner or e2.inner,
            fill="p[1]" in (e2.filter_src or ""),
            f1=filters[e1.sid],
            f2=filters[e2.sid],
            f1_fast=_inline_rows(e1.filter_fast),
            f2_fast=_inline_rows(e2.filter_fast),
            within=si.within_ms,
            selector=sel,
            output=output,
            project_fast=_inline_projection(sel.projection_fast),
            sequence=sequence,
        )
    return template


FAST_PATHS = True  # tests switch this off to compare the fast paths with the general machine


def _followed_by_shape(si: StateInput, leaves: list[Leaf], kind: str = "pattern") -> bool:
    """`every e1=A[..] -> e2=B[..] [within T]`: plain stream states, a pattern (or, with
    `kind="sequence"`, the sequence `every e1=A[..], e2=B[..]`)."""
    root = si.root
    return (
        si.kind == kind
        and isinstance(root, NextState)
        and isinstance(root.first, EveryState)
        and type(root.first.inner) is StreamState
        and type(root.then) is StreamState
        and len(leaves) == 2
        and all(leaf.kind == "stream" and leaf.logical is None for leaf in leaves)
    )


def _inline_projection(fast: list[str]) -> str | None:
    """A plain projection over matched (t1, r1, t, r2) tuples, or None if it reads more."""
    parts = []
    for code in fast:
        code = code.replace("r[0][0][1]", "r1").replace("r[1][0][1]", "r2").replace("r[-1]", "t")
        if re.search(r"\br\[", code) or "_pev(" in code or "_pts(" in code:
            return None
        parts.append(code)
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _inline_rows(fast: str | None) -> str | None:
    """A filter's fast code with the opening event's row as `r1` (for fused loops)."""
    if fast is None:
        return None
    return fast.replace("p[0][-1][1]", "r1").replace("p[0][0][1]", "r1")


def _registration_order(e: StateElement, sid_of: dict[int, int]) -> list[int]:
    if isinstance(e, NextState):
        return _registration_order(e.first, sid_of) + _registration_order(e.then, sid_of)
    if isinstance(e, LogicalState):
        return _registration_order(e.right, sid_of) + _registration_order(e.left, sid_of)
    if isinstance(e, EveryState):
        return _registration_order(e.inner, sid_of)
    return [sid_of[id(e)]]


def _resetter(e: StateElement, nodes: list[Node], sid_of: dict[int, int]) -> Callable[[], None]:
    if isinstance(e, NextState):
        a, b = _resetter(e.first, nodes, sid_of), _resetter(e.then, nodes, sid_of)

        def reset_next() -> None:
            b()
            a()

        return reset_next
    if isinstance(e, LogicalState):
        return nodes[sid_of[id(e.right)]].reset_state
    if isinstance(e, EveryState):
        return _resetter(e.inner, nodes, sid_of)
    return nodes[sid_of[id(e)]].reset_state


def _updater(e: StateElement, nodes: list[Node], sid_of: dict[int, int]) -> Callable[[], None]:
    if isinstance(e, NextState):
        a, b = _updater(e.first, nodes, sid_of), _updater(e.then, nodes, sid_of)

        def update_next() -> None:
            a()
            b()

        return update_next
    if isinstance(e, LogicalState):
        return nodes[sid_of[id(e.right)]].update_state
    if isinstance(e, EveryState):
        return _updater(e.inner, nodes, sid_of)
    return nodes[sid_of[id(e)]].update_state


__all__ = ["plan_state_query", "ExpressionCompiler"]
