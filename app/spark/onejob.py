"""The bounded runner's common case in one Spark job: an input without errors, with a
timestamp on every event, whose timestamps never go back.

Map side, one task per input split: parse and check the lines, send each event to the
task of every group that reads it (its bucket, as app/spark/groups.py spreads it), in
batches, and end with the split's summary (items, first and last timestamps, clock
markers, whether it found a problem) to every task of every group. Reduce side, one task
per bucket: from the summaries, each event's index in the whole input (the splits' item
counts before its own) and the start time; then the engine over its events
(app/spark/tasks.py). If a summary shows a problem, every task gives up at once, and the
runner takes the general path (app/spark/runner.py), which reports the first bad line,
fills missing timestamps and runs out-of-order inputs as one group.

There is no separate pass to number the lines, to collect errors and markers, or to cache
parsed items: the input is read and parsed once, and pickled once on its way to the
engine. Items cross the shuffle as checked rows, so the tasks do not check them again.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import engine
from app.replay import default_start_time
from app.spark.groups import Group
from app.spark.reading import parse, raw_input, with_files
from app.spark.tasks import Item, in_pieces, run_items

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BATCH = 8192  # events per shuffle record
PIECE = 50_000  # outputs a task sends to the driver in one record


@dataclass(frozen=True)
class Lane:
    """A group's place in the shuffle: its tasks are reduce partitions first .. first+tasks-1."""

    group: Group
    first: int
    tasks: int


@dataclass(frozen=True)
class Summary:
    items: int  # events and markers
    first: int | None  # first and last timestamps
    last: int | None
    markers: list[tuple[int, int]]  # (row in the split, time)
    fine: bool  # no error, every event stamped, timestamps never go back


Outputs = list[list[tuple[Any, str]]]  # per group: (tag, line) in the local order


Route = Callable[[list[Item]], list[list[int]]]  # a batch of events -> each one's reduce partitions


def _bucketing(lane: Lane) -> Route:
    """The lane's reduce partitions of each event of a batch: by its partition key (a
    stable hash of it, so every event of a key meets the same runtime), or by its
    timestamp for a stateless query (events of one timestamp stay one chunk)."""
    g, first, n = lane.group, lane.first, lane.tasks
    if not g.keyed:
        return lambda items: [[first]] * len(items)
    if g.keyed_by is None:
        inputs = set(g.inputs)

        def by_time(items: list[Item]) -> list[list[int]]:
            return [[first + zlib.crc32(str(t).encode()) % n] if s in inputs else [] for _, s, t, _ in items]

        return by_time
    rt = engine.compile(g.plan, fuse_partitions=False)
    keyed_by = g.keyed_by
    keys = {s: fn for s in g.inputs if (fn := rt.partition_keys_function(keyed_by, s)) is not None}
    memo: dict[Any, int] = {}
    alone: dict[Any, list[int]] = {}  # a key -> [its bucket], shared by its events (read only)

    def bucket(key: Any) -> int:
        try:
            return memo[key]
        except KeyError:
            b = memo[key] = first + zlib.crc32(repr(key).encode()) % n
        except TypeError:  # an unhashable key
            b = first + zlib.crc32(repr(key).encode()) % n
        return b

    def dests(ks: list[Any]) -> list[int]:
        if len(ks) == 1:  # most events: one key, seen before
            try:
                return alone[ks[0]]
            except KeyError:
                d = alone[ks[0]] = [bucket(ks[0])]
                return d
            except TypeError:
                pass
        return [bucket(k) for k in ks]

    def by_key(items: list[Item]) -> list[list[int]]:
        out: list[list[int]] = [[]] * len(items)
        for stream, fn in keys.items():
            if items and all(it[1] == stream for it in items):  # one stream: no index to keep
                return list(map(dests, fn([it[3] for it in items], [it[2] for it in items])))
            at = [i for i, it in enumerate(items) if it[1] == stream]
            if at:
                found = fn([items[i][3] for i in at], [items[i][2] for i in at])
                for i, ks in zip(at, found, strict=True):
                    out[i] = dests(ks)
        return out

    return by_key


def _map_side(
    plan: str, fmt: str, lanes: list[Lane], file_of: list[int], part: int, raw: Iterable[Any]
) -> Iterator[tuple[int, tuple[Any, ...]]]:
    total = sum(lane.tasks for lane in lanes)
    routes = [_bucketing(lane) for lane in lanes]
    batches: list[list[Item]] = [[] for _ in range(total)]
    seq = [0] * total
    count, first, last, fine = 0, None, None, True
    markers: list[tuple[int, int]] = []
    pending: list[Item] = []

    def spread() -> Iterator[tuple[int, tuple[Any, ...]]]:
        # lane by lane: each reduce partition belongs to one lane, and gets its events in order
        for route in routes:
            for item, dests in zip(pending, route(pending), strict=True):
                for dest in dests:
                    batch = batches[dest]
                    batch.append(item)
                    if len(batch) >= BATCH:
                        yield dest, ("items", part, seq[dest], batch)
                        batches[dest], seq[dest] = [], seq[dest] + 1
        pending.clear()

    numbered = ((rec, row) for row, rec in enumerate(with_files(file_of, part, raw)))
    for status, row, stream, ts, data in parse(plan, fmt, numbered):
        if status == "error" or ts is None or (last is not None and ts < last):
            fine = False  # the general path reports it, or handles it exactly
            break
        count += 1
        if first is None:
            first = ts
        last = ts
        if stream is None:
            markers.append((row, ts))
            continue
        pending.append((row, stream, ts, data))
        if len(pending) >= BATCH:
            yield from spread()
    if fine:
        yield from spread()
        for dest, batch in enumerate(batches):
            if batch:
                yield dest, ("items", part, seq[dest], batch)
    summary = Summary(count, first, last, markers, fine)
    for dest in range(total):
        yield dest, ("summary", part, summary)


