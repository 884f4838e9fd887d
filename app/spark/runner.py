"""`cepheus run --engine spark`: a bounded input through a plan on Spark, with the local
engine's output.

1. The input (JSON Lines, CSV or Parquet; a file, a directory or a glob, files in name
   order) becomes items numbered in input order (`zipWithIndex`), parsed and checked
   in the tasks; one small job collects errors, clock markers and whether timestamps
   ever go back.
2. Each execution group (app/spark/groups.py) is one shuffle: its events are spread by
   partition key (or, for a stateless `@dist(parallel)` query, by timestamp) over its
   tasks, sorted by input index within each (`repartitionAndSortWithinPartitions`), and
   run through the compiled engine in the task (app/spark/tasks.py). The main group runs
   in one task over every event.
3. The driver merges what the groups emit by their tags: every stream comes out in the
   local engine's order.
"""

from __future__ import annotations

import glob
import heapq
import json
import logging
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import IO, TYPE_CHECKING, Any

import engine
from app.replay import default_start_time
from app.spark.groups import Group, plan_groups
from app.spark.session import SparkRunError, spark_session
from app.spark.tasks import Item, run_items
from engine.types import AttrType

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

JSONL = (".jsonl", ".json", ".ndjson", ".txt")


@dataclass
class RunReport:
    events: int  # items read
    written: int  # events written
    groups: list[tuple[str, int]]  # (group, tasks)


def input_files(path: str) -> list[str]:
    """A file, every visible file of a directory (Spark's `_SUCCESS` and the like left
    out), or a glob's matches; in name order, which is the input's order."""
    if os.path.isdir(path):
        found = [
            os.path.join(root, f)
            for root, _, files in os.walk(path)
            for f in files
            if not f.startswith((".", "_"))
        ]
    elif any(c in path for c in "*?["):
        found = [f for f in glob.glob(path) if os.path.isfile(f)]
    else:
        found = [path] if os.path.isfile(path) else []
    if not found:
        msg = f"{path}: no input file there (give a file, a directory or a glob)"
        raise SparkRunError(msg)
    return sorted(found)


def input_format(files: list[str]) -> str:
    kinds = set()
    for f in files:
        low = f.lower()
        kinds.add("csv" if low.endswith(".csv") else "parquet" if low.endswith(".parquet") else "jsonl")
    if len(kinds) > 1:
        msg = f"input mixes formats ({', '.join(sorted(kinds))}); give files of one format"
        raise SparkRunError(msg)
    return kinds.pop()


# ---- reading (these functions run in the tasks) -------------------------------------------


def _parse_lines(plan: str, rows: Iterable[tuple[tuple[int, str], int]]) -> Iterator[tuple[Any, ...]]:
    """(file number, line) with its index -> ("ok", index, stream, timestamp or None,
    data) or ("error", index, file number, message, line)."""
    rt = engine.compile(plan, fuse_partitions=False)
    names = set(rt.stream_names())
    for (fileno, text), idx in rows:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield ("error", idx, fileno, f"not valid JSON ({exc.msg} at column {exc.colno})", text)
            continue
        if not isinstance(obj, dict):
            yield ("error", idx, fileno, "expected a JSON object with 'stream' and 'data', or 'time'", text)
            continue
        if "stream" not in obj:
            t = obj.get("time")
            if not isinstance(t, int) or isinstance(t, bool):
                why = "a line needs 'stream' and 'data' (an event) or an integer 'time' (a clock marker)"
                yield ("error", idx, fileno, why, text)
                continue
            yield ("ok", idx, None, t, None)
            continue
        stream, data, ts = obj["stream"], obj.get("data"), obj.get("timestamp")
        if not isinstance(stream, str) or stream not in names:
            known = ", ".join(rt.stream_names()) or "none"
            yield ("error", idx, fileno, f"unknown stream {stream!r} (the plan's streams: {known})", text)
            continue
        if not isinstance(data, list):
            yield ("error", idx, fileno, "'data' must be a list of attribute values", text)
            continue
        if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool)):
            yield ("error", idx, fileno, "'timestamp' must be an integer number of ms", text)
            continue
        try:
            rt.check_row(stream, data)
        except (TypeError, ValueError) as exc:
            yield ("error", idx, fileno, str(exc), text)
            continue
        yield ("ok", idx, stream, ts, data)


_CONVERT: dict[AttrType, Callable[[Any], Any]] = {
    AttrType.INT: int,
    AttrType.LONG: int,
    AttrType.FLOAT: float,
    AttrType.DOUBLE: float,
    AttrType.BOOL: lambda v: str(v).lower() == "true",
}


