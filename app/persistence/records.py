"""What the input log holds, `Events` and `Tick`, and their binary payload layout.

A simple layout of our own rather than the engine's state codec: that codec walks every value
in Python and adds a 42-byte header and a SHA-256 per blob, while a bundle here is hundreds of
flat cells appended on a receiver's thread. No pickle: decoding never runs code. Little-endian:

    Tick:   kind=2 (B), time_ms (q)
    Events: kind=1 (B), at (q), stream bytes, events, cells, ints, floats, strings (6 x I),
            stream (UTF-8), timestamps (events x q), row lengths (events x I),
            cell tags (cells x B), ints (q each), floats (d each),
            string lengths in code points (I each), the strings joined (UTF-8, surrogatepass)

An int outside 64 bits travels as its decimal text in the string table. Imports nothing of ours.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import Any

Value = None | bool | int | float | str

EVENTS = 1
TICK = 2

_NONE, _TRUE, _FALSE, _INT, _FLOAT, _STR, _BIGINT = range(7)
_HEAD = struct.Struct("<Bq6I")
_TICK = struct.Struct("<Bq")
_SWAP = sys.byteorder == "big"
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

if array("I").itemsize != 4 or array("q").itemsize != 8 or array("d").itemsize != 8:  # pragma: no cover
    msg = "the input log needs 4-byte 'I' and 8-byte 'q'/'d' arrays"
    raise ImportError(msg)


class RecordError(ValueError):
    """A payload that passed its CRC but does not decode (a bug, or a newer format)."""


@dataclass(frozen=True, slots=True)
class Events:
    """One bundle a receiver acknowledged: `rows[i]` stamped `timestamps[i]` (ms), processed
    when the plan's clock read `at` (ms)."""

    stream: str
    timestamps: list[int]
    rows: list[tuple[Value, ...]]
    at: int = 0


@dataclass(frozen=True, slots=True)
class Tick:
    """The playback clock advanced to `time_ms`, firing every timer due."""

    time_ms: int


Record = Events | Tick


def _raw(values: array[Any]) -> bytes:
    if _SWAP:  # pragma: no cover - little-endian machines only here
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _cooked(typecode: str, raw: bytes | memoryview) -> array[Any]:
    values = array(typecode)
    values.frombytes(raw)
    if _SWAP:  # pragma: no cover
        values.byteswap()
    return values


def encode(record: Record) -> bytes:
    """The payload of `record`; `ValueError` for a value of another type or a length mismatch."""
    if isinstance(record, Tick):
        return _TICK.pack(TICK, record.time_ms)
    rows = record.rows
    if len(rows) != len(record.timestamps):
        msg = f"stream {record.stream}: {len(rows)} rows but {len(record.timestamps)} timestamps"
        raise ValueError(msg)
    lengths = array("I")
    tags = bytearray()
    ints: array[int] = array("q")
    floats: array[float] = array("d")
    strs: list[str] = []
    tag, add_int, add_float, add_str = tags.append, ints.append, floats.append, strs.append
    for row in rows:
        lengths.append(len(row))
        for v in row:
            t = type(v)
            if t is str:
                tag(_STR)
                add_str(v)  # type: ignore[arg-type]
            elif t is float:
                tag(_FLOAT)
                add_float(v)  # type: ignore[arg-type]
            elif t is int:
                if _INT_MIN <= v <= _INT_MAX:  # type: ignore[operator]
                    tag(_INT)
                    add_int(v)  # type: ignore[arg-type]
                else:
                    tag(_BIGINT)
                    add_str(str(v))
            elif v is None:
                tag(_NONE)
            elif v is True:
                tag(_TRUE)
            elif v is False:
                tag(_FALSE)
            else:
                msg = f"stream {record.stream}: cannot log a value of type {t.__name__}"
                raise ValueError(msg)
    stream = record.stream.encode("utf-8", "surrogatepass")
    head = _HEAD.pack(EVENTS, record.at, len(stream), len(rows), len(tags), len(ints), len(floats), len(strs))
    text = "".join(strs).encode("utf-8", "surrogatepass")
    return b"".join(
        (
            head,
            stream,
            _raw(array("q", record.timestamps)),
            _raw(lengths),
            tags,
            _raw(ints),
            _raw(floats),
            _raw(array("I", map(len, strs))),
            text,
        )
    )


def decode(payload: bytes) -> Record:
    """The record `encode` made `payload` from; `RecordError` if it is not one."""
    try:
        return _decode(memoryview(payload))
    except (struct.error, IndexError, ValueError, OverflowError, StopIteration) as exc:
        msg = f"payload does not decode: {exc}"
        raise RecordError(msg) from exc


def _decode(buf: memoryview) -> Record:
    kind = buf[0] if len(buf) else -1
    if kind == TICK:
        if len(buf) != _TICK.size:
            msg = f"a tick is {_TICK.size} bytes, not {len(buf)}"
            raise RecordError(msg)
        return Tick(_TICK.unpack(buf)[1])
    if kind != EVENTS:
        msg = f"unknown record kind {kind} (written by a newer Cepheus?)"
        raise RecordError(msg)
    _, at, n_stream, n_events, n_cells, n_ints, n_floats, n_strs = _HEAD.unpack_from(buf)
    pos = _HEAD.size
    parts = []
    for size in (n_stream, 8 * n_events, 4 * n_events, n_cells, 8 * n_ints, 8 * n_floats, 4 * n_strs):
        if pos + size > len(buf):
            msg = "payload shorter than its header says"
            raise RecordError(msg)
        parts.append(buf[pos : pos + size])
        pos += size
    stream = bytes(parts[0]).decode("utf-8", "surrogatepass")
    timestamps = _cooked("q", parts[1]).tolist()
    lengths = _cooked("I", parts[2])
    text = bytes(buf[pos:]).decode("utf-8", "surrogatepass")
    ends = list(accumulate(_cooked("I", parts[6])))
    if (ends[-1] if ends else 0) != len(text):
        msg = "string table does not match its lengths"
        raise RecordError(msg)
    strings = [text[a:b] for a, b in zip([0, *ends], ends, strict=False)]
    next_str = iter(strings).__next__
    getters = (
        repeat(None).__next__,
        repeat(True).__next__,
        repeat(False).__next__,
        iter(_cooked("q", parts[4])).__next__,
        iter(_cooked("d", parts[5])).__next__,
        next_str,
        lambda: int(next_str()),
    )
    cells: list[Any] = [getters[t]() for t in parts[3]]
    if sum(lengths) != n_cells:
        msg = "row lengths do not add up to the cell count"
        raise RecordError(msg)
    rows: list[tuple[Value, ...]]
    if n_events and lengths.count(lengths[0]) == n_events:
        width = lengths[0]
        rows = list(zip(*[iter(cells)] * width, strict=True)) if width else [()] * n_events
    else:
        rows = []
        start = 0
        for width in lengths:
            rows.append(tuple(cells[start : start + width]))
            start += width
    return Events(stream, timestamps, rows, at)
