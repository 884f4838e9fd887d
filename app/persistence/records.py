"""What the input log holds, `Events` and `Tick`, and their binary payload layout.

A simple layout of our own rather than the engine's state codec: that codec walks every value
in Python and adds a 42-byte header and a SHA-256 per blob, while a bundle here is hundreds of
flat cells appended on a receiver's thread. No pickle: decoding never runs code. Little-endian:

    Tick:     kind=2 (B), time_ms (q)
    Columns2: kind=4 (B), at (q), stream bytes, events, width (3 x I), flags (B), stream
              (UTF-8), timestamps (one q if flags has ONE_TIME, else events x q), then each
              column: a tag (B) and its values:
              float d x events | int q x events | bool B x events |
              str without NUL: text bytes (I), the strings joined by NUL |
              str: lengths in code points (I x events), text bytes (I), the strings joined |
              one str for every event: text bytes (I), the string |
              mixed: bytes (I), the column as a one-column row-wise Events payload
    Events:   kind=1 (B), at (q), stream bytes, events, cells, ints, floats, strings (6 x I),
              stream (UTF-8), timestamps (events x q), row lengths (events x I),
              cell tags (cells x B), ints (q each), floats (d each),
              string lengths in code points (I each), the strings joined (UTF-8, surrogatepass)
    Columns:  kind=3, as Columns2 without the flags byte (every timestamp stored) and without
              the one-str column; written before 2026-11, still read (a log written by an
              older node replays after an upgrade).
    Sent:     kind=5 (B), at (q), runs (I), each run: sender bytes (I), sender (UTF-8), major,
              minor (2 x q), count (I); then the bundle's Events or Columns2 payload (its own
              `at` unused): a bundle whose senders named themselves (`adapters.senders`), so a
              replay restores the plan's sender marks with its state.

Rows of one width (a stream's bundle) go by columns: a column of one type is one C-level
array conversion instead of a Python step per cell (5x faster for a receiver's bundle); rows
of mixed widths go row-wise. A receiver that decoded a bundle by columns hands them over
with their types (`Events.columns`), so the encoder neither transposes the rows nor checks
each value's type (the Thrift receiver's bundles: twice as fast again). A bundle whose events
share one timestamp, or a string column of one value (a meta attribute such as the host),
stores it once: a third of the node bench's bytes, and the encoder's most expensive columns.
An int outside 64 bits travels as its decimal text in the string table. Text is UTF-8 with
surrogatepass. Every layout puts `at` in bytes 1 to 8, so a payload can be encoded before
the clock is read and `stamped` after. The kind is the format's version: a reader refuses a
kind it does not know, naming it. Imports only `app.persistence.errors` and `adapters.senders`.
"""

from __future__ import annotations

import functools
import hashlib
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any

from adapters.senders import Runs, SenderRun
from app.persistence.errors import InputLogError

Value = None | bool | int | float | str
Column = tuple[type | None, Sequence[Any]]
"""One attribute's values across the rows, with the one type all of them have (None: not known)."""

EVENTS = 1
TICK = 2
COLUMNS = 3  # read only: COLUMNS2 replaced it
COLUMNS2 = 4
SENT = 5
KINDS = (EVENTS, TICK, COLUMNS, COLUMNS2, SENT)
ONE_TIME = 1  # COLUMNS2 flag: one timestamp for every event

_NONE, _TRUE, _FALSE, _INT, _FLOAT, _STR, _BIGINT = range(7)
_HEAD = struct.Struct("<Bq6I")
_TICK = struct.Struct("<Bq")
_COLUMNS = struct.Struct("<Bq3I")
_COLUMNS2 = struct.Struct("<Bq3IB")
_U32 = struct.Struct("<I")
_SENT = struct.Struct("<BqI")
_RUN = struct.Struct("<qqI")
_AT = struct.Struct("<q")
_C_MIXED, _C_FLOAT, _C_INT, _C_STR, _C_BOOL, _C_STRZ, _C_STR1 = range(7)


