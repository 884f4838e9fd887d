"""On-demand queries (Siddhi 5's `runtime.query(...)`, formerly store queries), compiled
against a built plan's tables and named windows, once per call.

A read (`from T [on c] select ...`) feeds the rows that pass `on` to a fresh selector as
one chunk, so `group by`, `having`, `order by`, `limit` and `offset` mean what they mean
for a chunk in a streaming query: one row per group, aggregates over all rows. The
changing forms take the select's one row as the event of `insert into`, `delete`,
`update` and `update or insert into` and apply it as a streaming query's output would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from engine.compiler.parse_on_demand import parse_on_demand
from engine.errors import QueryValidationError
from engine.events import Chunk
from engine.plan.aggregations import plan_retrieval
from engine.plan.context import PlanContext, StreamInfo
from engine.plan.expressions import ExpressionCompiler, PlanError, suggest
from engine.plan.scope import Scope, Source
from engine.plan.selector import SelectorPlan, compile_selector
from engine.plan.tables import table_change, table_in_condition, table_source, table_target
from engine.query.queries import InsertInto, OnDemandQuery, Selector
from engine.runtime.on_demand import PreparedQuery, Row
from engine.types import AttrType

_NAME = "on-demand query"


class OnDemandPlanner:
    """Compiles on-demand queries against one runtime's tables and windows (read-only
    here: running them is the runtime's business, under its lock)."""

    def __init__(self, plan: PlanContext, now: Callable[[], int]) -> None:
        self._plan = plan
        self._now = now

    def prepare(self, text: str) -> PreparedQuery:
        """Parse and compile; raises QuerySyntaxError / QueryValidationError positioned in
        `text`."""
        query = parse_on_demand(text)
        ctx = self._context()
        comp = ctx.compiler()
        prepared: PreparedQuery | None = None
        try:
            prepared = (
                self._read(query, ctx, comp) if query.output is None else self._change(query, ctx, comp)
            )
        except PlanError:
            pass
        if ctx.errors or prepared is None:
            raise QueryValidationError(ctx.errors.items, text)
        return replace(prepared, text=text)

    def _context(self) -> PlanContext:
        """A context of its own (namespace and errors) sharing the plan's definitions, so
        what one query binds is dropped with it."""
        plan = self._plan
        ctx = PlanContext(
            functions=plan.functions,
            streams=plan.streams,
            tables=plan.tables,
            windows=plan.windows,
            table_infos=plan.table_infos,
            window_infos=plan.window_infos,
            aggregations=plan.aggregations,
            aggregation_infos=plan.aggregation_infos,
            legacy=plan.legacy,
        )
        ctx.clock_now[0] = self._now
        ctx.table_lookup = partial(table_in_condition, ctx)
        return ctx

    # ---- from T ... ----------------------------------------------------------------------

    def _read(self, query: OnDemandQuery, ctx: PlanContext, comp: ExpressionCompiler) -> PreparedQuery:
        name = query.source
        assert name is not None
        info, read = self._readable(name, query, ctx, comp)
        refs = tuple(dict.fromkeys([name, query.alias or name]))
        source = Source(refs, info.attributes, "r", stream=name, is_table=name in ctx.tables)
        scope = Scope([source], event_ts="_et")
        keep = None
        if query.on is not None:
            cond = comp.compile(query.on, scope)
            if cond.type is not AttrType.BOOL and not cond.failed:
                comp.error(f"the 'on' condition must be a bool expression, found {cond.type}", query.on.span)
            else:
                code = f"lambda ts, rows: [(_et, r) for _et, r in zip(ts, rows) if {comp.as_bool(cond).safe}]"
                keep = eval(code, ctx.namespace)  # noqa: S307 - generated code
        sel = _selector(query.selector or Selector(), scope, comp, [source])

        def run() -> list[tuple[int, Row]]:
            ts, rows = read()
            if keep is not None:
                pairs = keep(ts, rows)
                ts, rows = [t for t, _ in pairs], [r for _, r in pairs]
            return _select(sel, ts, rows)

        return PreparedQuery("", sel.names, sel.types, False, name, run, self)

    def _readable(
        self, name: str, query: OnDemandQuery, ctx: PlanContext, comp: ExpressionCompiler
    ) -> tuple[StreamInfo, Callable[[], tuple[list[int], list[Row]]]]:
        """The schema of the table, named window or aggregation `name` and a reader of its
        contents (an aggregation's: its buckets `within ... per ...`)."""
        if name in ctx.aggregations:
            return ctx.aggregation_infos[name], self._aggregation_rows(name, query, ctx, comp)
        if query.within is not None:
            span = query.within.span
            comp.error(f"'within ... per' reads aggregations; '{name}' is not one", span)
            raise PlanError
        table = ctx.tables.get(name)
        if table is not None:
            now = self._now

            def table_rows() -> tuple[list[int], list[Row]]:
                rows = table.all_rows()
                return [now()] * len(rows), rows

            return ctx.table_infos[name], table_rows
        window = ctx.windows.get(name)
        if window is not None:

            def window_rows() -> tuple[list[int], list[Row]]:
                contents = window.window.contents()
                return [t for t, _ in contents], [r for _, r in contents]

            return ctx.window_infos[name], window_rows
        if name in ctx.streams:
            comp.error(
                f"'{name}' is a stream: on-demand queries read tables and named windows",
                query.source_span,
                hint="a stream keeps no events; insert them into a table or a 'define window'",
            )
        else:
            comp.error(
                f"'{name}' is not a table, named window or aggregation of this plan",
                query.source_span,
                hint=suggest(name, [*ctx.tables, *ctx.windows, *ctx.aggregations]),
            )
        raise PlanError

    def _aggregation_rows(
        self, name: str, query: OnDemandQuery, ctx: PlanContext, comp: ExpressionCompiler
    ) -> Callable[[], tuple[list[int], list[Row]]]:
        if query.within is None or query.per is None:
            comp.error(
                f"reading aggregation '{name}' needs 'within <time range> per <duration>'",
                query.source_span,
                hint='e.g. from A within "2026-**-** **:**:**" per "days"',
            )
            raise PlanError
        agg = ctx.aggregations[name]
        scope = Scope([], event_ts="_et")
        find = plan_retrieval(ctx, comp, agg, query.within, query.within_end, query.per, scope, _NAME)
        if find is None:
            raise PlanError
        now = self._now

        def aggregation_rows() -> tuple[list[int], list[Row]]:
            rows = find(None)
            return [now()] * len(rows), rows

        return aggregation_rows

    # ---- select ... insert / delete / update / update or insert ------------------------------

    def _change(self, query: OnDemandQuery, ctx: PlanContext, comp: ExpressionCompiler) -> PreparedQuery:
        out = query.output
        assert out is not None
        store, info = table_target(ctx, out.target, out.target_span, comp)
        names: list[str] = []
        types: list[AttrType] = []
        sel: SelectorPlan | None = None
        if query.selector is not None:
            if query.selector.attributes is None:
                comp.error("'select *' needs a 'from': name the values of the row", query.selector.span)
                raise PlanError
            sel = _selector(query.selector, Scope([], event_ts="_et"), comp, [])
            names, types = sel.names, sel.types
        now = self._now

        def event() -> tuple[list[int], list[Row]]:
            t = now()
            if sel is None:
                return [t], [()]
            pairs = _select(sel, [t], [()])
            return [t for t, _ in pairs], [r for _, r in pairs]

        apply: Callable[[Chunk], None]
        if isinstance(out, InsertInto):
            if types != info.types:
                fmt = _signature
                comp.error(
                    f"the select {fmt(list(zip(names, types, strict=True)))} does not match "
                    f"table '{out.target}' {fmt(info.attributes)}",
                    out.target_span,
                )
                raise PlanError

            apply = lambda chunk: store.insert(chunk.rows)  # noqa: E731

        else:
            event_source = Source(
                ("__output__",), list(zip(names, types, strict=True)), "r", stream="__output__"
            )
            scope = Scope([event_source], qualified_only=[table_source(out.target, info)], event_ts="_et")
            apply = table_change(ctx, out, store, info, names, types, scope, comp)

        def run() -> list[tuple[int, Row]]:
            ts, rows = event()
            if rows:
                apply(Chunk(ts, rows))
            return []

        return PreparedQuery("", [], [], True, out.target, run, self)


def _selector(selector: Selector, scope: Scope, comp: ExpressionCompiler, star: list[Any]) -> SelectorPlan:
    return compile_selector(
        selector, scope, comp, current_on=True, expired_on=False, star_sources=star, query_name=_NAME
    )


def _select(sel: SelectorPlan, ts: list[int], rows: list[Row]) -> list[tuple[int, Row]]:
    """The selector's output for `rows` as one chunk, from a fresh state."""
    if not rows:
        return []
    out = sel.code.instance().process(Chunk(ts, rows))
    return [] if out is None else list(zip(out.ts, out.rows, strict=True))


def _signature(pairs: list[tuple[str, AttrType]]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in pairs) + ")"
