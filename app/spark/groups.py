"""Execution groups: how a plan splits for Spark.

A group is a sub-plan (the plan's text with the other groups' queries blanked out, every
definition kept, so positions in error messages still match the file) that runs in one
or more Spark tasks. A `partition with (v of S)` and a stateless query marked
`@dist(parallel='N')` run as a *keyed* group in N tasks, each over a disjoint set of keys
(or, for a stateless query, of timestamps); everything else runs as the one *main* group.
A keyed group must read only the plan's source streams (defined, never inserted into),
touch no table, named window or aggregation, and write streams that no other query reads
or writes: then its output merges back with the main group's by each event's place in
the input, and every stream keeps the local engine's order (see app/spark/tasks.py).
A partition or query that does not qualify stays in the main group, which is always right.

Imports the engine's planner (to know what each query reads and writes), not pyspark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import engine
from engine.plan.planner import Planner
from engine.query.definitions import Annotation, find_annotation
from engine.query.expressions import Span
from engine.query.queries import Partition, Query, RangePartition

MAIN = "main"


@dataclass(frozen=True)
class Group:
    name: str  # `main`, a partition's `@info(name)` or `partitionN`, a query's name
    plan: str  # the sub-plan's text
    inputs: tuple[str, ...]  # the plan's source streams it reads (main: every stream)
    outputs: tuple[str, ...]  # the plan's output streams it writes
    parallel: int  # tasks; 0 = the runner's default parallelism
    keyed_by: str | None = None  # the partition (in the sub-plan) whose key spreads events
    why_main: tuple[str, ...] = field(default=(), compare=False)  # what stayed in main, why

    @property
    def keyed(self) -> bool:
        """Runs in several tasks: a partition, or a stateless query with parallel > 1."""
        return self.keyed_by is not None or self.parallel > 1

    @property
    def stateless(self) -> bool:
        return self.keyed_by is None and self.parallel > 1


def _offsets(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _blank(text: str, spans: list[Span]) -> str:
    """The text with each span replaced by spaces (line breaks kept)."""
    starts = _offsets(text)
    chars = list(text)
    for s in spans:
        a = starts[s.line - 1] + s.col - 1
        b = starts[s.end_line - 1] + s.end_col - 1
        for i in range(a, min(b, len(chars))):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def _excerpt(text: str, span: Span) -> str:
    starts = _offsets(text)
    return text[starts[span.line - 1] + span.col - 1 : starts[span.end_line - 1] + span.end_col - 1]


def _parallel(annotations: list[Annotation]) -> int | None:
    dist = find_annotation(annotations, "dist")
    if dist is None:
        return None
    value = dist.get("parallel")
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        return None
    return n if n >= 1 else None


def plan_groups(plan_text: str, *, monotonic: bool = True) -> list[Group]:
    """The plan's execution groups, main first. With `monotonic=False` (an input whose
    timestamps go back) everything runs as the main group: a keyed task could not tell
    where in the input a timer of one of its keys fired."""
    app = engine.parse(plan_text)
    planner = Planner(app, plan_text)
    planner.define()
    planner.plan_elements()
    rt = engine.compile(plan_text, fuse_partitions=False)
    outputs = list(rt.output_streams)
    if not monotonic:
        return [Group(MAIN, plan_text, tuple(rt.stream_names()), tuple(outputs), 1)]
    ctx = planner.ctx
    shared = set(ctx.table_infos) | set(ctx.window_infos) | set(ctx.aggregations)
    shared_re = re.compile(r"\b(" + "|".join(map(re.escape, sorted(shared))) + r")\b") if shared else None

    # what each element reads and writes outside itself
    io: list[tuple[Query | Partition, set[str], set[str]]] = []
    templates = iter(planner.templates)
    partitions = iter(planner.partitions)
    for element in app.elements:
        if isinstance(element, Partition):
            if not any(src is element for src, _ in planner.partition_sources):
                continue
            p = next(partitions)
            reads = {s for t in p.templates for s, inner in t.input_streams if not inner}
            writes = {
                t.output_stream
                for t in p.templates
                if t.output_stream is not None and not t.output_inner and not t.output_stream.startswith("#")
            }
        else:
            if not any(src is element for src, _ in planner.query_sources):
                continue
            t = next(templates)
            reads = {s for s, inner in t.input_streams if not inner}
            writes = {t.output_stream} if t.output_stream and not t.output_stream.startswith("#") else set()
        io.append((element, reads, writes))
    written = [w for _, _, ws in io for w in ws]
    sources = {n for n, i in ctx.streams.items() if i.kind == "stream" and n not in written}

    keyed: list[Group] = []
    kept: list[str] = []
    taken: list[Span] = []
    for n, (element, reads, writes) in enumerate(io):
        others_read = {s for j, (_, rs, _) in enumerate(io) if j != n for s in rs}
        others_write = {s for j, (_, _, ws) in enumerate(io) if j != n for s in ws}
        text = _excerpt(plan_text, element.span)
        label = text.split("\n")[0][:60]
        if isinstance(element, Partition):
            parallel = _parallel(element.annotations) or max(
                (_parallel(q.annotations) or 0 for q in element.queries), default=0
            )
            keyed_streams = {pt.stream for pt in element.partition_with}
            if any(isinstance(pt, RangePartition) for pt in element.partition_with):
                kept.append(f"{label}: a range partition sends an event to several keys")
                continue
            if not reads <= keyed_streams:
                kept.append(f"{label}: it reads a stream it does not partition")
                continue
        else:
            parallel = _parallel(element.annotations) or 0
            if parallel <= 1:
                continue
            if not _stateless(plan_text, element.span, io, n):
                kept.append(f"{label}: @dist(parallel) on a query that keeps state needs a partition")
                continue
        if not reads <= sources:
            kept.append(f"{label}: it reads a stream another query writes")
            continue
        if writes & (others_read | others_write | sources) or not writes <= set(ctx.streams):
            kept.append(f"{label}: another query reads or writes what it writes")
            continue
        if shared_re is not None and shared_re.search(text):
            kept.append(f"{label}: it uses a table, named window or aggregation")
            continue
        others = [e.span for j, (e, _, _) in enumerate(io) if j != n]
        name = _element_name(element, len([g for g in keyed if g.keyed_by]) + 1)
        keyed.append(
            Group(
                name,
                _blank(plan_text, others),
                tuple(sorted(reads)),
                tuple(s for s in outputs if s in writes),
                parallel,
                "partition1" if isinstance(element, Partition) else None,
            )
        )
        taken.append(element.span)
    main_outputs = tuple(s for s in outputs if not any(s in g.outputs for g in keyed))
    main = Group(
        MAIN, _blank(plan_text, taken), tuple(rt.stream_names()), main_outputs, 1, why_main=tuple(kept)
    )
    return [main, *keyed]


def _element_name(element: Query | Partition, n: int) -> str:
    info = find_annotation(element.annotations, "info")
    name = info.get("name") if info else None
    if name:
        return name
    return f"partition{n}" if isinstance(element, Partition) else f"query@{element.span.line}"


def _stateless(
    plan_text: str, span: Span, io: list[tuple[Query | Partition, set[str], set[str]]], n: int
) -> bool:
    """The query alone keeps no state: a plan of it and the definitions has no query part."""
    others = [e.span for j, (e, _, _) in enumerate(io) if j != n]
    rt = engine.compile(_blank(plan_text, others), fuse_partitions=False)
    return not any(part.spec.key.startswith("query:") for part, _ in rt.capture().states)