@functools.lru_cache(maxsize=256)
def _packer(code: str, n: int) -> struct.Struct:
    """`n` values of struct `code`: struct packs a list 2-3x faster than array() builds one."""
    return struct.Struct(f"<{n}{code}")


_SWAP = sys.byteorder == "big"
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

if array("I").itemsize != 4 or array("q").itemsize != 8 or array("d").itemsize != 8:  # pragma: no cover
    msg = "the input log needs 4-byte 'I' and 8-byte 'q'/'d' arrays"
    raise ImportError(msg)


class RecordError(InputLogError):
    """A payload that passed its CRC but does not decode (a bug, or a newer format)."""


@dataclass(frozen=True, slots=True)
class Events:
    """One bundle a receiver acknowledged: `rows[i]` stamped `timestamps[i]` (ms), processed
    when the plan's clock read `at` (ms). `columns`, when the receiver has them: the rows'
    values by attribute, each column with its values' one type (a promise: a value of
    another type is logged as that type); not stored, the log has the rows either way."""

    stream: str
    timestamps: Sequence[int]
    rows: list[tuple[Value, ...]]
    at: int = 0
    columns: tuple[Column, ...] | None = field(default=None, compare=False, repr=False)
    senders: Runs = ()  # who sent the events, where they said (`adapters.senders`)


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
    if record.senders:
        return _sent(record.at, record.senders) + _encode_events(record)
    return _encode_events(record)


def _sent(at: int, runs: Runs) -> bytes:
    parts = [_SENT.pack(SENT, at, len(runs))]
    for run in runs:
        sender = run.sender.encode("utf-8", "surrogatepass")
        parts += [_U32.pack(len(sender)), sender, _RUN.pack(run.major, run.minor, run.count)]
    return b"".join(parts)


def _encode_events(record: Events) -> bytes:
    rows = record.rows
    if len(rows) != len(record.timestamps):
        msg = f"stream {record.stream}: {len(rows)} rows but {len(record.timestamps)} timestamps"
        raise ValueError(msg)
    if not rows:
        return _encode_rows(record)
    columns = record.columns
    if columns is None:
        widths = set(map(len, rows))
        if len(widths) != 1:
            return _encode_rows(record)
        # one list per column: zip(*rows) would make an iterator per row, enough objects to set
        # off the cyclic collector, which in a node walks a large heap (it was 20 % of the node's time)
        columns = tuple((None, list(map(itemgetter(j), rows))) for j in range(widths.pop()))
    stream = record.stream.encode("utf-8", "surrogatepass")
    stamps = record.timestamps
    flags = ONE_TIME if type(stamps[0]) is int and _one_value(stamps) else 0
    try:
        packed = _AT.pack(stamps[0]) if flags else _packer("q", len(rows)).pack(*stamps)
    except struct.error as exc:
        msg = f"stream {record.stream}: a timestamp is not a 64-bit integer ({exc})"
        raise ValueError(msg) from None
    head = _COLUMNS2.pack(COLUMNS2, record.at, len(stream), len(rows), len(columns), flags)
    parts = [head, stream, packed]
    parts += [_column(kind, values, record.stream) for kind, values in columns]
    return b"".join(parts)


def _one_value(values: Sequence[Any]) -> bool:
    """Whether every value equals the first (the ends compared first: most columns differ there)."""
    first = values[0]
    return bool(values[-1] == first and values.count(first) == len(values))


def content_digest(payload: bytes) -> int:
    """The same number for the same bundle on every member, whatever its clock reading: the
    first 64 bits of the SHA-1 of the `Events` payload without its `at` (bytes 1 to 8). The
    bytes, not the values, are hashed: a receiver decodes a client's bundle to the same payload
    on every member, and hashing it costs a twentieth of walking its rows in Python. SHA-1 for
    speed (the processor's SHA instructions: twice BLAKE2b's here), not secrecy: a client that
    made two of its own bundles collide on purpose could only lose one of its own."""
    view = memoryview(payload)
    hashed = hashlib.sha1(view[:1], usedforsecurity=False)
    hashed.update(view[9:])
    return int.from_bytes(hashed.digest()[:8], "big")


