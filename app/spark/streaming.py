"""A plan deployed on Spark Structured Streaming: one query per execution group.

    hand-off directory (app/spark/handoff.py, written by the receivers)
      -> file source (which files were read: in the checkpoint)
      -> mapInPandas: parse, the group's streams only, each event's partition key
      -> groupBy(key).applyInPandasWithState: the key's engine state (a `snapshot_key`
         blob; the main group's whole-runtime snapshot under one key) restored into a
         runtime, the key's events of the micro-batch run in input order, the state saved
      -> foreachBatch on the driver: the plan's output adapters, each record with an
         `Origin` (query, micro-batch id, index) so a micro-batch replayed after a restart
         is skipped where the adapter already wrote it (RDBMS: `cepheus_delivered`)

A restart from the checkpoint directory resumes the state store, the source offsets and
the batch ids: state exactly once, and (with an RDBMS sink) no row lost or repeated.
A key's timers fire at its next event, or in a later micro-batch once the watermark (the
latest event time, less `watermark_delay_ms`) passes them (`EventTimeTimeout`).
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import engine
from adapters.output.base import Origin, OutputAdapter
from app.spark.errors import SparkRunError
from app.spark.groups import Group, plan_groups
from app.spark.tasks import Item, run_items
from engine.events import Event

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.state import GroupState

log = logging.getLogger(__name__)

KEYED_SCHEMA = "i long, w string, stream string, ts long, et timestamp, data string, key string"
OUTPUT_SCHEMA = "i long, w string, ts long, n long, stream string, line string"
STATE_SCHEMA = "blob binary"
STATUS_FILE = "cepheus-status.json"
_TIMED_OUT = (
    2**62
)  # where a timed-out key's outputs sort in their micro-batch: last  # in the checkpoint directory: what `cepheus spark status` reads


def _keyed_rows(group: Group, frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Hand-off lines -> the group's events with their partition key (main: one key)."""
    import pandas as pd

    rt = engine.compile(group.plan, fuse_partitions=False)
    inputs = set(group.inputs)
    keys = {s: rt.partition_key_function(group.keyed_by, s) for s in inputs} if group.keyed_by else {}
    for frame in frames:
        out: dict[str, list[Any]] = {"i": [], "w": [], "stream": [], "ts": [], "data": [], "key": []}
        for line in frame["value"]:
            if not line.strip():
                continue
            obj = json.loads(line)
            stream = obj["stream"]
            if stream not in inputs:
                continue
            row = rt.check_row(stream, obj["data"])
            if group.keyed_by is None:
                found = [obj["timestamp"] if group.keyed else ""]
            else:
                fn = keys.get(stream)
                found = fn(row, obj["timestamp"]) if fn is not None else []
            for key in found:
                out["i"].append(obj["i"])
                out["w"].append(obj.get("w", ""))
                out["stream"].append(stream)
                out["ts"].append(obj["timestamp"])
                out["data"].append(json.dumps(obj["data"]))
                out["key"].append(repr(key))
        frame_out = pd.DataFrame(out)
        # the event time as Spark's timestamp (UTC): the watermark that fires quiet keys' timers
        frame_out.insert(3, "et", pd.to_datetime(frame_out["ts"].astype("int64"), unit="ms", utc=True))
        yield frame_out


