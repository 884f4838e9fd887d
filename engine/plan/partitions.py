"""Plan `partition with (...) begin ... end`: key functions for the partitioned streams,
the inner queries (planned once), and a factory that builds them per key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.compiler.stream import TIME_UNITS_MS
from engine.plan.context import Env, StreamInfo
from engine.plan.expressions import PlanError
from engine.plan.query import QueryTemplate
from engine.plan.scope import Scope, Source
from engine.query.definitions import find_annotation
from engine.query.queries import Partition, RangePartition
from engine.runtime.junction import Junction
from engine.runtime.partition import PartitionInstance, PartitionRuntime, owner_prefix
from engine.types import AttrType

if TYPE_CHECKING:
    from engine.plan.planner import Planner


@dataclass
class PartitionPlan:
    name: str
    key_sources: dict[str, str]  # stream -> generated key function source
    templates: list[QueryTemplate]
    inner: dict[str, StreamInfo]
    namespace: dict[str, Any]
    purge: tuple[int, int] | None

    def build(self, env: Env, junctions: dict[str, Junction]) -> PartitionRuntime:
        key_functions = {}
        for stream, src in self.key_sources.items():
            ns = dict(self.namespace)
            exec(compile(src, f"<partition {self.name} key>", "exec"), ns)  # noqa: S102 - generated
            key_functions[stream] = ns["key"]
        outer_streams: list[str] = []
        for t in self.templates:
            for stream, inner in t.input_streams:
                if not inner and stream not in outer_streams:
                    outer_streams.append(stream)
        unpartitioned = {s for s in outer_streams if s not in key_functions}

        def build_instance(key: Any, inst: PartitionInstance) -> None:
            inner_junctions = {n: Junction(n, i.names, i.types) for n, i in self.inner.items()}
            ienv = Env(
                env.junctions,
                env.scheduler,
                env.now,
                env.start_time,
                prefix=owner_prefix(self.name, key),
                inner=inner_junctions,
                partition_key=key,
            )
            for t in self.templates:
                built = t.build(ienv)
                for inp in built.inputs:
                    if inp.inner:
                        inner_junctions[inp.stream].receivers.append(inp.receive)
                    else:
                        j = inst.junctions.get(inp.stream)
                        if j is None:
                            g = env.junctions[inp.stream]
                            j = inst.junctions[inp.stream] = Junction(inp.stream, g.names, g.types)
                        j.receivers.append(inp.receive)
                inst.states[t.name] = built.states
                inst.starters.extend(built.start)

        runtime = PartitionRuntime(
            self.name, key_functions, build_instance, env.scheduler, env.now, self.purge, unpartitioned
        )
        for stream in outer_streams:
            junctions[stream].receivers.append(runtime.receiver(stream))
        return runtime


def _time(text: str | None, what: str) -> int:
    if text is None:
        msg = f"@purge needs '{what}'"
        raise ValueError(msg)
    parts = text.split()
    total = 0
    if len(parts) % 2 != 0 or not parts:
        msg = f"@purge {what} '{text}' is not a time such as '10 sec'"
        raise ValueError(msg)
    for amount, unit in zip(parts[0::2], parts[1::2], strict=True):
        if not amount.isdigit() or unit.lower() not in TIME_UNITS_MS:
            msg = f"@purge {what} '{text}' is not a time such as '10 sec'"
            raise ValueError(msg)
        total += int(amount) * TIME_UNITS_MS[unit.lower()]
    return total


def plan_partition(planner: Planner, partition: Partition) -> PartitionPlan:
    ctx = planner.ctx
    comp = ctx.compiler()
    name = f"partition{len(planner.partitions) + 1}"
    key_sources: dict[str, str] = {}
    for pt in partition.partition_with:
        info = ctx.streams.get(pt.stream)
        if info is None:
            comp.error(f"partitioned stream '{pt.stream}' is not defined", pt.span)
            continue
        if pt.stream in key_sources:
            comp.error(f"stream '{pt.stream}' is partitioned twice", pt.span)
            continue
        scope = Scope([Source((pt.stream,), info.attributes, "r", stream=pt.stream)], event_ts="t")
        if isinstance(pt, RangePartition):
            conds = []
            for expr, label in pt.ranges:
                c = comp.compile(expr, scope)
                if c.type is not AttrType.BOOL:
                    comp.error("a range partition needs a bool condition", expr.span)
                conds.append((comp.as_bool(c).safe, label))
            body = "\n".join(f"    if {code}:\n        out.append({label!r})" for code, label in conds)
            key_sources[pt.stream] = f"def key(t, r):\n    out = []\n{body}\n    return out\n"
        else:
            c = comp.compile(pt.expr, scope)
            key_sources[pt.stream] = f"def key(t, r):\n    return [{c.safe}]\n"
    purge = None
    ann = find_annotation(partition.annotations, "purge")
    if ann is not None and (ann.get("enable", "true") or "true").lower() == "true":
        try:
            purge = (_time(ann.get("interval"), "interval"), _time(ann.get("idle.period"), "idle.period"))
        except ValueError as exc:
            comp.error(str(exc), ann.span)
    if ctx.errors:
        raise PlanError
    inner: dict[str, StreamInfo] = {}
    templates = []
    failed = False
    for q in partition.queries:
        try:
            templates.append(planner.plan_query(q, inner, partition=partition))
        except PlanError:
            failed = True
    if failed:
        raise PlanError
    return PartitionPlan(name, key_sources, templates, inner, ctx.namespace, purge)