def stamped(payload: bytes, at: int) -> bytes:
    """`payload` of an `Events` record with its `at` replaced (both layouts hold it at offset 1)."""
    if not payload or payload[0] not in (EVENTS, COLUMNS, COLUMNS2, SENT):
        msg = "only an Events payload carries a clock reading"
        raise ValueError(msg)
    out = bytearray(payload)
    _AT.pack_into(out, 1, at)
    return bytes(out)


def _column(kind: type | None, values: Sequence[Any], stream: str) -> bytes:
    if kind is None:
        kinds = set(map(type, values))
        if len(kinds) == 1:
            kind = kinds.pop()
    if kind is not None:
        n = len(values)
        if kind is float:
            return bytes((_C_FLOAT,)) + _packer("d", n).pack(*values)
        if kind is str:
            if n > 1 and type(values[0]) is str and _one_value(values):
                text = values[0].encode("utf-8", "surrogatepass")
                return b"".join((bytes((_C_STR1,)), _U32.pack(len(text)), text))
            joined = "\x00".join(values)
            if joined.count("\x00") == n - 1:  # no string holds a NUL: split on it when read
                text = joined.encode("utf-8", "surrogatepass")
                return b"".join((bytes((_C_STRZ,)), _U32.pack(len(text)), text))
            text = "".join(values).encode("utf-8", "surrogatepass")
            return b"".join(
                (bytes((_C_STR,)), _raw(array("I", map(len, values))), _U32.pack(len(text)), text)
            )
        if kind is bool:
            return bytes((_C_BOOL,)) + bytes(values)
        if kind is int:
            try:
                return bytes((_C_INT,)) + _packer("q", n).pack(*values)
            except struct.error:
                pass  # an int outside 64 bits: as text, in the mixed layout
    mixed = _encode_rows(Events(stream, [0] * len(values), [(v,) for v in values]))
    return b"".join((bytes((_C_MIXED,)), _U32.pack(len(mixed)), mixed))


def _encode_rows(record: Events) -> bytes:
    rows = record.rows
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
    except (RecordError, struct.error, IndexError, ValueError, OverflowError, StopIteration) as exc:
        msg = f"payload does not decode: {exc}"  # a RecordError of `_decode` gets the prefix too
        raise RecordError(msg) from exc


def _decode(buf: memoryview) -> Record:
    kind = buf[0] if len(buf) else -1
    if kind == TICK:
        if len(buf) != _TICK.size:
            msg = f"a tick is {_TICK.size} bytes, not {len(buf)}"
            raise RecordError(msg)
        return Tick(_TICK.unpack(buf)[1])
    if kind == COLUMNS2:
        return _decode_columns(buf, version=2)
    if kind == COLUMNS:
        return _decode_columns(buf, version=1)
    if kind == SENT:
        return _decode_sent(buf)
    if kind != EVENTS:
        msg = (
            f"unknown record kind {kind}: this Cepheus reads kinds {', '.join(map(str, KINDS))} "
            "(was the log written by a newer version?)"
        )
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


def _decode_sent(buf: memoryview) -> Events:
    _, at, n_runs = _SENT.unpack_from(buf)
    pos = _SENT.size
    runs = []
    for _ in range(n_runs):
        (size,) = _U32.unpack_from(buf, pos)
        sender, pos = _take(buf, pos + _U32.size, size)
        major, minor, count = _RUN.unpack_from(buf, pos)
        pos += _RUN.size
        runs.append(SenderRun(bytes(sender).decode("utf-8", "surrogatepass"), major, minor, count))
    inner = buf[pos:]
    if not len(inner) or inner[0] not in (EVENTS, COLUMNS2):
        msg = "a Sent record must hold an Events or Columns2 payload"
        raise RecordError(msg)
    events = _decode(inner)
    assert isinstance(events, Events)
    return Events(events.stream, events.timestamps, events.rows, at, senders=tuple(runs))


