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
from app.replay import event_line
from engine.events import RESET, Chunk
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


class _TaggedRecorder:
    """Writes each emitted event as `cepheus run` does, and keeps it with its tag."""

    def __init__(self, tagger: Tagger, out: list[Output]) -> None:
        self.tagger = tagger
        self.outputs = out

    def __call__(self, stream: str, chunk: Chunk) -> None:
        kinds, out, next_tag = chunk.kinds, self.outputs, self.tagger.next_tag
        for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
            tag = next_tag()
            kind = 0 if kinds is None else kinds[i]
            if kind != RESET:
                out.append((tag, len(out), event_line(stream, t, kind, row)))


def _index(item: Item) -> int:
    return item[0]


def run_items(
    plan: str | engine.Runtime,
    start_time: int | None,
    outputs: Iterable[str],
    items: Iterable[Item],
    markers: list[Item],
    *,
    checked: bool = False,
) -> Iterator[Output]:
    """Run `plan` (its text, or a runtime just compiled or restored) over `items` (sorted
    by index) and `markers` (every clock marker of the input, sorted); yield what reaches
    `outputs`, tagged. `checked`: the items' data are rows `check_row` returned already."""
    rt = engine.compile(plan, start_time=start_time) if isinstance(plan, str) else plan
    tagger = Tagger(rt._scheduler)
    emitted: list[Output] = []
    recorder = _TaggedRecorder(tagger, emitted)
    for name in outputs:
        rt.subscribe_chunks(name, recorder)
    check, send, enter = rt.check_row, rt.send, tagger.enter
    rows: list[Any] = []  # the pending chunk: consecutive events of one stream and timestamp
    first = last = -1
    into: str | None = None
    ts = 0
    for idx, stream, t, data in heapq.merge(items, markers, key=_index) if markers else items:
        if rows and not (stream == into and t == ts and idx == last + 1):
            enter((ts, 1, first))
            assert into is not None
            send(into, rows if checked else [check(into, d) for d in rows], timestamps=ts)
            rows = []
        if stream is None:
            enter((t, 1, idx))
            rt.advance_to(t)
        else:
            if not rows:
                first, into, ts = idx, stream, t
            rows.append(data)
            last = idx
        if emitted:
            yield from emitted
            emitted.clear()
    if rows:
        enter((ts, 1, first))
        assert into is not None
        send(into, rows if checked else [check(into, d) for d in rows], timestamps=ts)
    yield from emitted
    if isinstance(plan, str):
        rt.shutdown()


def in_pieces(outputs: Iterable[Output], size: int) -> Iterator[tuple[int, list[Tag], list[str]]]:
    """`(piece, tags, lines)` of at most `size` outputs each, numbered from 0, as a task sends
    them to the driver; the last piece may be empty (a task with no output sends one)."""
    tags: list[Tag] = []
    lines: list[str] = []
    piece = 0
    for tag, _, line in outputs:
        tags.append(tag)
        lines.append(line)
        if len(lines) >= size:
            yield piece, tags, lines
            tags, lines, piece = [], [], piece + 1
    yield piece, tags, lines


def decode(data: str) -> Any:
    return json.loads(data)
