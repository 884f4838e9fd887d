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
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import Any

import engine
from app.replay import event_line
from engine.events import CURRENT, RESET, Chunk
from engine.runtime.clock import Scheduler
from engine.types import AttrType

Item = tuple[int, str | None, int, Any]  # index, stream (None: a marker), timestamp, data
Tag = tuple[Any, ...]
Output = tuple[Tag, int, str]  # tag, emission order in the task, the JSON line

_AFTER = 2**62  # sorts after anything a context emits: a timer due before it was set
_START: Tag = (-(2**62),)  # what the runtime's starters do comes first
RUN = 1024  # chunks per `send_chunks`: a task's outputs stay a stream of bounded pieces


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


# a value's JSON text as json.dumps writes it, for values of exactly these types
_PLAIN: dict[AttrType, tuple[str, str]] = {  # attribute type -> (the value's type, its text)
    AttrType.STRING: ("str", "{esc(%s)}"),
    AttrType.INT: ("int", "{%s}"),
    AttrType.LONG: ("int", "{%s}"),
    AttrType.FLOAT: ("float", "{%s!r}"),
    AttrType.DOUBLE: ("float", "{%s!r}"),
}


def line_writer(stream: str, kind: int, types: list[AttrType]) -> Callable[[int, Any], str]:
    """`event_line(stream, t, kind, row)` for one stream and kind, with a fast path for rows
    whose values all have exactly their attribute's type (str, int, finite float), as most
    do: the line put together from the values' own JSON text, as the encoder writes it
    (`encode_basestring_ascii`, `int.__repr__`, `float.__repr__`). Any other row, or a
    timestamp that is not an int: `event_line` itself."""
    if not types or any(t not in _PLAIN for t in types):
        return partial(_event_line, stream, kind)
    names = [f"a{n}" for n in range(len(types))]
    tests = []
    for a, t in zip(names, types, strict=True):
        tests.append(f"type({a}) is {_PLAIN[t][0]}")
        if _PLAIN[t][0] == "float":
            tests.append(f"{a} - {a} == 0.0")  # finite (inf - inf and nan - nan are nan)
    data = ", ".join(_PLAIN[t][1] % a for a, t in zip(names, types, strict=True))
    # the text around the timestamp and the data: event_line's own, for this stream and kind
    probe = event_line("s", 0, kind, [])  # '{"stream": "s", "timestamp": 0, "type": .., "data": []}'
    after = probe[probe.index(" 0, ") + 2 : -3]
    full = event_line(stream, 0, kind, [])
    before = full[: len(full) - len("0" + after + "[]}")]
    assert full == f"{before}0{after}[]}}" and after.startswith(", ")
    src = (
        "def line(t, row):\n"
        f"    if type(t) is int and len(row) == {len(types)}:\n"
        f"        {', '.join(names)}, = row\n"
        f"        if {' and '.join(tests)}:\n"
        f"            return f'{{BEFORE}}{{t}}{{AFTER}}[{data}]}}}}'\n"
        "    return slow(stream, kind, t, row)\n"
    )
    ns: dict[str, Any] = {
        "esc": encode_basestring_ascii,
        "slow": _event_line,
        "stream": stream,
        "kind": kind,
        "BEFORE": before,
        "AFTER": after,
    }
    exec(compile(src, f"<line {stream}>", "exec"), ns)  # noqa: S102 - generated from the plan's types
    line: Callable[[int, Any], str] = ns["line"]
    return line


def _event_line(stream: str, kind: int, t: int, row: Any) -> str:
    return event_line(stream, t, kind, row)


class _TaggedRecorder:
    """Writes each emitted event as `cepheus run` does, and keeps it with its tag."""

    def __init__(self, tagger: Tagger, out: list[Output], rt: engine.Runtime) -> None:
        self.tagger = tagger
        self.outputs = out
        self._rt = rt
        self._writers: dict[tuple[str, int], Callable[[int, Any], str]] = {}

    def _writer(self, stream: str, kind: int) -> Callable[[int, Any], str]:
        w = self._writers.get((stream, kind))
        if w is None:
            types = [t for _, t in self._rt.attributes(stream)]
            w = self._writers[(stream, kind)] = line_writer(stream, kind, types)
        return w

    def __call__(self, stream: str, chunk: Chunk) -> None:
        kinds, out, tagger = chunk.kinds, self.outputs, self.tagger
        ctx, n = tagger.ctx, tagger.n  # as tagger.next_tag() per event
        if kinds is None:
            write = self._writers.get((stream, CURRENT)) or self._writer(stream, CURRENT)
            for t, row in zip(chunk.ts, chunk.rows, strict=True):
                n += 1
                out.append(((*ctx, n), len(out), write(t, row)))
        else:
            for t, row, kind in zip(chunk.ts, chunk.rows, kinds, strict=True):
                n += 1
                if kind != RESET:
                    write = self._writers.get((stream, kind)) or self._writer(stream, kind)
                    out.append(((*ctx, n), len(out), write(t, row)))
        tagger.n = n


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
    `outputs`, tagged. `checked`: the items' data are rows `check_row` returned already.

    Consecutive chunks of one stream go in as a run, through `Runtime.send_chunks` (one
    lock hold for the run, the same chunks, clock and timers as one `send` each)."""
    rt = engine.compile(plan, start_time=start_time) if isinstance(plan, str) else plan
    tagger = Tagger(rt._scheduler)
    emitted: list[Output] = []
    recorder = _TaggedRecorder(tagger, emitted, rt)
    for name in outputs:
        rt.subscribe_chunks(name, recorder)
    check, enter, send_chunks = rt.check_row, tagger.enter, rt.send_chunks
    chunks: list[tuple[int, list[Any]]] = []  # the run: chunks of stream `into`, not sent yet
    contexts: list[Tag] = []  # each chunk's context: (timestamp, 1, index of its first event)
    at = contexts.__getitem__

    def before(i: int) -> None:
        enter(at(i))

    def send_run() -> None:
        assert into is not None
        send_chunks(into, chunks, before)
        chunks.clear()
        contexts.clear()

    rows: list[Any] | None = None  # the run's last chunk: more events may join it
    into: str | None = None
    last = -1
    ts = 0
    for idx, stream, t, data in heapq.merge(items, markers, key=_index) if markers else items:
        if stream is None:
            if chunks:
                send_run()
                rows = None
            enter((t, 1, idx))
            rt.advance_to(t)
        elif rows is not None and stream == into and t == ts and idx == last + 1:
            rows.append(data if checked else check(stream, data))
        else:
            if chunks and (stream != into or len(chunks) >= RUN):
                send_run()
            rows = [data if checked else check(stream, data)]
            chunks.append((t, rows))
            contexts.append((t, 1, idx))
            into, ts = stream, t
        last = idx
        if emitted:
            yield from emitted
            emitted.clear()
    if chunks:
        send_run()
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
