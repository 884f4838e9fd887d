"""Turn a parsed app into a runtime: check definitions, plan every query and partition
(collecting all errors), create junctions, tables and windows, instantiate queries."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from engine.errors import QueryValidationError
from engine.plan.aggregations import plan_aggregation
from engine.plan.anonymous import plan_anonymous_query
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import PlanError
from engine.plan.fingerprints import Fingerprints
from engine.plan.joins import plan_join_query
from engine.plan.named_windows import plan_named_window
from engine.plan.on_demand import OnDemandPlanner
from engine.plan.partitions import PartitionPlan, plan_partition
from engine.plan.patterns import plan_state_query
from engine.plan.query import QueryTemplate, plan_single_query, query_name
from engine.plan.tables import plan_table, table_in_condition
from engine.query.definitions import (
    AggregationDefinition,
    FunctionDefinition,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    WindowDefinition,
    find_annotation,
)
from engine.query.expressions import Span
from engine.query.queries import (
    AnonymousInput,
    App,
    JoinInput,
    Partition,
    PartitionDefinition,
    Query,
    SingleInput,
    StateInput,
)
from engine.runtime.app import Runtime
from engine.runtime.clock import PlaybackClock, Scheduler, WallClock
from engine.runtime.junction import Junction
from engine.runtime.parts import Owners, Part, PartSpec
from engine.runtime.trigger import Trigger, parse_cron
from engine.types import AttrType


class Planner:
    def __init__(self, app: App, source: str, fuse_partitions: bool = True) -> None:
        self.app = app
        self.source = source
        self.fuse_partitions = fuse_partitions
        self.ctx = PlanContext(legacy=app.legacy, app_name=_app_name(app))
        self.ctx.table_lookup = partial(table_in_condition, self.ctx)
        self.templates: list[QueryTemplate] = []
        self.partitions: list[PartitionPlan] = []
        self.triggers: list[TriggerDefinition] = []
        self.outputs: list[str] = []
        self.named_window_plans: list[Any] = []
        self.anonymous_count = 0
        self.table_plans: list[Any] = []
        self.query_names: list[str] = []  # every query planned, inner and anonymous ones too
        self.query_sources: list[tuple[Query, list[str]]] = []  # per template: its query, names
        self.partition_sources: list[tuple[Partition, list[str]]] = []
        self.aggregation_sources: dict[str, str] = {}  # aggregation -> the stream it reads

    # ---- definitions ---------------------------------------------------------------------

    def define(self) -> None:
        ctx = self.ctx
        seen: dict[str, tuple[str, Span]] = {}
        aggregations: list[AggregationDefinition] = []
        for d in self.app.definitions:
            kind = type(d).__name__.replace("Definition", "").lower()
            if isinstance(d, PartitionDefinition):
                continue
            if d.name in seen and not (
                (isinstance(d, StreamDefinition) and self._same_stream(d))
                or (isinstance(d, TriggerDefinition) and self._trigger_stream(d))
            ):
                prev_kind, prev_span = seen[d.name]
                ctx.errors.add(
                    f"'{d.name}' is already defined as a {prev_kind} at line {prev_span.line}",
                    d.name_span,
                )
                continue
            seen[d.name] = (kind, d.name_span)
            if isinstance(d, (StreamDefinition, TableDefinition, WindowDefinition)):
                names = [a.name for a in d.attributes]
                dup = {n for n in names if names.count(n) > 1}
                for a in d.attributes:
                    if a.name in dup:
                        ctx.errors.add(f"attribute '{a.name}' is defined twice in '{d.name}'", a.span)
                        dup.discard(a.name)
                info = StreamInfo(d.name, names, [a.type for a in d.attributes], d.name_span, kind=kind)
                if isinstance(d, StreamDefinition):
                    ctx.streams[d.name] = info
                elif isinstance(d, TableDefinition):
                    ctx.table_infos[d.name] = info
                    table = plan_table(ctx, d, info)
                    if table is not None:
                        ctx.tables[d.name] = table
                else:
                    ctx.window_infos[d.name] = info
                    named = plan_named_window(ctx, d, info)
                    if named is not None:
                        ctx.windows[d.name] = named
            elif isinstance(d, TriggerDefinition):
                if d.at is not None and d.at.lower() != "start":
                    problem = parse_cron(d.at)
                    if isinstance(problem, str):
                        ctx.errors.add(f"trigger '{d.name}': {problem}", d.span)
                if d.every_ms is not None and d.every_ms <= 0:
                    ctx.errors.add(f"trigger '{d.name}' needs a positive period", d.span)
                ctx.streams[d.name] = StreamInfo(
                    d.name, ["triggered_time"], [AttrType.LONG], d.name_span, kind="trigger"
                )
                self.triggers.append(d)
            elif isinstance(d, FunctionDefinition):
                ctx.errors.add(
                    f"script function '{d.name}' in language '{d.language}' is not supported",
                    d.name_span,
                    hint="Cepheus runs no embedded scripts; use built-in functions",
                )
            elif isinstance(d, AggregationDefinition):
                aggregations.append(d)
        for d in aggregations:  # after every stream, whatever the order of the text
            planned = plan_aggregation(ctx, d)
            if planned is not None:
                ctx.aggregations[d.name], ctx.aggregation_infos[d.name] = planned
                self.aggregation_sources[d.name] = d.source.stream  # type: ignore[attr-defined]

    def _trigger_stream(self, d: TriggerDefinition) -> bool:
        """A trigger may take the name of a stream defined as exactly `(triggered_time long)`
        with no annotations: Siddhi's SiddhiApp.defineTrigger checks the trigger's stream as a
        duplicate definition, and an equal one is no duplicate."""
        prev = next(
            (p for p in self.app.definitions if p.name == d.name and isinstance(p, StreamDefinition)), None
        )
        return (
            prev is not None
            and not prev.annotations
            and [(a.name, a.type) for a in prev.attributes] == [("triggered_time", AttrType.LONG)]
            and sum(1 for p in self.app.definitions if p.name == d.name) == 2
        )

    def _same_stream(self, d: StreamDefinition) -> bool:
        prev = self.ctx.streams.get(d.name)
        if prev is None:
            return False
        return prev.names == [a.name for a in d.attributes] and prev.types == [a.type for a in d.attributes]

    # ---- execution elements --------------------------------------------------------------

    def plan_elements(self) -> None:
        for element in self.app.elements:
            first = len(self.query_names)
            if isinstance(element, Partition):
                name = f"partition{len(self.partitions) + 1}"
                try:
                    self.partitions.append(
                        plan_partition(self.ctx, element, name, self.plan_query, self.fuse_partitions)
                    )
                    self.partition_sources.append((element, self.query_names[first:]))
                except PlanError:
                    pass
                continue
            if element.partition_ref is not None:
                self.ctx.errors.add(
                    f"partition '{element.partition_ref}' is not defined",
                    element.span,
                    hint="define it with 'define partition <name> by Stream.attribute'",
                )
                continue
            try:
                template = self.plan_query(element, None)
            except PlanError:
                continue
            self.templates.append(template)
            self.query_sources.append((element, self.query_names[first:]))

    def plan_query(self, query: Query, inner: dict[str, StreamInfo] | None) -> QueryTemplate:
        name = query_name(self.ctx, query)
        self.query_names.append(name)
        source = query.input
        if isinstance(source, SingleInput):
            template = plan_single_query(self.ctx, query, name, inner)
        elif isinstance(source, JoinInput):
            template = plan_join_query(self.ctx, query, name, inner)
        elif isinstance(source, StateInput):
            template = plan_state_query(self.ctx, query, name, inner)
        elif isinstance(source, AnonymousInput):
            self.anonymous_count += 1
            stream = f"#anonymous{self.anonymous_count}"
            template = plan_anonymous_query(self.plan_query, query, name, inner, stream)
        else:  # pragma: no cover - parser produces only these
            raise PlanError
        if (
            template.output_stream is not None
            and not template.output_inner
            and not template.output_stream.startswith("#")
        ):
            if template.output_stream in self.ctx.streams and template.output_stream not in self.outputs:
                self.outputs.append(template.output_stream)
        return template

    # ---- runtime -----------------------------------------------------------------------

    def build(self, clk: PlaybackClock | WallClock, start_time: int | None) -> Runtime:
        self.define()
        self.plan_elements()
        if self.ctx.errors:
            raise QueryValidationError(self.ctx.errors.items, self.source)
        scheduler = Scheduler()
        self.ctx.clock_now[0] = clk.now
        starters: list[Callable[[], None]] = []
        runtime_holder: list[Runtime] = []

        def start_time_fn() -> int:
            started = runtime_holder[0].start_time if runtime_holder else None
            return clk.now() if started is None else started

        junctions: dict[str, Junction] = {}
        for name, info in self.ctx.streams.items():
            junctions[name] = Junction(name, info.names, info.types)
        junctions["__return__"] = Junction("__return__", [], [])
        env = Env(junctions, scheduler, clk.now, start_time_fn)
        fp = Fingerprints(self.source, self.ctx)
        definitions = {d.name: d for d in self.app.definitions}
        parts: list[Part] = []
        for tname, table in self.ctx.tables.items():
            spec = _definition_spec(fp, "table", tname, definitions[tname].span)
            parts.append(Part(spec, table.snapshot, table.restore))
        for wname, window in self.ctx.windows.items():
            window.bind(env)
            spec = _definition_spec(fp, "window", wname, definitions[wname].span)
            owners = Owners(f"window/{wname}", exact=True)
            parts.append(Part(spec, window.snapshot, window.restore, owners, [window.start]))
            starters.append(window.start)
        for aname, agg in self.ctx.aggregations.items():
            junctions[self.aggregation_sources[aname]].receivers.append(agg.receive)
            spec = _definition_spec(fp, "aggregation", aname, definitions[aname].span)
            parts.append(Part(spec, agg.snapshot, agg.restore))
        for trigger in self.triggers:
            trig = Trigger(trigger, junctions[trigger.name], scheduler, clk.now, start_time_fn)
            spec = _definition_spec(fp, "trigger", trigger.name, trigger.span)
            owners = Owners(f"trigger/{trigger.name}", exact=True)
            parts.append(Part(spec, trig.snapshot, trig.restore, owners, [trig.start]))
            starters.append(trig.start)
        for template, (query, names) in zip(self.templates, self.query_sources, strict=True):
            built = template.build(env)
            for inp in built.inputs:
                _attach(junctions, self.ctx, inp)
            if built.states:
                instance_states = built.states

                def snap(s: dict[str, Any] = instance_states) -> dict[str, Any]:
                    return {k: v.snapshot() for k, v in s.items()}

                def restore(state: dict[str, Any], s: dict[str, Any] = instance_states) -> None:
                    for k, v in s.items():
                        if k in state:
                            v.restore(state[k])

                spec = _query_spec(fp, query, [template])
                owners = Owners("", tuple(names))
                parts.append(Part(spec, snap, restore, owners, list(built.start)))
            starters.extend(built.start)
        consumed = {s for t in self.templates for s, _ in t.input_streams}
        for partition in self.partitions:
            consumed |= {s for t in partition.templates for s, inner in t.input_streams if not inner}
        keyed: dict[str, Any] = {}  # partition name -> its runtime, for the per-key state API
        for partition, (element, names) in zip(self.partitions, self.partition_sources, strict=True):
            part_rt = partition.build(env, junctions, consumed)
            keyed[partition.name] = part_rt
            spec = _partition_spec(fp, element, partition)
            owners = Owners(f"partition/{partition.name}/", tuple(names))
            parts.append(Part(spec, part_rt.snapshot, part_rt.restore, owners, list(part_rt.starters)))
            starters.extend(part_rt.starters)
        _unique_keys(parts)
        name = self.app.name or "plan"
        plan_id = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        inputs = [n for n, i in self.ctx.streams.items() if not i.implicit and i.kind == "stream"]
        exported = [
            d.name
            for d in self.app.definitions
            if isinstance(d, StreamDefinition) and find_annotation(d.annotations, "export") is not None
        ]
        # A plan that declares its interface (@Export) outputs just those streams.
        emitted = exported or self.outputs + [t.name for t in self.triggers if t.name not in self.outputs]
        rt = Runtime(
            name=name,
            plan_id=plan_id,
            junctions={k: v for k, v in junctions.items() if k != "__return__"},
            inputs=inputs,
            outputs=emitted,
            scheduler=scheduler,
            clock=clk,
            start_time=start_time,
            parts=parts,
            starters=starters,
            on_demand=OnDemandPlanner(self.ctx, clk.now),
            partitions=keyed,
        )
        runtime_holder.append(rt)
        return rt


def _definition_spec(fp: Fingerprints, kind: str, name: str, span: Span) -> PartSpec:
    return PartSpec(f"{kind}:{name}", f"{kind} '{name}'", fp.text(span), "", fp.schemas([name]))


def _outer_streams(templates: list[QueryTemplate]) -> tuple[list[str], list[str]]:
    """The streams these queries read and write outside a partition, in order."""
    inputs: list[str] = []
    outputs: list[str] = []
    for t in templates:
        inputs += [s for s, inner in t.input_streams if not inner and s not in inputs]
        out = t.output_stream
        if out is not None and not t.output_inner and not out.startswith("#") and out not in outputs:
            outputs.append(out)
    return inputs, outputs


def _query_spec(fp: Fingerprints, query: Query, templates: list[QueryTemplate]) -> PartSpec:
    """A query is found by its `@info(name)`, else by its text."""
    text = fp.text(query.span)
    inputs, outputs = _outer_streams(templates)
    name = query.name
    key = f"query:{name}" if name else f"query:#{text}"
    label = f"query '{name}'" if name else f"unnamed query '{fp.excerpt(query.span)}'"
    return PartSpec(key, label, text, fp.schemas(inputs), fp.schemas(outputs))


def _partition_spec(fp: Fingerprints, element: Partition, plan: PartitionPlan) -> PartSpec:
    """A partition is found by its `@info(name)`, else by its text (its queries included)."""
    text = fp.text(element.span)
    inputs, outputs = _outer_streams(plan.templates)
    info = find_annotation(element.annotations, "info")
    name = info.get("name") if info else None
    key = f"partition:{name}" if name else f"partition:#{text}"
    label = f"partition '{name}'" if name else f"unnamed partition '{fp.excerpt(element.span)}'"
    return PartSpec(key, label, text, fp.schemas(inputs), fp.schemas(outputs), plan.shape)


def _unique_keys(parts: list[Part]) -> None:
    """Identical unnamed queries share a key: the second is `...#2`, in plan order."""
    seen: set[str] = set()
    for i, part in enumerate(parts):
        key = part.spec.key
        n = 2
        while key in seen:
            key = f"{part.spec.key}#{n}"
            n += 1
        seen.add(key)
        if key != part.spec.key:
            parts[i] = Part(
                replace(part.spec, key=key), part.snapshot, part.restore, part.owners, part.starters
            )


def _attach(junctions: dict[str, Junction], ctx: PlanContext, inp: Any) -> None:
    if inp.stream in ctx.windows:
        ctx.windows[inp.stream].subscribe(inp.receive)
    else:
        junctions[inp.stream].receivers.append(inp.receive)


def build_runtime(
    app: App,
    source: str,
    clock: PlaybackClock | WallClock,
    start_time: int | None = None,
    fuse_partitions: bool = True,
) -> Runtime:
    """The runtime of a checked app, reading time only through `clock`, which the caller builds."""
    return Planner(app, source, fuse_partitions).build(clock, start_time)


def validate(app: App, source: str) -> None:
    planner = Planner(app, source)
    planner.define()
    planner.plan_elements()
    if planner.ctx.errors:
        raise QueryValidationError(planner.ctx.errors.items, source)


def _app_name(app: App) -> str:
    for key in ("app:name", "plan:name"):
        found = find_annotation(app.annotations, key)
        if found is not None and found.elements:
            return found.elements[0].value
    return "SiddhiApp"