def _take(buf: memoryview, pos: int, size: int) -> tuple[memoryview, int]:
    if size < 0 or pos + size > len(buf):
        msg = "payload shorter than its header says"
        raise RecordError(msg)
    return buf[pos : pos + size], pos + size


def _decode_columns(buf: memoryview, version: int) -> Events:
    """A `COLUMNS2` (version 2) or `COLUMNS` (version 1) payload."""
    flags = 0
    if version == 2:
        _, at, n_stream, n, width, flags = _COLUMNS2.unpack_from(buf)
        pos = _COLUMNS2.size
        if flags & ~ONE_TIME:
            msg = f"unknown flags {flags} of a column record"
            raise RecordError(msg)
    else:
        _, at, n_stream, n, width = _COLUMNS.unpack_from(buf)
        pos = _COLUMNS.size
    raw_stream, pos = _take(buf, pos, n_stream)
    if flags & ONE_TIME:
        raw_ts, pos = _take(buf, pos, 8)
        timestamps = [_AT.unpack(raw_ts)[0]] * n
    else:
        raw_ts, pos = _take(buf, pos, 8 * n)
        timestamps = list(_packer("q", n).unpack(raw_ts))
    columns: list[Sequence[Any]] = []
    for _ in range(width):
        (tag,), pos = _take(buf, pos, 1)
        if tag == _C_FLOAT:
            raw, pos = _take(buf, pos, 8 * n)
            columns.append(_packer("d", n).unpack(raw))
        elif tag == _C_INT:
            raw, pos = _take(buf, pos, 8 * n)
            columns.append(_packer("q", n).unpack(raw))
        elif tag == _C_STRZ:
            size, pos = _U32.unpack_from(buf, pos)[0], pos + 4
            text_raw, pos = _take(buf, pos, size)
            strings = bytes(text_raw).decode("utf-8", "surrogatepass").split("\x00")
            if len(strings) != n:
                msg = "string column does not hold one value per event"
                raise RecordError(msg)
            columns.append(strings)
        elif tag == _C_STR1 and version == 2:
            size, pos = _U32.unpack_from(buf, pos)[0], pos + 4
            text_raw, pos = _take(buf, pos, size)
            columns.append([bytes(text_raw).decode("utf-8", "surrogatepass")] * n)
        elif tag == _C_BOOL:
            raw, pos = _take(buf, pos, n)
            columns.append([b != 0 for b in raw])
        elif tag == _C_STR:
            raw, pos = _take(buf, pos, 4 * n)
            size, pos = _U32.unpack_from(buf, pos)[0], pos + 4
            text_raw, pos = _take(buf, pos, size)
            text = bytes(text_raw).decode("utf-8", "surrogatepass")
            ends = list(accumulate(_cooked("I", raw)))
            if (ends[-1] if ends else 0) != len(text):
                msg = "string column does not match its lengths"
                raise RecordError(msg)
            columns.append([text[a:b] for a, b in zip([0, *ends], ends, strict=False)])
        elif tag == _C_MIXED:
            size, pos = _U32.unpack_from(buf, pos)[0], pos + 4
            raw, pos = _take(buf, pos, size)
            if not len(raw) or raw[0] != EVENTS:  # row-wise only: no nesting
                msg = "mixed column is not a row-wise payload"
                raise RecordError(msg)
            inner = _decode(raw)
            if not isinstance(inner, Events) or len(inner.rows) != n:
                msg = "mixed column does not hold one value per event"
                raise RecordError(msg)
            columns.append([row[0] for row in inner.rows])
        else:
            msg = f"unknown column tag {tag}"
            raise RecordError(msg)
    if pos != len(buf):
        msg = "payload longer than its header says"
        raise RecordError(msg)
    rows: list[tuple[Value, ...]] = list(zip(*columns, strict=True)) if width else [()] * n
    stream = bytes(raw_stream).decode("utf-8", "surrogatepass")
    return Events(stream, timestamps, rows, at)
