"""Plan `partition with (...) begin ... end`: key functions for the partitioned streams,
the inner queries (planned once), and a factory that builds them per key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.compiler.stream import TIME_UNITS_MS
from engine.events import Chunk
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import PlanError
from engine.plan.fusion import FollowedByFusion, WindowFusion
from engine.plan.query import PlanQuery, QueryTemplate
from engine.plan.scope import Scope, Source
from engine.query.definitions import find_annotation
from engine.query.queries import Partition, RangePartition
from engine.runtime.junction import Junction
from engine.runtime.keyed_followed_by import KeyedFollowedBy
from engine.runtime.keyed_sequence import KeyedSequence
from engine.runtime.keyed_window import KeyedWindow
from engine.runtime.partition import PartitionInstance, PartitionRuntime, owner_prefix
from engine.types import AttrType


@dataclass
class PartitionPlan:
    name: str
    key_sources: dict[str, str]  # stream -> generated router source
    templates: list[QueryTemplate]
    inner: dict[str, StreamInfo]
    namespace: dict[str, Any]
    purge: tuple[int, int] | None
    value_key: str | None = None  # code of the key when the partition is one value key
    fusion: FollowedByFusion | WindowFusion | None = None  # run as one keyed operator (plan/fusion.py)

    @property
    def shape(self) -> str:
        """How the partition runs, where that changes its state's form: each fused operator
        keeps its state in a shape of its own (a snapshot restores only into the same)."""
        if self.fusion is None:
            return ""
        if isinstance(self.fusion, WindowFusion):
            return "as one keyed window operator"
        if self.fusion.sequence:
            return "as one keyed sequence operator"
        return "as one keyed operator"

    @property
    def state_key(self) -> str:
        """Where the runtime's snapshot keeps this partition: the fused operator's state has
        its own shape, so it has its own key."""
        if self.fusion is None:
            return f"partition/{self.name}"
        if isinstance(self.fusion, WindowFusion):
            return f"partition/{self.name}/fused-window"
        return f"partition/{self.name}/fused" + ("-sequence" if self.fusion.sequence else "")

    def _fused_window(
        self, wf: WindowFusion, env: Env, junctions: dict[str, Junction], consumed: set[str]
    ) -> KeyedWindow:
        stream = next(iter(self.key_sources))
        parts = wf.parts
        op = KeyedWindow(
            self.name,
            wf.query,
            self.value_key or "None",
            wf.window,
            wf.size,
            wf.ts_index,
            wf.filter_fast,
            wf.filter_safe,
            parts.init,
            parts.add,
            parts.remove,
            parts.project,
            wf.output(env),
            self.templates[0].output_stream not in consumed,
            env.scheduler,
            env.now,
            self.purge,
            self.namespace,
        )
        junctions[stream].receivers.append(op.receive)
        return op

    def _fused(
        self, fb: FollowedByFusion, env: Env, junctions: dict[str, Junction], consumed: set[str]
    ) -> KeyedFollowedBy:
        stream = next(iter(self.key_sources))
        selector = fb.selector.code.instance()
        out = fb.output(env)

        def select(partials: list[Any]) -> None:
            res = selector.process(Chunk([p[2] for p in partials], partials))
            if res is not None:
                out(res)

        op = (KeyedSequence if fb.sequence else KeyedFollowedBy)(
            self.name,
            self.value_key or "None",
            fb.f1,
            fb.f2,
            fb.f1_fast,
            fb.f2_fast,
            fb.within,
            select,
            fb.project_fast,
            out,
            self.templates[0].output_stream not in consumed,
            env.scheduler,
            env.now,
            self.purge,
            self.namespace,
        )
        junctions[stream].receivers.append(op.receive)
        return op

    def build(self, env: Env, junctions: dict[str, Junction], consumed: set[str] | None = None) -> Any:
        if isinstance(self.fusion, WindowFusion):
            return self._fused_window(self.fusion, env, junctions, consumed or set())
        if self.fusion is not None:
            return self._fused(self.fusion, env, junctions, consumed or set())
        routers = {}
        for stream, src in self.key_sources.items():
            ns = dict(self.namespace)
            exec(compile(src, f"<partition {self.name} router>", "exec"), ns)  # noqa: S102 - generated
            routers[stream] = ns["route"]
        outer_streams: list[str] = []
        for t in self.templates:
            for stream, inner in t.input_streams:
                if not inner and stream not in outer_streams:
                    outer_streams.append(stream)
        unpartitioned = {s for s in outer_streams if s not in routers}

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
                        inst.inputs.setdefault(inp.stream, []).append(inp.receive)
                inst.states[t.name] = built.states
                inst.starters.extend(built.start)

        runtime = PartitionRuntime(
            self.name, routers, build_instance, env.scheduler, env.now, self.purge, unpartitioned
        )
        for stream in outer_streams:
            junctions[stream].receivers.append(runtime.receiver(stream))
        return runtime


def _fusion(
    templates: list[QueryTemplate], key_sources: dict[str, str], value_key: str | None
) -> FollowedByFusion | WindowFusion | None:
    """The partition is one value key over S and one query on S of a shape plan/fusion.py
    describes."""
    if len(templates) != 1 or value_key is None or templates[0].output_stream in key_sources:
        return None  # (a query feeding its own input runs per key, as it always did)
    fb = templates[0].followed_by
    if fb is not None and fb.fits_partition(list(key_sources)):
        return fb
    wf = templates[0].keyed_window
    return wf if wf is not None and wf.fits_partition(list(key_sources)) else None


def _value_router(key: str) -> str:
    """Runs of consecutive events with one key go together; a null key drops the event."""
    return f"""
def route(chunk, deliver):
    run_key = None
    run_ts = []
    run_rows = []
    for t, r in zip(chunk.ts, chunk.rows):
        k = {key}
        if k is None:
            continue
        if run_rows and k == run_key:
            run_ts.append(t)
            run_rows.append(r)
        else:
            if run_rows:
                deliver(run_key, run_ts, run_rows)
            run_key = k
            run_ts = [t]
            run_rows = [r]
    if run_rows:
        deliver(run_key, run_ts, run_rows)
"""


def _range_router(conds: list[tuple[str, str]]) -> str:
    """An event goes to every range whose condition holds, in declared order."""
    tests = "\n".join(
        f"        if {code}:\n            deliver({label!r}, [t], [r])" for code, label in conds
    )
    return f"""
def route(chunk, deliver):
    for t, r in zip(chunk.ts, chunk.rows):
{tests}
"""


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


def plan_partition(
    ctx: PlanContext, partition: Partition, name: str, plan_query: PlanQuery, fuse: bool = True
) -> PartitionPlan:
    """`plan_query` plans each inner query (the planner's own, handed down); `fuse` lets a
    partition of one query of a shape plan/fusion.py describes run as one keyed operator."""
    comp = ctx.compiler()
    key_sources: dict[str, str] = {}
    value_keys: list[str] = []
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
            key_sources[pt.stream] = _range_router([(code, label) for code, label in conds])
        else:
            c = comp.compile(pt.expr, scope)
            key_sources[pt.stream] = _value_router(c.safe)
            value_keys.append(c.safe)
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
            templates.append(plan_query(q, inner))
        except PlanError:
            failed = True
    if failed:
        raise PlanError
    value_key = value_keys[0] if len(value_keys) == 1 and len(partition.partition_with) == 1 else None
    fusion = _fusion(templates, key_sources, value_key) if fuse else None
    return PartitionPlan(name, key_sources, templates, inner, ctx.namespace, purge, value_key, fusion)