def _parse_table_rows(
    plan: str, rows: Iterable[tuple[tuple[int, dict[str, Any]], int]]
) -> Iterator[tuple[Any, ...]]:
    """CSV/Parquet rows (`stream`, `timestamp` and the stream's attributes by name)."""
    rt = engine.compile(plan, fuse_partitions=False)
    names = set(rt.stream_names())
    for (fileno, row), idx in rows:
        stream, ts = row.get("stream"), row.get("timestamp")
        text = json.dumps(row, default=str)
        if stream not in names:
            known = ", ".join(rt.stream_names()) or "none"
            yield ("error", idx, fileno, f"unknown stream {stream!r} (the plan's streams: {known})", text)
            continue
        data = []
        try:
            for name, kind in rt.attributes(stream):
                value = row.get(name)
                if isinstance(value, str) and kind in _CONVERT:
                    value = _CONVERT[kind](value)
                data.append(value)
            rt.check_row(stream, data)
            ts = None if ts is None else int(ts)
        except (TypeError, ValueError) as exc:
            yield ("error", idx, fileno, str(exc), text)
            continue
        yield ("ok", idx, stream, ts, data)


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


def _numbered(fileno: int, line: str) -> tuple[int, str]:
    return fileno, line


def _numbered_row(fileno: int, row: Any) -> tuple[int, dict[str, Any]]:
    return fileno, row.asDict()


def _read(spark: SparkSession, plan: str, files: list[str], fmt: str) -> RDD[tuple[Any, ...]]:
    sc = spark.sparkContext
    if fmt == "jsonl":
        # a file is read in up to `defaultParallelism` splits: parsing runs on every core
        splits = max(1, sc.defaultParallelism // len(files))
        per_file = [
            sc.textFile(f, minPartitions=splits).map(partial(_numbered, n)) for n, f in enumerate(files)
        ]
        lines = sc.union(per_file).filter(lambda p: p[1].strip() != "")
        return lines.zipWithIndex().mapPartitions(lambda rows: _parse_lines(plan, rows))
    reader = spark.read.option("header", "true") if fmt == "csv" else spark.read
    load = reader.csv if fmt == "csv" else reader.parquet
    tables = [load(f).rdd.map(partial(_numbered_row, n)) for n, f in enumerate(files)]
    return sc.union(tables).zipWithIndex().mapPartitions(lambda rows: _parse_table_rows(plan, rows))


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
    sc = spark.sparkContext
    rt = engine.compile(plan, fuse_partitions=False)
    for s in streams or []:
        if s not in rt.stream_names():
            msg = f"--stream {s}: the plan has no such stream (streams: {', '.join(rt.stream_names())})"
            raise SparkRunError(msg)

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
        groups = plan_groups(plan, monotonic=monotonic)
        if streams:
            groups = _only(groups, streams, plan)
        events = items.filter(lambda r: r[2] is not None)
        default_parallel = parallelism or sc.defaultParallelism
        merged: list[list[tuple[Any, str]]] = []
        used: list[tuple[str, int]] = []
        for g in groups:
            if not g.outputs:
                continue
            n = 1 if not g.keyed else (g.parallel or default_parallel)
            used.append((g.name, n))
            merged.append(_run_group(g, n, events, markers, start))
    finally:
        parsed.unpersist()
        if items is not parsed:
            items.unpersist()
    written = _write(merged, out)
    count = sum(s["count"] for s in summary)
    log.info("spark run: %d items, %d events written, groups %s", count, written, used)
    return RunReport(count, written, used)


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
        from app.replay import ReplayError

        msg = f"{_line_number(files[fileno], fmt, text)}: {message}"
        raise ReplayError(msg)


_CHUNK = 50_000  # outputs a task sends to the driver in one piece


def _run_group(
    g: Group, n: int, events: RDD[tuple[Any, ...]], markers: list[Item], start: int | None
) -> list[tuple[Any, str]]:
    """One shuffle (events to their task by bucket) and one task per bucket, which sorts
    its events by input index and runs them; returns (tag, line) in the local order."""
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
        tags: list[Any] = []
        lines: list[str] = []
        piece = 0
        for tag, _, line in run_items(plan, start, outputs, items, markers):
            tags.append(tag)
            lines.append(line)
            if len(lines) >= _CHUNK:
                yield task, piece, tags, lines
                tags, lines, piece = [], [], piece + 1
        yield task, piece, tags, lines

    pieces = sorted(spread.mapPartitionsWithIndex(run).collect(), key=lambda p: (p[0], p[1]))
    per_task: list[list[tuple[Any, str]]] = [[] for _ in range(n)]
    for task, _, tags, lines in pieces:
        per_task[task].extend(zip(tags, lines, strict=True))
    if n == 1:
        return per_task[0]
    # a task's outputs come in tag order (sorting one that does is linear); merge the tasks
    for outs in per_task:
        outs.sort(key=_tag)
    return list(heapq.merge(*per_task, key=_tag))


def _bucket(b: int) -> int:
    return b


def _index(item: Item) -> int:
    return item[0]


def _tag(out: tuple[Any, str]) -> Any:
    return out[0]


def _write(groups: list[list[tuple[Any, str]]], out: IO[str]) -> int:
    """Each group's events in its order; groups interleaved by tag (each stream comes
    from one group, so only the order across streams depends on the interleaving)."""
    written = 0
    for _, line in heapq.merge(*groups, key=_tag):
        out.write(line + "\n")
        written += 1
    return written