def _reduce_side(
    plans: list[tuple[str, list[str]]],
    parts: int,
    start_time: int | None,
    dest: int,
    records: Iterable[tuple[int, tuple[Any, ...]]],
) -> Iterator[tuple[Any, ...]]:
    """Yields ("bail", dest), or ("out", dest, piece, tags, lines) records and then
    ("done", dest, items)."""
    summaries: dict[int, Summary] = {}
    batches: list[tuple[int, int, list[Item]]] = []
    for _, record in records:
        if record[0] == "summary":
            summaries[record[1]] = record[2]
        else:
            batches.append((record[1], record[2], record[3]))
    assert len(summaries) == parts, f"{len(summaries)} summaries for {parts} input splits"
    ordered = [summaries[p] for p in range(parts)]
    stamped = [s for s in ordered if s.first is not None]
    if not _fine(ordered, stamped):
        yield ("bail", dest)
        return
    offsets = [0] * parts
    for p in range(1, parts):
        offsets[p] = offsets[p - 1] + ordered[p - 1].items
    markers: list[Item] = [
        (offsets[p] + r, None, t, None) for p, s in enumerate(ordered) for r, t in s.markers
    ]
    start = start_time
    if start is None and stamped:
        start = default_start_time(stamped[0].first)
    batches.sort(key=_split_and_seq)
    items: list[Item] = []
    for p, _, batch in batches:
        off = offsets[p]
        items.extend([(off + r, s, t, d) for r, s, t, d in batch])
    plan, outputs = plans[dest]
    for piece, tags, lines in in_pieces(run_items(plan, start, outputs, items, markers, checked=True), PIECE):
        yield ("out", dest, piece, tags, lines)
    yield ("done", dest, offsets[-1] + ordered[-1].items if parts else 0)


def _fine(ordered: list[Summary], stamped: list[Summary]) -> bool:
    """No split found a problem, and no split starts before the one before it ends."""
    if not all(s.fine for s in ordered):
        return False
    bounds = [(s.first, s.last) for s in stamped if s.first is not None and s.last is not None]
    return all(a[1] <= b[0] for a, b in zip(bounds, bounds[1:], strict=False))


def _split_and_seq(batch: tuple[int, int, list[Item]]) -> tuple[int, int]:
    return batch[0], batch[1]


def _dest(d: int) -> int:
    return d


def run_one_job(
    spark: SparkSession,
    plan: str,
    files: list[str],
    fmt: str,
    lanes: list[Lane],
    start_time: int | None,
) -> tuple[list[list[list[tuple[Any, str]]]], int] | None:
    """Each lane's tasks' outputs ((tag, line), each task's in tag order) and the number
    of items read; None if the input needs the general path."""
    raw, file_of = raw_input(spark, files, fmt)
    parts = raw.getNumPartitions()
    total = sum(lane.tasks for lane in lanes)
    plans = [(lane.group.plan, list(lane.group.outputs)) for lane in lanes for _ in range(lane.tasks)]
    shuffled = raw.mapPartitionsWithIndex(partial(_map_side, plan, fmt, lanes, file_of)).partitionBy(
        total, _dest
    )
    results = shuffled.mapPartitionsWithIndex(partial(_reduce_side, plans, parts, start_time)).collect()
    if any(r[0] == "bail" for r in results):
        return None
    per_task: list[list[tuple[Any, str]]] = [[] for _ in range(total)]
    count = 0
    for r in sorted((r for r in results if r[0] == "out"), key=_dest_and_piece):
        per_task[r[1]].extend(zip(r[3], r[4], strict=True))
    count = next((r[2] for r in results if r[0] == "done"), 0)
    for lane in lanes:  # as app/spark/runner.py does: a lane of one task keeps its order
        for outs in per_task[lane.first : lane.first + lane.tasks] if lane.tasks > 1 else []:
            outs.sort(key=_tag)
    return [per_task[lane.first : lane.first + lane.tasks] for lane in lanes], count


def _dest_and_piece(r: tuple[Any, ...]) -> tuple[int, int]:
    return r[1], r[2]


def _tag(out: tuple[Any, str]) -> Any:
    return out[0]
