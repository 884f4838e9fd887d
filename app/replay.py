"""Replay a JSON Lines event file through a plan (`cepheus run`).

Input lines are events `{"stream", "timestamp"?, "data"}` or clock markers `{"time"}`.
Consecutive events of one stream with the same timestamp travel as one chunk, as a
client's batch would. Every event that reaches a stream some query inserts into is
written out, in emission order, as `{"stream", "timestamp", "type", "data"}`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import engine
from engine.errors import CEPError
from engine.events import EXPIRED, RESET, Chunk

RELATIVE_TIMELINE_LIMIT = 10**10  # below this, timestamps are ms since a notional start


class ReplayError(CEPError):
    """A bad input line (the message starts with `file:line:`), or a `--stream` the plan lacks."""


@dataclass
class Marker:
    time: int


@dataclass
class Batch:
    stream: str
    timestamp: int
    rows: list[tuple[Any, ...]]
    first_line: int


def default_start_time(first_time: int | None) -> int | None:
    """Where the playback clock starts: relative timelines (Siddhi's test convention)
    start at 1000 ms or earlier; epoch-ms timelines start at their first timestamp."""
    if first_time is None:
        return None
    if first_time >= RELATIVE_TIMELINE_LIMIT:
        return first_time
    return min(first_time, 1000)


def read_items(
    lines: Iterator[tuple[int, str]], rt: engine.Runtime, filename: str
) -> Iterator[Marker | Batch]:
    """Parse and validate lines into markers and same-stream/same-timestamp batches."""
    pending: Batch | None = None
    last_ts: int | None = None
    for lineno, text in lines:
        text = text.strip()
        if not text:
            continue
        where = f"{filename}:{lineno}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            raise ReplayError(msg) from None
        if not isinstance(obj, dict):
            msg = f"{where}: expected a JSON object with 'stream' and 'data', or 'time'"
            raise ReplayError(msg)
        if "stream" not in obj:
            t = obj.get("time")
            if not isinstance(t, int) or isinstance(t, bool):
                msg = f"{where}: a line needs 'stream' and 'data' (an event) or an integer 'time' (a clock marker)"
                raise ReplayError(msg)
            if pending is not None:
                yield pending
                pending = None
            yield Marker(t)
            last_ts = t if last_ts is None else max(last_ts, t)
            continue
        stream = obj["stream"]
        if not isinstance(stream, str) or stream not in rt.stream_names():
            # as in Siddhi, any stream of the plan takes events, also one a query defines
            known = ", ".join(rt.stream_names()) or "none"
            msg = f"{where}: unknown stream {stream!r} (the plan's streams: {known})"
            raise ReplayError(msg)
        data = obj.get("data")
        if not isinstance(data, list):
            msg = f"{where}: 'data' must be a list of attribute values"
            raise ReplayError(msg)
        ts = obj.get("timestamp", last_ts)
        if ts is None:
            msg = f"{where}: the first event needs a 'timestamp' (ms)"
            raise ReplayError(msg)
        if not isinstance(ts, int) or isinstance(ts, bool):
            msg = f"{where}: 'timestamp' must be an integer number of ms"
            raise ReplayError(msg)
        try:
            row = rt.check_row(stream, data)
        except (TypeError, ValueError) as exc:
            msg = f"{where}: {exc}"  # the engine names the stream and the attribute
            raise ReplayError(msg) from None
        last_ts = ts
        if pending is not None and pending.stream == stream and pending.timestamp == ts:
            pending.rows.append(row)
            continue
        if pending is not None:
            yield pending
        pending = Batch(stream, ts, [row], lineno)
    if pending is not None:
        yield pending


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


_encode = json.JSONEncoder(default=_json_default).encode
_isfinite = math.isfinite
_HEADS: dict[tuple[str, int], tuple[str, str]] = {}


def event_line(stream: str, timestamp: int, kind: int, row: Sequence[Any]) -> str:
    """One emitted event as `cepheus run` writes it, without the newline (`kind` current or
    expired): `json.dumps` of `{"stream", "timestamp", "type", "data"}`, with the text
    around the timestamp and the data made once per stream and kind."""
    for v in row:
        if isinstance(v, float) and not _isfinite(v):
            row = [_jsonable(x) for x in row]
            break
    heads = _HEADS.get((stream, kind))
    if heads is None:
        kind_name = "expired" if kind == EXPIRED else "current"
        heads = _HEADS[(stream, kind)] = (
            '{"stream": ' + _encode(stream) + ', "timestamp": ',
            ', "type": ' + _encode(kind_name) + ', "data": ',
        )
    ts = str(timestamp) if type(timestamp) is int else _encode(timestamp)
    return heads[0] + ts + heads[1] + _encode(row) + "}"


class Recorder:
    """Writes emitted events as JSON lines as they happen."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.count = 0

    def __call__(self, stream: str, chunk: Chunk) -> None:
        kinds = chunk.kinds
        write = self.out.write
        for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
            kind = 0 if kinds is None else kinds[i]
            if kind == RESET:
                continue
            write(event_line(stream, t, kind, row) + "\n")
            self.count += 1


def replay(
    plan_text: str,
    lines: list[tuple[int, str]] | Iterator[tuple[int, str]],
    out: IO[str],
    *,
    filename: str = "<input>",
    start_time: int | None = None,
    first_time: Callable[[], int | None] | None = None,
    progress: Callable[[int], None] | None = None,
    streams: list[str] | None = None,
) -> int:
    """Run the replay; returns the number of events written."""
    start = start_time if start_time is not None else default_start_time(first_time() if first_time else None)
    rt = engine.compile(plan_text, start_time=start)
    recorder = Recorder(out)
    chosen = streams or rt.output_streams
    for stream in chosen:
        if stream not in rt.stream_names():
            msg = f"--stream {stream}: the plan has no such stream (streams: {', '.join(rt.stream_names())})"
            raise ReplayError(msg)
        rt.subscribe_chunks(stream, recorder)
    for item in read_items(iter(lines), rt, filename):
        if isinstance(item, Marker):
            rt.advance_to(item.time)
        else:
            rt.send(item.stream, item.rows, timestamps=item.timestamp)
            if progress is not None:
                progress(len(item.rows))
    rt.shutdown()
    return recorder.count


def first_timestamp(path: str) -> int | None:
    with open(path, encoding="utf-8") as f:
        for text in f:
            text = text.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                return None
            if isinstance(obj, dict):
                t = obj.get("timestamp", obj.get("time"))
                if isinstance(t, int) and not isinstance(t, bool):
                    return t
            return None
    return None
