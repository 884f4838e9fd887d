"""TBinaryProtocol primitives: a bounded stream reader and value encoders.

Owns the byte level of Thrift (PROTOCOL §2): big-endian integers, doubles, length-prefixed
strings, and skipping values of any type. `Reader` pulls bytes from a socket only as they
arrive and refuses, before allocating, any message that would exceed its byte budget, so a
hostile length prefix costs nothing; with an `InflightBudget` it also takes every byte it
reads from that node-wide budget until its message is done. Knows nothing of services or
bundles.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from adapters.thrift.budget import FIRST_READ, InflightBudget
from adapters.thrift.errors import ConnectionClosed, ThriftProtocolError

STOP, BOOL, BYTE, DOUBLE, I16 = 0, 2, 3, 4, 6
I32, I64, STRING, STRUCT = 8, 10, 11, 12
MAP, SET, LIST = 13, 14, 15
CALL, REPLY, EXCEPTION, ONEWAY = 1, 2, 3, 4
VERSION_1 = 0x80010000
MAX_DEPTH = 64
_FIXED_SIZE = {BOOL: 1, BYTE: 1, DOUBLE: 8, I16: 2, I32: 4, I64: 8}
_READ_CHUNK = 256 * 1024

I8S = struct.Struct(">b")
I16S = struct.Struct(">h")
I32S = struct.Struct(">i")
I64S = struct.Struct(">q")
F64S = struct.Struct(">d")
FIELD = struct.Struct(">bh")
LIST_HEADER = struct.Struct(">bi")
MAP_HEADER = struct.Struct(">bbi")

unpack_i32 = I32S.unpack_from
pack_i32 = I32S.pack


class Reader:
    """Reads Thrift values from a byte source, within `limit` bytes per message.

    `buf` and `pos` are public so that hot loops (bundle lists) can walk the buffer with
    local variables and call `ensure` only when they reach its end. `limit` may be raised
    in the middle of a message: a server starts a connection with a small limit and raises it
    from `on_session` once the message has shown a valid session (bundles carry it first).
    """

    __slots__ = (
        "buf",
        "pos",
        "limit",
        "limit_key",
        "on_session",
        "_recv",
        "_start",
        "_budget",
        "_wait",
        "_held",
    )

    def __init__(
        self,
        recv: Callable[[int], bytes],
        limit: int,
        budget: InflightBudget | None = None,
        budget_wait: float | None = None,
    ) -> None:
        self.buf = b""
        self.pos = 0
        self.limit = limit
        self.limit_key = "max_message_bytes"  # named in the error when a message exceeds `limit`
        self.on_session: Callable[[str], None] | None = None
        self._recv = recv
        self._start = 0
        self._budget = budget
        self._wait = budget_wait
        self._held = 0  # bytes of the budget taken for the current message (and what is buffered)

    @classmethod
    def of(cls, data: bytes, limit: int | None = None) -> Reader:
        """A reader over bytes already in memory (tests, replies parsed from captures)."""
        reader = cls(lambda _n: b"", len(data) if limit is None else limit)
        reader.buf = bytes(data)
        return reader

    def begin(self) -> None:
        """Mark the start of a message: the byte budget counts from here."""
        self.buf = self.buf[self.pos :]
        self.pos = 0
        self._start = 0
        if self._budget is not None and self._held > len(self.buf):
            self._budget.give(self._held - len(self.buf))
            self._held = len(self.buf)

    def release(self) -> None:
        """Give back everything taken from the in-flight budget (the connection is done)."""
        if self._budget is not None:
            self._budget.give(self._held)
            self._held = 0

    def ensure(self, n: int) -> None:
        """Make `buf[pos:pos + n]` available, reading from the source as bytes arrive."""
        have = len(self.buf) - self.pos
        if have >= n:
            return
        room = self._start + self.limit - len(self.buf)
        if n - have > room:
            msg = (
                f"message needs more than {self.limit} bytes ({self.limit_key}); "
                "raise the limit if such messages are legitimate"
            )
            raise ThriftProtocolError(msg)
        parts = [self.buf[self.pos :]]
        while have < n:
            want = min(_READ_CHUNK, room)
            chunk = self._recv(want) if self._budget is None else self._recv_within_budget(want)
            if not chunk:
                clean = have == 0 and self.pos == self._start
                msg = "connection closed by peer" if clean else "connection closed in the middle of a message"
                raise ConnectionClosed(msg, clean=clean)
            parts.append(chunk)
            have += len(chunk)
            room -= len(chunk)
        self._start -= self.pos
        self.buf = b"".join(parts)
        self.pos = 0

    def _recv_within_budget(self, want: int) -> bytes:
        assert self._budget is not None
        if self._held == 0:  # waiting for a message: a connection may idle here, holding little
            want = min(want, FIRST_READ)
        if not self._budget.take(want, self._wait):
            msg = (
                f"the node already holds its limit of {self._budget.limit} bytes of unfinished messages "
                "(thrift.max_inflight_bytes); send again later"
            )
            raise ThriftProtocolError(msg)
        try:
            chunk = self._recv(want)
        except BaseException:
            self._budget.give(want)
            raise
        self._budget.give(want - len(chunk))
        self._held += len(chunk)
        return chunk

    def count(self, n: int, min_size: int, what: str) -> int:
        """Check a declared element count or length before anything is allocated for it."""
        if n < 0:
            msg = f"negative {what} ({n})"
            raise ThriftProtocolError(msg)
        if n * min_size > self.limit:
            msg = f"declared {what} {n} exceeds {self.limit} bytes ({self.limit_key})"
            raise ThriftProtocolError(msg)
        return n

    def i8(self) -> int:
        self.ensure(1)
        value = I8S.unpack_from(self.buf, self.pos)[0]
        self.pos += 1
        return int(value)

    def i16(self) -> int:
        self.ensure(2)
        value = I16S.unpack_from(self.buf, self.pos)[0]
        self.pos += 2
        return int(value)

    def i32(self) -> int:
        self.ensure(4)
        value = unpack_i32(self.buf, self.pos)[0]
        self.pos += 4
        return int(value)

    def i64(self) -> int:
        self.ensure(8)
        value = I64S.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return int(value)

    def f64(self) -> float:
        self.ensure(8)
        value = F64S.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return float(value)

    def boolean(self) -> bool:
        return self.i8() == 1

    def field_header(self) -> tuple[int, int]:
        """`(type, id)` of the next struct field; type STOP ends the struct (id 0)."""
        self.ensure(1)
        ftype = self.buf[self.pos]
        if ftype == STOP:
            self.pos += 1
            return STOP, 0
        self.ensure(3)
        ftype, fid = FIELD.unpack_from(self.buf, self.pos)
        self.pos += 3
        return ftype, fid

    def list_header(self) -> tuple[int, int]:
        self.ensure(5)
        etype, n = LIST_HEADER.unpack_from(self.buf, self.pos)
        self.pos += 5
        return etype, self.count(n, _FIXED_SIZE.get(etype, 1), "list size")

    def map_header(self) -> tuple[int, int, int]:
        self.ensure(6)
        ktype, vtype, n = MAP_HEADER.unpack_from(self.buf, self.pos)
        self.pos += 6
        return ktype, vtype, self.count(n, 2, "map size")

    def binary(self, n: int | None = None) -> bytes:
        size = self.count(self.i32() if n is None else n, 1, "string length")
        self.ensure(size)
        data = self.buf[self.pos : self.pos + size]
        self.pos += size
        return data

    def string(self, n: int | None = None) -> str:
        """A UTF-8 string; invalid sequences become U+FFFD, as Java's decoder does."""
        return self.binary(n).decode("utf-8", "replace")

    def skip(self, ttype: int, depth: int = 0) -> None:
        """Read past one value of `ttype`, checking every length on the way."""
        if depth > MAX_DEPTH:
            msg = f"values nested deeper than {MAX_DEPTH} levels"
            raise ThriftProtocolError(msg)
        size = _FIXED_SIZE.get(ttype)
        if size is not None:
            self.ensure(size)
            self.pos += size
        elif ttype == STRING:
            self.binary()
        elif ttype == STRUCT:
            while True:
                ftype, _fid = self.field_header()
                if ftype == STOP:
                    return
                self.skip(ftype, depth + 1)
        elif ttype == MAP:
            self.skip_pairs(*self.map_header(), depth=depth + 1)
        elif ttype in (LIST, SET):
            self.skip_items(*self.list_header(), depth=depth + 1)
        else:
            msg = f"unknown Thrift type code {ttype}"
            raise ThriftProtocolError(msg)

    def skip_items(self, etype: int, n: int, depth: int = 0) -> None:
        """Read past the `n` elements of a list or set whose header was already read."""
        fixed = _FIXED_SIZE.get(etype)
        if fixed is not None:
            self.ensure(n * fixed)
            self.pos += n * fixed
            return
        for _ in range(n):
            self.skip(etype, depth)

    def skip_pairs(self, ktype: int, vtype: int, n: int, depth: int = 0) -> None:
        """Read past the `n` entries of a map whose header was already read."""
        for _ in range(n):
            self.skip(ktype, depth)
            self.skip(vtype, depth)


def encode_string(value: str) -> bytes:
    data = value.encode("utf-8")
    return pack_i32(len(data)) + data


def field_string(fid: int, value: str) -> bytes:
    return FIELD.pack(STRING, fid) + encode_string(value)


def field_i32(fid: int, value: int) -> bytes:
    return FIELD.pack(I32, fid) + pack_i32(value)


def field_bool(fid: int, value: bool) -> bytes:
    return FIELD.pack(BOOL, fid) + (b"\x01" if value else b"\x00")


def field_struct(fid: int, body: bytes) -> bytes:
    """A struct field; `body` must end with its STOP byte."""
    return FIELD.pack(STRUCT, fid) + body


def message_header(name: str, mtype: int, seqid: int) -> bytes:
    """The strict message header Java writes and expects (§2)."""
    return pack_i32((VERSION_1 | mtype) - (1 << 32)) + encode_string(name) + pack_i32(seqid)