def _advance(
    group: Group,
    start_time: int | None,
    key: tuple[Any, ...],
    frames: Iterable[pd.DataFrame],
    state: GroupState,
) -> Iterator[pd.DataFrame]:
    """One key's micro-batch: its state in, its events through the engine, its state out."""
    import pandas as pd

    given = list(frames)
    ordered = _in_order(pd.concat(given)) if given else []
    rt = engine.compile(group.plan, start_time=start_time, fuse_partitions=False)
    blob = state.get[0] if state.exists and not group.stateless else None
    if blob is not None:
        if group.keyed_by is not None:
            rt.restore_key(bytes(blob))
        else:
            rt.restore(bytes(blob))
    items: list[Item] = [(at, s, t, json.loads(d)) for at, _, _, s, t, d in ordered]
    cause = {at: (i, w, t) for at, w, i, _, t, _ in ordered}  # engine index -> the input it stands for
    markers: list[Item] = []
    watermark = state.getCurrentWatermarkMs()
    if state.hasTimedOut:  # no event of this key, but event time passed its next timer
        markers = [(0, None, watermark, None)]
    first = cause[items[0][0]] if items else (_TIMED_OUT, "", watermark)
    out: dict[str, list[Any]] = {"i": [], "w": [], "ts": [], "n": [], "stream": [], "line": []}
    for n, (tag, _, line) in enumerate(run_items(rt, None, list(group.outputs), items, markers)):
        record = json.loads(line)
        i, w, t = cause.get(tag[2], first) if len(tag) > 2 and tag[1] == 1 and items else first
        out["i"].append(i)
        out["w"].append(w)
        out["ts"].append(t)
        out["n"].append(n)
        out["stream"].append(record["stream"])
        out["line"].append(line)
    if group.stateless:  # spread by timestamp: nothing to keep, and no key comes back
        saved = None
    elif group.keyed_by is not None:
        key_value = rt.partition_keys(group.keyed_by)
        saved = rt.snapshot_key(group.keyed_by, key_value[0]) if key_value else None
    else:
        saved = rt.snapshot()
    if saved is not None:
        state.update((saved,))
        due = rt.next_timer()
        if due is not None:
            state.setTimeoutTimestamp(max(due, watermark + 1))
    else:
        state.remove()
    yield pd.DataFrame(out)


def _in_order(rows: pd.DataFrame) -> list[tuple[int, str, int, str, int, str]]:
    """One key's events of a micro-batch as `(engine index, writer, index, stream, timestamp,
    data)`, in the order the engine runs them. One writer: by its input index, the engine
    index being the input index. Several (nodes sharing the hand-off): each writer's events
    keep their own order, and the writers' sequences merge by timestamp, ties by writer; the
    engine index counts on by 1 only between consecutive events of one writer (which may
    travel as one chunk), else by 2. A replayed micro-batch has the same rows: the same order."""
    if rows["w"].nunique() <= 1:
        rows = rows.sort_values("i")
        return [
            (int(i), str(w), int(i), str(s), int(t), str(d))
            for i, w, s, t, d in zip(
                rows["i"], rows["w"], rows["stream"], rows["ts"], rows["data"], strict=True
            )
        ]
    per_writer = [
        [
            (int(t), str(w), int(i), str(s), str(d))
            for i, s, t, d in zip(g["i"], g["stream"], g["ts"], g["data"], strict=True)
        ]
        for w, g in sorted((w, g.sort_values("i")) for w, g in rows.groupby("w", sort=False))
    ]
    ordered: list[tuple[int, str, int, str, int, str]] = []
    for t, w, i, s, d in heapq.merge(*per_writer, key=lambda e: (e[0], e[1])):
        if not ordered:
            at = 0
        else:
            _, last_w, last_i, *_ = ordered[-1]
            at = ordered[-1][0] + (1 if (last_w == w and last_i + 1 == i) else 2)
        ordered.append((at, w, i, s, t, d))
    return ordered


# `package.module.Crash: message` or `ValueError: message`, as Python prints an exception
_RAISED = re.compile(r"^(?:[a-z_]\w*\.)+[A-Z]\w*: |^[A-Z]\w*(?:Error|Exception): ")


def _reason(text: str) -> str:
    """The line of a Spark error that says what went wrong: the Python exception's own
    (`module.Error: message`) when the failure came from Python, else the first."""
    lines = [line for line in text.splitlines() if line.strip()]
    raised = [
        line for line in lines if _RAISED.match(line) and not line.startswith(("org.", "java.", "py4j."))
    ]
    chosen = raised[-1] if raised else (lines[0] if lines else text)
    return chosen.split(" SQLSTATE")[0]


@dataclass(frozen=True)
class QueryStatus:
    name: str
    id: str | None
    active: bool
    error: str | None
    batch: int | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    state_rows: int | None
    state_bytes: int | None


@runtime_checkable
class StreamSink(Protocol):
    """Where the events of one output stream go, one micro-batch at a time."""

    def deliver(self, events: list[Event], log_id: str, batch_id: int) -> None:
        """Write `events` (the micro-batch's, in order) before returning; output n of micro-batch
        `batch_id` of query `log_id` is the same after a restart, so a target can skip it.
        Raises when they were not written: the micro-batch fails and runs again."""
        ...


