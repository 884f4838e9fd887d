"""The durable hand-off between a node's receivers and a plan deployed on Spark.

Receivers append events to a directory of JSON Lines files; Spark's file source reads
them as a stream and records in its checkpoint which files it has taken, so a query
restarted from its checkpoint reads each event exactly once. Each file is written under
a hidden name, flushed to disk, then renamed into place: the source never sees half a
file. Every line carries `i`, the event's place in the input (increasing across files),
by which each key's events are put back in order inside Spark. Spark's file source takes
files in modification-time order (milliseconds, ties in no set order), so each file gets a
modification time 1 ms past the previous one's: a micro-batch limited to a few files
(`maxFilesPerTrigger`) always takes the oldest, never a later file before an earlier one.

Nodes sharing a plan's directory (a cluster) each write a sub-directory of their own,
`in/<node>/`, with `writer` set: their lines also carry `w`, the writer, and their indexes
count per writer. The strictly increasing modification times hold per writer, so a source
listing every writer's files in modification-time order still never takes a later file of
one writer before an earlier one of the same writer.

`HandOffHandler` is a Data Bridge (Thrift) receiver handler that hands every published
event over. Imports adapters (the handler protocol) and nothing of pyspark.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.events import WireEvent
from adapters.thrift.memory import InMemoryHandler

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{20})-(\d+)\.jsonl$")


class HandOff:
    """Appends events to `directory` as `<first index>-<count>.jsonl` files; `writer`, when
    given, goes into every line as `w` (one of several writers of a plan's hand-off)."""

    def __init__(self, directory: str, writer: str = "") -> None:
        self.directory = directory
        self.writer = writer
        os.makedirs(directory, exist_ok=True)
        self._lock = threading.Lock()
        self._next = 0
        self._mtime_ms = 0
        for name in os.listdir(directory):
            m = _NAME.match(name)
            if m:
                self._next = max(self._next, int(m.group(1)) + int(m.group(2)))
                mtime = os.stat(os.path.join(directory, name)).st_mtime_ns // 1_000_000
                self._mtime_ms = max(self._mtime_ms, mtime)

    @property
    def next_index(self) -> int:
        return self._next

    def append(self, events: Sequence[tuple[str, int, Sequence[Any]]]) -> int:
        """Write `(stream, timestamp, data)` events as one file; returns the first index."""
        if not events:
            return self._next
        with self._lock:
            first = self._next
            name = f"{first:020d}-{len(events)}.jsonl"
            tmp = os.path.join(self.directory, f".{name}.tmp")
            extra = {"w": self.writer} if self.writer else {}
            with open(tmp, "w", encoding="utf-8") as f:
                for n, (stream, ts, data) in enumerate(events):
                    line = {"i": first + n, **extra, "stream": stream, "timestamp": ts, "data": list(data)}
                    f.write(json.dumps(line))
                    f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            mtime = max(os.stat(tmp).st_mtime_ns // 1_000_000, self._mtime_ms + 1)
            os.utime(tmp, ns=(mtime * 1_000_000, mtime * 1_000_000))
            self._mtime_ms = mtime
            os.rename(tmp, os.path.join(self.directory, name))
            self._next = first + len(events)
            return first


class HandOffHandler(InMemoryHandler):
    """A Thrift receiver handler whose published events go to a `HandOff` (meta,
    correlation and payload attributes in that order, as the stream's attributes)."""

    def __init__(
        self,
        handoff: HandOff,
        users: Mapping[str, str] | None = None,
        definitions: Iterable[WireStreamDefinition] = (),
    ) -> None:
        super().__init__(users, definitions)
        self.handoff = handoff

    def publish(self, events: list[WireEvent]) -> None:
        batch = []
        for e in events:
            stream = e.stream_id.split(":", 1)[0]
            data: list[Any] = []
            for section in (e.meta, e.correlation, e.payload):
                if section:
                    data.extend(section)
            batch.append((stream, e.timestamp, data))
        self.handoff.append(batch)
        log.debug("handed over %d events", len(batch))
