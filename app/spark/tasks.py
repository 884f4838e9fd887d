"""What runs inside a Spark task: one engine runtime over the items of its group that
reached it, in input order, and each emitted event with its place in the local run.

Items are `(index, stream, timestamp, data)` in input order (`stream` None: a clock
marker, `timestamp` its time, sent to every task). Events with consecutive indices, one
stream and one timestamp travel as one chunk, as `cepheus run` sends them.

Where an event would come in the local run: a task sees only its keys' events, so a
timer of one of its keys fires at the task's next event, not at the input's next event
as it does locally. Its outputs are tagged so that sorting by tag restores the local
order, for inputs whose timestamps never go back: an event's outputs get
`(timestamp, 1, index, n)`, a timer's `(due, 0, where it was set, n)` — locally that
timer fires just before the first input item stamped at or after `due`. Timers due at
once fire in the order they were set, and where a timer was set is itself such a tag.

Imports the engine and app/replay.py, not pyspark: it also runs (and is tested) without
Spark.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from typing import Any

import engine
from app.replay import Recorder
from engine.events import Chunk
from engine.runtime.clock import Scheduler

Item = tuple[int, str | None, int, Any]  # index, stream (None: a marker), timestamp, data
Tag = tuple[Any, ...]
Output = tuple[Tag, int, str]  # tag, emission order in the task, the JSON line

_AFTER = 2**62  # sorts after anything a context emits: a timer due before it was set
_START: Tag = (-(2**62),)  # what the runtime's starters do comes first


class Tagger:
    """Tracks the context (an item or a timer firing) of whatever the runtime does, by
    taking over its scheduler's `notify_at` and `fire_until` (same behaviour)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.ctx: Tag = _START
        self.n = 0
        self._set: dict[int, Tag] = {}  # a pending timer's sequence number -> where it was set
        self._scheduler = scheduler
        scheduler.notify_at = self._notify_at  # type: ignore[method-assign]
        scheduler.fire_until = self._fire_until  # type: ignore[method-assign]

    def enter(self, ctx: Tag) -> None:
        self.ctx = ctx
        self.n = 0

    def next_tag(self) -> Tag:
        self.n += 1
        return (*self.ctx, self.n)

    def _notify_at(self, due: int, owner: str) -> None:
        s = self._scheduler
        seq = next(s._seq)
        heapq.heappush(s._heap, (due, seq, owner))
        self._set[seq] = self.next_tag()

    def _fire_until(self, now: int) -> None:
        s = self._scheduler
        heap, owners = s._heap, s._owners
        saved = (self.ctx, self.n)
        while heap and heap[0][0] <= now:
            due, seq, owner = heapq.heappop(heap)
            set_at = self._set.pop(seq, (*_START, 0))
            callback = owners.get(owner)
            if callback is not None:
                self.enter(max((due, 0, *set_at), (*set_at[:-1], _AFTER, *set_at)))
                callback(due, now)
        self.ctx, self.n = saved


class _TaggedRecorder(Recorder):
    """Writes each emitted event as `cepheus run` does, and keeps it with its tag."""

    def __init__(self, tagger: Tagger, out: list[Output]) -> None:
        super().__init__(self)  # type: ignore[arg-type]  # `write` below is the file
        self.tagger = tagger
        self.outputs = out
        self._tag: Tag = ()

    def __call__(self, stream: str, chunk: Chunk) -> None:
        for i in range(len(chunk.ts)):
            self._tag = self.tagger.next_tag()
            one = Chunk(
                chunk.ts[i : i + 1],
                chunk.rows[i : i + 1],
                None if chunk.kinds is None else chunk.kinds[i : i + 1],
            )
            super().__call__(stream, one)

    def write(self, line: str) -> None:
        self.outputs.append((self._tag, len(self.outputs), line.rstrip("\n")))


def run_items(
    plan: str | engine.Runtime,
    start_time: int | None,
    outputs: Iterable[str],
    items: Iterable[Item],
    markers: list[Item],
) -> Iterator[Output]:
    """Run `plan` (its text, or a runtime just compiled or restored) over `items` (sorted
    by index) and `markers` (every clock marker of the input, sorted); yield what reaches
    `outputs`, tagged."""
    rt = engine.compile(plan, start_time=start_time) if isinstance(plan, str) else plan
    tagger = Tagger(rt._scheduler)
    emitted: list[Output] = []
    recorder = _TaggedRecorder(tagger, emitted)
    for stream in outputs:
        rt.subscribe_chunks(stream, recorder)
    batch: list[Item] = []

    def flush() -> None:
        if batch:
            first = batch[0]
            tagger.enter((first[2], 1, first[0]))
            assert first[1] is not None
            rows = [rt.check_row(first[1], it[3]) for it in batch]
            rt.send(first[1], rows, timestamps=first[2])
            batch.clear()

    for item in heapq.merge(items, markers, key=lambda it: it[0]):
        idx, into, ts, _ = item
        if batch and not (into == batch[-1][1] and ts == batch[-1][2] and idx == batch[-1][0] + 1):
            flush()
        if into is None:
            tagger.enter((ts, 1, idx))
            rt.advance_to(ts)
        else:
            batch.append(item)
        if emitted:
            yield from emitted
            emitted.clear()
    flush()
    yield from emitted
    if isinstance(plan, str):
        rt.shutdown()


def decode(data: str) -> Any:
    return json.loads(data)
