"""`cepheus run --engine spark`: a bounded input through a plan on Spark, with the local
engine's output.

The common case (no bad line, every event stamped, timestamps never going back) runs in
one Spark job (app/spark/onejob.py). The general path, here, handles the rest exactly:

1. The input (JSON Lines, CSV or Parquet; a file, a directory or a glob, files in name
   order) becomes items numbered in input order (`zipWithIndex`), parsed and checked
   in the tasks (app/spark/reading.py); one small job collects errors, clock markers
   and whether timestamps ever go back.
2. Each execution group (app/spark/groups.py) is one shuffle: its events are spread by
   partition key (or, for a stateless `@dist(parallel)` query, by timestamp) over its
   tasks, sorted by input index within each, and run through the compiled engine in the
   task (app/spark/tasks.py). The main group runs in one task over every event.

Either way, the driver merges what the tasks emit by their tags: every stream comes out
in the local engine's order.
"""

from __future__ import annotations

import heapq
import json
import logging
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import IO, TYPE_CHECKING, Any

import engine
from app.replay import ReplayError, default_start_time
from app.spark.errors import SparkRunError
from app.spark.groups import Group, plan_groups
from app.spark.onejob import PIECE, Lane, run_one_job
from app.spark.reading import input_files, input_format, parse, raw_input, with_files
from app.spark.session import spark_session
from app.spark.tasks import Item, in_pieces, run_items

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


@dataclass
class RunReport:
    events: int  # items read
    written: int  # events written
    groups: list[tuple[str, int]]  # (group, tasks)


# ---- the general path (these functions run in the tasks) ----------------------------------


