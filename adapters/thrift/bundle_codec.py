"""The wire form of `ThriftEventBundle` (PROTOCOL §3.3), read and written by hand.

This is the hot path of the receiver: fixed-size lists are unpacked with one `struct` call
each, and the string list is walked with local variables, touching the `Reader` only when
its buffer runs out. Fields are written in ascending id order and optional lists only when
non-empty, as the Java clients do, which reproduces §6.3 byte for byte. A field or list of
an unexpected wire type is skipped and counts as unset (§2).
"""

from __future__ import annotations

import struct
from typing import Any

from adapters.thrift.codec import (
    BOOL,
    DOUBLE,
    FIELD,
    I32,
    I64,
    LIST,
    LIST_HEADER,
    MAP,
    MAP_HEADER,
    STOP,
    STRING,
    Reader,
    encode_string,
    field_i32,
    field_string,
    pack_i32,
    unpack_i32,
)
from adapters.thrift.errors import EventEncodingError
from adapters.thrift.events import Bundle

_FIXED = {3: (I32, 4, "i"), 4: (I64, 8, "q"), 5: (DOUBLE, 8, "d")}
_IS_TRUE = (1).__eq__


def read_bundle(r: Reader) -> Bundle:
    """Read one bundle struct (after its field header) from `r`."""
    bundle = Bundle(typed=True)
    while True:
        ftype, fid = r.field_header()
        if ftype == STOP:
            return bundle
        if fid == 1 and ftype == STRING:
            bundle.session_id = r.string()
            if r.on_session is not None:
                r.on_session(bundle.session_id)
        elif fid == 2 and ftype == I32:
            bundle.event_num = r.i32()
        elif 3 <= fid <= 7 and ftype == LIST:
            _read_list(r, bundle, fid)
        elif fid == 8 and ftype == MAP:
            bundle.arbitrary = _read_arbitrary(r)
        else:
            r.skip(ftype)


def _read_list(r: Reader, bundle: Bundle, fid: int) -> None:
    etype, n = r.list_header()
    if fid in _FIXED:
        expected, size, code = _FIXED[fid]
        if etype != expected:
            r.skip_items(etype, n)
            return
        r.ensure(n * size)
        values: Any = struct.unpack_from(f">{n}{code}", r.buf, r.pos)
        r.pos += n * size
        if fid == 3:
            bundle.ints = values
        elif fid == 4:
            bundle.longs = values
        else:
            bundle.doubles = values
    elif fid == 6:
        if etype != BOOL:
            r.skip_items(etype, n)
            return
        r.ensure(n)
        bundle.bools = list(map(_IS_TRUE, r.buf[r.pos : r.pos + n]))
        r.pos += n
    elif etype != STRING:
        r.skip_items(etype, n)
    else:
        bundle.strings = read_strings(r, r.count(n, 4, "string list size"))


def read_strings(r: Reader, n: int) -> list[str]:
    """`n` length-prefixed UTF-8 strings, decoded straight from the reader's buffer.

    A bundle repeats its stream id once per event and usually few distinct values per
    attribute, so each distinct byte string is decoded once per list (the cache is bounded by
    the message size). The buffer is refilled only when a length or a string runs past it.
    """
    out: list[str] = []
    append = out.append
    decoded: dict[bytes, str] = {}
    known = decoded.get
    buf, pos, end = r.buf, r.pos, len(r.buf)
    for _ in range(n):
        start = pos + 4
        if start > end:
            r.pos = pos
            r.ensure(4)
            buf, pos, end = r.buf, r.pos, len(r.buf)
            start = pos + 4
        size = unpack_i32(buf, pos)[0]
        pos = start + size
        if size < 0 or pos > end:
            r.pos = start
            r.ensure(r.count(size, 1, "string length"))
            buf, start, end = r.buf, r.pos, len(r.buf)
            pos = start + size
        raw = buf[start:pos]
        text = known(raw)
        if text is None:
            text = decoded[raw] = raw.decode("utf-8", "replace")
        append(text)
    r.pos = pos
    return out


def _read_arbitrary(r: Reader) -> dict[int, dict[str, str]] | None:
    ktype, vtype, n = r.map_header()
    if ktype != I32 or vtype != MAP:
        r.skip_pairs(ktype, vtype, n)
        return None
    out: dict[int, dict[str, str]] = {}
    for _ in range(n):
        key = r.i32()
        ik, iv, m = r.map_header()
        if ik != STRING or iv != STRING:
            r.skip_pairs(ik, iv, m)
            continue
        out[key] = {r.string(): r.string() for _ in range(m)}
    return out


def write_bundle(bundle: Bundle) -> bytes:
    """The bundle struct (ending with STOP), fields in the order Java writes them."""
    try:
        return b"".join(_bundle_parts(bundle))
    except (struct.error, AttributeError, TypeError, OverflowError) as exc:
        msg = f"bundle values do not fit their declared Thrift types ({exc}); check the event values against the stream definition"
        raise EventEncodingError(msg) from exc


def _bundle_parts(bundle: Bundle) -> list[bytes]:
    parts: list[bytes] = []
    if bundle.session_id is not None:
        parts.append(field_string(1, bundle.session_id))
    parts.append(field_i32(2, bundle.event_num))
    for fid, values in ((3, bundle.ints), (4, bundle.longs), (5, bundle.doubles)):
        if values or fid == 4:
            etype, _size, code = _FIXED[fid]
            n = len(values)
            parts.append(
                FIELD.pack(LIST, fid) + LIST_HEADER.pack(etype, n) + struct.pack(f">{n}{code}", *values)
            )
    if bundle.bools:
        parts.append(
            FIELD.pack(LIST, 6) + LIST_HEADER.pack(BOOL, len(bundle.bools)) + bytes(map(bool, bundle.bools))
        )
    parts.append(FIELD.pack(LIST, 7) + LIST_HEADER.pack(STRING, len(bundle.strings)))
    parts.extend(map(encode_string, bundle.strings))
    if bundle.arbitrary:
        parts.append(FIELD.pack(MAP, 8) + MAP_HEADER.pack(I32, MAP, len(bundle.arbitrary)))
        for key, data in bundle.arbitrary.items():
            parts.append(pack_i32(key) + MAP_HEADER.pack(STRING, STRING, len(data)))
            for k, v in data.items():
                parts.append(encode_string(k) + encode_string(v))
    parts.append(b"\x00")
    return parts