class AdapterSink:
    """One output adapter as a `StreamSink`: records as `{attribute: value}`, each with an
    `Origin` (source `plan/stream`), flushed before the micro-batch commits."""

    def __init__(self, adapter: OutputAdapter, plan: str, stream: str, names: Sequence[str]) -> None:
        self.adapter = adapter
        self.plan = plan
        self.stream = stream
        self.names = list(names)

    def deliver(self, events: list[Event], log_id: str, batch_id: int) -> None:
        records = [dict(zip(self.names, e.data, strict=True)) for e in events]
        source = f"{self.plan}/{self.stream}"
        self.adapter.publish(records, origins=Origin(source, log_id, batch_id, 0))  # one run
        if not self.adapter.flush(timeout=60):
            msg = f"plan '{self.plan}': sink of stream '{self.stream}' did not write micro-batch {batch_id}"
            raise SparkRunError(msg)


def _output_order(rows: list[Any]) -> list[Any]:
    """A micro-batch's outputs in the order of the inputs that caused them, as `_in_order`
    runs them: one writer, by (input index, n) as locally; several, each writer's by (input
    index, n), merged by the cause's timestamp, ties by writer; a quiet key's timers last."""
    timed_out = sorted((r for r in rows if r["i"] == _TIMED_OUT), key=lambda r: r["n"])
    caused = [r for r in rows if r["i"] != _TIMED_OUT]
    writers = sorted({r["w"] for r in caused})
    if len(writers) <= 1:
        return sorted(caused, key=lambda r: (r["i"], r["n"])) + timed_out
    per_writer = [sorted((r for r in caused if r["w"] == w), key=lambda r: (r["i"], r["n"])) for w in writers]
    return [*heapq.merge(*per_writer, key=lambda r: (r["ts"], r["w"])), *timed_out]