def _summary(part: int, rows: Iterable[tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    first_error = None
    missing = 0
    first_ts = last_ts = None
    monotonic = True
    markers: list[Item] = []
    count = 0
    first_raw: tuple[int, int | None] | None = None
    for r in rows:
        if r[0] == "error":
            if first_error is None:
                first_error = r
            continue
        _, idx, stream, ts, _ = r
        count += 1
        if first_raw is None:
            first_raw = (idx, ts)
        if ts is None:
            missing += 1
            continue
        if stream is None:
            markers.append((idx, None, ts, None))
        if last_ts is not None and ts < last_ts:
            monotonic = False
        if first_ts is None:
            first_ts = ts
        last_ts = ts
    yield {
        "part": part,
        "error": first_error,
        "missing": missing,
        "first": first_ts,
        "last": last_ts,
        "monotonic": monotonic,
        "markers": markers,
        "count": count,
        "first_raw": first_raw,
    }


def _fill_timestamps(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """One task over the whole input: an event without a timestamp takes the last one."""
    last: int | None = None
    for r in rows:
        _, idx, stream, ts, data = r
        if stream is None:
            last = ts if last is None else max(last, ts)
        elif ts is None:
            if last is None:
                yield ("error", idx, r[2], "the first event needs a 'timestamp' (ms)", json.dumps(data))
                continue
            ts = last
        else:
            last = ts
        yield ("ok", idx, stream, ts, data)


def _bucketed(group: Group, parallel: int, items: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, Item]]:
    """Each event of a keyed group with its task: its partition key's (a stable hash of
    it, so every event of a key meets the same runtime), or its timestamp's for a
    stateless query (events of one timestamp stay one chunk)."""
    keys: dict[str, Any] = {}
    rt = None
    if group.keyed_by is not None:
        rt = engine.compile(group.plan, fuse_partitions=False)
        keys = {s: rt.partition_key_function(group.keyed_by, s) for s in group.inputs}
    for _, idx, stream, ts, data in items:
        if rt is None:
            yield zlib.crc32(str(ts).encode()) % parallel, (idx, stream, ts, data)
            continue
        fn = keys.get(stream)
        if fn is None:
            continue
        for key in fn(rt.check_row(stream, data), ts):
            yield zlib.crc32(repr(key).encode()) % parallel, (idx, stream, ts, data)


# ---- the run -------------------------------------------------------------------------------


def _read(spark: SparkSession, plan: str, files: list[str], fmt: str) -> RDD[tuple[Any, ...]]:
    raw, file_of = raw_input(spark, files, fmt)
    numbered = raw.mapPartitionsWithIndex(partial(with_files, file_of)).zipWithIndex()
    return numbered.mapPartitions(partial(parse, plan, fmt))


def _line_number(path: str, fmt: str, text: str) -> str:
    if fmt != "jsonl":
        return path
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.rstrip("\n") == text:
                return f"{path}:{n}"
    return path


def run_on_spark(
    plan: str,
    input_path: str,
    out: IO[str],
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    start_time: int | None = None,
    streams: list[str] | None = None,
    parallelism: int | None = None,
) -> RunReport:
    """Run `plan` over the input on Spark and write what it emits to `out`, as
    `cepheus run` does locally. `parallelism`: tasks of a keyed group without
    `@dist(parallel)` (default: Spark's default parallelism)."""
    files = input_files(input_path)
    fmt = input_format(files)
    spark = spark or spark_session(master, f"cepheus run {engine.parse(plan).name or 'plan'}")
    rt = engine.compile(plan, fuse_partitions=False)
    for s in streams or []:
        if s not in rt.stream_names():
            msg = f"--stream {s}: the plan has no such stream (streams: {', '.join(rt.stream_names())})"
            raise SparkRunError(msg)
    default_parallel = parallelism or spark.sparkContext.defaultParallelism
    lanes: list[Lane] = []
    for g in _chosen(plan_groups(plan, monotonic=True), streams, plan):
        n = 1 if not g.keyed else (g.parallel or default_parallel)
        lanes.append(Lane(g, sum(lane.tasks for lane in lanes), n))
    done = run_one_job(spark, plan, files, fmt, lanes, start_time)
    if done is None:
        log.info("spark run: the input needs the general path")
        outputs, count, lanes = _general(spark, plan, files, fmt, start_time, streams, default_parallel)
    else:
        outputs, count = done
    written = _write([task for group in outputs for task in group], out)
    used = [(lane.group.name, lane.tasks) for lane in lanes]
    log.info("spark run: %d items, %d events written, groups %s", count, written, used)
    return RunReport(count, written, used)


def _chosen(groups: list[Group], streams: list[str] | None, plan: str) -> list[Group]:
    """The groups that write something (`--stream`: something asked for)."""
    if streams:
        groups = _only(groups, streams, plan)
    return [g for g in groups if g.outputs]


def _general(
    spark: SparkSession,
    plan: str,
    files: list[str],
    fmt: str,
    start_time: int | None,
    streams: list[str] | None,
    default_parallel: int,
) -> tuple[list[list[list[tuple[Any, str]]]], int, list[Lane]]:
    """Any input: the first bad line reported, missing timestamps filled, timestamps going
    back run as the main group alone."""
    parsed = _read(spark, plan, files, fmt).cache()
    items = parsed
    try:
        summary = sorted(parsed.mapPartitionsWithIndex(_summary).collect(), key=lambda s: s["part"])
        _raise_first_error(summary, files, fmt)
        first_raw = next((s["first_raw"] for s in summary if s["first_raw"] is not None), None)
        if any(s["missing"] for s in summary):
            items = parsed.coalesce(1).mapPartitions(_fill_timestamps).cache()
            summary = [next(iter(items.mapPartitionsWithIndex(_summary).collect()))]
            _raise_first_error(summary, files, fmt)
        markers = sorted(m for s in summary for m in s["markers"])
        monotonic = all(s["monotonic"] for s in summary)
        bounds = [(s["first"], s["last"]) for s in summary if s["first"] is not None]
        monotonic = monotonic and all(a[1] <= b[0] for a, b in zip(bounds, bounds[1:], strict=False))
        start = start_time
        if start is None and first_raw is not None:
            start = default_start_time(first_raw[1])
        events = items.filter(lambda r: r[2] is not None)
        outputs: list[list[list[tuple[Any, str]]]] = []
        lanes: list[Lane] = []
        for g in _chosen(plan_groups(plan, monotonic=monotonic), streams, plan):
            n = 1 if not g.keyed else (g.parallel or default_parallel)
            lanes.append(Lane(g, sum(lane.tasks for lane in lanes), n))
            outputs.append(_run_group(g, n, events, markers, start))
    finally:
        parsed.unpersist()
        if items is not parsed:
            items.unpersist()
    return outputs, sum(s["count"] for s in summary), lanes


def _only(groups: list[Group], streams: list[str], plan: str) -> list[Group]:
    """The groups writing just `streams` (`--stream`); a stream no group writes as an
    output (an input, or one other queries read) is written by the whole plan as one group."""
    if not all(any(s in g.outputs for g in groups) for s in streams):
        rt = engine.compile(plan, fuse_partitions=False)
        return [Group(groups[0].name, plan, tuple(rt.stream_names()), tuple(streams), 1)]
    return [replace(g, outputs=tuple(s for s in g.outputs if s in streams)) for g in groups]


def _raise_first_error(summary: list[dict[str, Any]], files: list[str], fmt: str) -> None:
    errors = [s["error"] for s in summary if s["error"] is not None]
    if errors:
        _, _, fileno, message, text = min(errors, key=lambda e: e[1])
        msg = f"{_line_number(files[fileno], fmt, text)}: {message}"
        raise ReplayError(msg)


def _run_group(
    g: Group, n: int, events: RDD[tuple[Any, ...]], markers: list[Item], start: int | None
) -> list[list[tuple[Any, str]]]:
    """One shuffle (events to their task by bucket) and one task per bucket, which sorts
    its events by input index and runs them; returns each task's (tag, line) in tag order."""
    plan, outputs = g.plan, list(g.outputs)
    if g.keyed:
        inputs = set(g.inputs)
        mine = events.filter(lambda r: r[2] in inputs).mapPartitions(lambda rows: _bucketed(g, n, rows))
    else:
        mine = events.map(lambda r: (0, (r[1], r[2], r[3], r[4])))
    # a partitioner on the bucket and a sort in the task: PySpark's own sorted shuffle
    # (repartitionAndSortWithinPartitions) costs more than the engine's work here
    spread = mine.partitionBy(n, _bucket)

    def run(task: int, rows: Iterable[tuple[int, Item]]) -> Iterator[tuple[int, int, list[Any], list[str]]]:
        items = sorted((item for _, item in rows), key=_index)
        for piece, tags, lines in in_pieces(
            run_items(plan, start, outputs, items, markers, checked=True), PIECE
        ):
            yield task, piece, tags, lines

    pieces = sorted(spread.mapPartitionsWithIndex(run).collect(), key=lambda p: (p[0], p[1]))
    per_task: list[list[tuple[Any, str]]] = [[] for _ in range(n)]
    for task, _, tags, lines in pieces:
        per_task[task].extend(zip(tags, lines, strict=True))
    if n > 1:  # one task runs like the local engine: its order is the local one (tags too
        # are, unless timestamps go back); several come almost in tag order (near linear)
        for outs in per_task:
            outs.sort(key=_tag)
    return per_task


def _bucket(b: int) -> int:
    return b


def _index(item: Item) -> int:
    return item[0]


def _tag(out: tuple[Any, str]) -> Any:
    return out[0]


def _write(tasks: list[list[tuple[Any, str]]], out: IO[str]) -> int:
    """Every task's outputs (each in tag order) merged by tag. Each stream comes from one
    group, and its tasks' tags restore its local order; ties (a clock marker's timers in
    several tasks) go in group, then task order."""
    written = 0
    lines: list[str] = []
    for _, line in heapq.merge(*tasks, key=_tag):
        lines.append(line)
        if len(lines) >= 4096:
            out.write("\n".join(lines) + "\n")
            written += len(lines)
            lines.clear()
    if lines:
        out.write("\n".join(lines) + "\n")
        written += len(lines)
    return written
