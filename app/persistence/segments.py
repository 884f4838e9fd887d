"""Segment files of one plan's input log: names, record framing, scanning and reading.

A segment `<first position, 20 digits>.log` holds records back to back, each framed as

    length (I, payload bytes) | CRC32 of the length's 4 bytes and the payload (I) | payload

so a flipped length is caught like a flipped payload byte. A segment's records have the
positions first, first + 1, ... in file order; positions are not stored. `scan` tells a torn
tail (what a crash in the middle of a write leaves: a partial header, a record running past
the end of the file, a bad last record, or zero bytes to the end) from corruption with records
after it. Imports only `app.persistence.errors`.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.persistence.errors import InputLogError

FRAME = struct.Struct("<II")
LENGTH = struct.Struct("<I")
MAX_RECORD_BYTES = 1 << 28
SUFFIX = ".log"
_READ_BUFFER = 1 << 20


def segment_name(first: int) -> str:
    return f"{first:020d}{SUFFIX}"


def segment_first(name: str) -> int | None:
    """The first position a segment file name stands for, or None if it is not one."""
    stem = name[: -len(SUFFIX)]
    if name.endswith(SUFFIX) and stem.isdigit() and stem.isascii():
        return int(stem)
    return None


_CRC_CHUNK = 4096


def _crc(length: bytes, payload: bytes) -> int:
    """The CRC32 of `length` and `payload`, in chunks: `zlib.crc32` releases the GIL for more
    than 5 KiB, and a receiver's thread that lets go of it under the journal's lock waits for
    the other threads' time slices (up to 5 ms) to get it back."""
    crc = zlib.crc32(length)
    if len(payload) <= _CRC_CHUNK:
        return zlib.crc32(payload, crc)
    view = memoryview(payload)
    for start in range(0, len(view), _CRC_CHUNK):
        crc = zlib.crc32(view[start : start + _CRC_CHUNK], crc)
    return crc


def frame(payload: bytes) -> bytes:
    """`payload` framed for a segment."""
    return FRAME.pack(len(payload), _crc(LENGTH.pack(len(payload)), payload)) + payload


def _check(head: bytes, payload: bytes) -> bool:
    crc: int = FRAME.unpack(head)[1]
    return _crc(head[:4], payload) == crc


@dataclass(frozen=True, slots=True)
class Damage:
    """Where a segment stops being valid, why, and whether a crash mid-write explains it."""

    offset: int
    why: str
    torn: bool


@dataclass(frozen=True, slots=True)
class Scan:
    """A segment's valid records: how many and the byte offset where they end."""

    count: int
    end: int
    damage: Damage | None


def _zeros_from(path: Path, offset: int) -> bool:
    with path.open("rb") as g:
        g.seek(offset)
        while chunk := g.read(_READ_BUFFER):
            if chunk.count(0) != len(chunk):
                return False
    return True


def scan(path: Path) -> Scan:
    """Check every record of the segment at `path`."""
    size = path.stat().st_size
    offset = count = 0
    with path.open("rb", buffering=_READ_BUFFER) as f:
        while offset < size:
            head = f.read(FRAME.size)
            if len(head) < FRAME.size:
                return Scan(count, offset, Damage(offset, "partial record header", torn=True))
            length = FRAME.unpack(head)[0]
            end = offset + FRAME.size + length
            if length == 0 or length > MAX_RECORD_BYTES:
                why = f"impossible record length {length}"
                return Scan(count, offset, Damage(offset, why, _zeros_from(path, offset)))
            if end > size:
                why = f"record of {length} bytes runs past the end of the file"
                return Scan(count, offset, Damage(offset, why, torn=True))
            if not _check(head, f.read(length)):
                torn = end == size or _zeros_from(path, offset)
                return Scan(count, offset, Damage(offset, "CRC mismatch", torn))
            offset = end
            count += 1
    return Scan(count, offset, None)


class SegmentDamaged(InputLogError):
    """A record that `read` could not take: the byte offset and why."""

    def __init__(self, offset: int, why: str) -> None:
        self.offset = offset
        self.why = why
        super().__init__(f"offset {offset}: {why}")


def read(path: Path, first: int, after: int, end: int) -> Iterator[tuple[int, int, bytes]]:
    """(position, byte offset, payload) of the records of the segment at `path` after position `after`,
    up to byte offset `end` (what was appended when the read began)."""
    position = first
    offset = 0
    with path.open("rb", buffering=_READ_BUFFER) as f:
        while offset < end:
            head = f.read(FRAME.size)
            if len(head) < FRAME.size:
                raise SegmentDamaged(offset, "partial record header")
            length = FRAME.unpack(head)[0]
            if length == 0 or length > MAX_RECORD_BYTES or offset + FRAME.size + length > end:
                raise SegmentDamaged(offset, f"impossible record length {length}")
            if position <= after:
                f.seek(length, os.SEEK_CUR)
            else:
                payload = f.read(length)
                if not _check(head, payload):
                    raise SegmentDamaged(offset, "CRC mismatch")
                yield position, offset, payload
            offset += FRAME.size + length
            position += 1
