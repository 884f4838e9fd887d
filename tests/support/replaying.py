"""Test helpers: run a plan over a timeline and collect what it emits; check that a
snapshot taken mid-stream and restored into a fresh runtime changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import engine
from engine.events import EXPIRED, RESET, Chunk

# {"stream", "timestamp", "data"}: one event; {"stream", "timestamps", "rows"}: one chunk;
# {"time"}: the clock moves on
Item = dict[str, Any]


class Collector:
    def __init__(self) -> None:
        self.records: list[tuple[str, int, str, tuple[Any, ...]]] = []

    def __call__(self, stream: str, chunk: Chunk) -> None:
        kinds = chunk.kinds
        for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
            k = 0 if kinds is None else kinds[i]
            if k != RESET:
                self.records.append((stream, t, "expired" if k == EXPIRED else "current", tuple(row)))

    def rows(self, stream: str, kind: str | None = None) -> list[tuple[Any, ...]]:
        return [r for s, _, k, r in self.records if s == stream and (kind is None or k == kind)]


def attach(rt: engine.Runtime) -> Collector:
    c = Collector()
    for stream in rt.output_streams:
        rt.subscribe_chunks(stream, c)
    return c


def feed(rt: engine.Runtime, items: Sequence[Item]) -> None:
    for item in items:
        if "rows" in item:
            rt.send(item["stream"], [tuple(r) for r in item["rows"]], timestamps=item["timestamps"])
        elif "stream" in item:
            rt.send(item["stream"], [tuple(item["data"])], timestamps=item["timestamp"])
        else:
            rt.advance_to(item["time"])


def run(
    plan: str, items: Sequence[Item], start_time: int | None = 1000, *, fuse_partitions: bool = True
) -> Collector:
    rt = engine.compile(plan, start_time=start_time, fuse_partitions=fuse_partitions)
    c = attach(rt)
    feed(rt, items)
    return c


def run_with_restore(plan: str, items: Sequence[Item], cut: int, start_time: int | None = 1000) -> Collector:
    """Feed items[:cut], capture, feed the rest to the first runtime still, encode the
    capture only then (so it must not share what the runtime changes), restore it into a
    fresh runtime and feed the rest there."""
    first = engine.compile(plan, start_time=start_time)
    c = attach(first)
    feed(first, items[:cut])
    captured = first.capture()
    first_records = len(c.records)
    feed(first, items[cut:])
    del c.records[first_records:]
    blob = captured.encode()
    first.shutdown()
    second = engine.compile(plan, start_time=start_time)
    second.restore(blob)
    for stream in second.output_streams:
        second.subscribe_chunks(stream, c)
    feed(second, items[cut:])
    return c


def assert_restore_equivalent(plan: str, items: Sequence[Item], start_time: int | None = 1000) -> None:
    """Every cut point gives the same output as an uninterrupted run."""
    expected = run(plan, items, start_time).records
    assert expected, "the scenario emits nothing; it cannot show that state survives"
    for cut in range(1, len(items)):
        got = run_with_restore(plan, items, cut, start_time).records
        assert got == expected, f"restore after item {cut} changed the output"


def events(stream: str, rows: Sequence[Sequence[Any]], start: int = 1000, step: int = 1) -> list[Item]:
    return [{"stream": stream, "timestamp": start + i * step, "data": list(r)} for i, r in enumerate(rows)]