class SparkDeployment:
    """A plan on Structured Streaming: `start()`, `status()`, `stop()`.

    `sinks` maps output streams to output adapters (each wrapped in an `AdapterSink`) or to
    `StreamSink`s of the caller's (the node's: its formatters and adapters)."""

    def __init__(
        self,
        spark: SparkSession,
        plan: str,
        handoff_dir: str,
        checkpoint_dir: str,
        sinks: Mapping[str, OutputAdapter | StreamSink],
        *,
        start_time: int | None = None,
        trigger_seconds: float = 1.0,
        max_files_per_trigger: int | None = None,
        state_partitions: int | None = None,
        watermark_delay_ms: int = 0,
    ) -> None:
        self.spark = spark
        self.plan = plan
        self.name = engine.parse(plan).name or "plan"
        self.handoff_dir = handoff_dir
        self.checkpoint_dir = checkpoint_dir
        self.start_time = start_time
        self.trigger_seconds = trigger_seconds
        self.max_files_per_trigger = max_files_per_trigger
        self.watermark_delay_ms = watermark_delay_ms
        # keyed state is spread over this many partitions, fixed in the checkpoint at the first start
        self.state_partitions = state_partitions or spark.sparkContext.defaultParallelism
        self.groups = [g for g in plan_groups(plan) if g.outputs]
        compiled = engine.compile(plan)
        self.sinks: dict[str, StreamSink] = {
            s: sink
            if isinstance(sink, StreamSink)
            else AdapterSink(sink, self.name, s, [n for n, _ in compiled.attributes(s)])
            for s, sink in sinks.items()
        }
        self.queries: dict[str, StreamingQuery] = {}
        self._status_lock = threading.Lock()  # each query's micro-batches write the status file
        for s in self.sinks:
            if s not in {o for g in self.groups for o in g.outputs}:
                msg = f"plan '{self.name}': no query writes stream '{s}' that a sink is attached to"
                raise SparkRunError(msg)

    def _query_name(self, group: Group) -> str:
        return re.sub(r"[^A-Za-z0-9_]", "_", f"cepheus_{self.name}_{group.name}")

    def start(self) -> list[StreamingQuery]:
        for group in self.groups:
            if group.name in self.queries and self.queries[group.name].isActive:
                continue
            self.queries[group.name] = self._start(group)
        self.write_status()
        return list(self.queries.values())

    def _start(self, group: Group) -> StreamingQuery:
        from pyspark.sql.streaming.state import GroupStateTimeout

        os.makedirs(self.handoff_dir, exist_ok=True)
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.state_partitions))
        reader = self.spark.readStream.format("text")
        if self.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", self.max_files_per_trigger)
        # `in/<node>/` of each node feeding a shared hand-off, or the files of one node in `in/`
        lines = reader.option("recursiveFileLookup", "true").load(self.handoff_dir)
        keyed = lines.mapInPandas(partial(_keyed_rows, group), schema=KEYED_SCHEMA)
        # a key's timers fire at its next event, or once event time (the watermark: the
        # latest event time seen, less the delay) passes them; an event older than the
        # watermark is late and dropped by Spark
        keyed = keyed.withWatermark("et", f"{self.watermark_delay_ms} milliseconds")
        advanced = keyed.groupBy("key").applyInPandasWithState(
            partial(_advance, group, self.start_time),
            outputStructType=OUTPUT_SCHEMA,
            stateStructType=STATE_SCHEMA,
            outputMode="append",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
        name = self._query_name(group)
        writer = (
            advanced.writeStream.foreachBatch(partial(self._deliver, name))
            .queryName(name)
            .option("checkpointLocation", os.path.join(self.checkpoint_dir, group.name))
            .trigger(processingTime=f"{int(self.trigger_seconds * 1000)} milliseconds")
        )
        log.info("plan %s: streaming query %s started (checkpoint %s)", self.name, name, self.checkpoint_dir)
        return writer.start()

    def _deliver(self, query: str, frame: DataFrame, batch_id: int) -> None:
        """The micro-batch's outputs, in input order, to the sinks of their streams; each
        with its origin, so a replayed micro-batch is skipped where it was written."""
        # one action (a Spark sort would add a sampling job and a shuffle); a batch's
        # outputs are few enough to order here
        rows = _output_order(frame.collect())
        per_stream: dict[str, list[Event]] = {}
        for row in rows:
            record = json.loads(row["line"])
            if record["stream"] not in self.sinks:  # expired events too, as the node's plans send them
                continue
            event = Event(record["timestamp"], record["data"], record.get("type") == "expired")
            per_stream.setdefault(record["stream"], []).append(event)
        for stream, events in per_stream.items():
            self.sinks[stream].deliver(events, query[:64], batch_id)
        try:
            self.write_status()
        except OSError as exc:  # the status is for people: the micro-batch is written all the same
            log.warning("plan %s: cannot write %s: %s", self.name, STATUS_FILE, exc)

    def write_status(self) -> None:
        """`status()` into the checkpoint directory (written whole, then renamed), for
        `cepheus spark status` and the console to read without the Spark session."""
        os.makedirs(self.checkpoint_dir, exist_ok=True)
        path = os.path.join(self.checkpoint_dir, STATUS_FILE)
        status = self.status()
        with self._status_lock:  # the queries' micro-batches run in threads of their own
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(status, f, indent=1, default=str)
            os.replace(tmp, path)

    def status(self) -> dict[str, Any]:
        """What the CLI and the console show: the application, and per query its state and
        last progress (rows/s in and processed, batch duration, state rows and bytes)."""
        sc = self.spark.sparkContext
        return {
            "plan": self.name,
            "updated_ms": int(time.time() * 1000),
            "application": {"id": sc.applicationId, "name": sc.appName, "master": sc.master},
            "inflow": self.handoff_dir,
            "outflow": sorted(self.sinks),
            "queries": [vars(self._query_status(g.name)) for g in self.groups],
        }

    def _query_status(self, group: str) -> QueryStatus:
        q = self.queries.get(group)
        if q is None:
            return QueryStatus(group, None, False, None, None, None, None, None, None, None)
        p: dict[str, Any] = q.lastProgress or {}
        ops = p.get("stateOperators") or [{}]
        exc = q.exception() if not q.isActive else None
        return QueryStatus(
            q.name or group,
            str(q.id),
            q.isActive,
            None if exc is None else _reason(str(exc)),
            p.get("batchId"),
            p.get("inputRowsPerSecond"),
            p.get("processedRowsPerSecond"),
            (p.get("durationMs") or {}).get("triggerExecution"),
            ops[0].get("numRowsTotal"),
            ops[0].get("memoryUsedBytes"),
        )

    def process_available(self) -> None:
        """Wait until every query has processed what the hand-off holds now."""
        for q in self.queries.values():
            q.processAllAvailable()

    def stop(self) -> None:
        for q in self.queries.values():
            if q.isActive:
                q.stop()
        if self.queries:
            self.write_status()
