"""Snapshot encoding: a versioned, checksummed binary form of plain values.

Operators snapshot to trees of None/bool/int/float/str/bytes/list/tuple/dict only; this
module turns such a tree into bytes and back. No pickle: restoring a snapshot can never
run code, and a corrupt or foreign blob fails with StateError.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from engine.errors import StateError

MAGIC = b"CEPS"
# The blob format: 2 keys every part of the state by query or definition (engine/runtime/parts.py).
STATE_FORMAT = 2

_NONE, _TRUE, _FALSE, _INT, _FLOAT, _STR, _BYTES, _LIST, _TUPLE, _DICT, _BIGINT, _SET = range(12)
_Q = struct.Struct("<q")
_D = struct.Struct("<d")
_I = struct.Struct("<I")


def _encode(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(_NONE)
    elif value is True:
        out.append(_TRUE)
    elif value is False:
        out.append(_FALSE)
    elif isinstance(value, int):
        if -(2**63) <= value < 2**63:
            out.append(_INT)
            out += _Q.pack(value)
        else:
            raw = str(value).encode()
            out.append(_BIGINT)
            out += _I.pack(len(raw)) + raw
    elif isinstance(value, float):
        out.append(_FLOAT)
        out += _D.pack(value)
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        out.append(_STR)
        out += _I.pack(len(raw)) + raw
    elif isinstance(value, (bytes, bytearray)):
        out.append(_BYTES)
        out += _I.pack(len(value)) + bytes(value)
    elif isinstance(value, list):
        out.append(_LIST)
        out += _I.pack(len(value))
        for v in value:
            _encode(v, out)
    elif isinstance(value, tuple):
        out.append(_TUPLE)
        out += _I.pack(len(value))
        for v in value:
            _encode(v, out)
    elif isinstance(value, dict):
        out.append(_DICT)
        out += _I.pack(len(value))
        for k, v in value.items():
            _encode(k, out)
            _encode(v, out)
    elif isinstance(value, (set, frozenset)):
        out.append(_SET)
        items = list(value)
        out += _I.pack(len(items))
        for v in items:
            _encode(v, out)
    else:
        msg = f"cannot snapshot a value of type {type(value).__name__}"
        raise StateError(msg)


def _decode(buf: memoryview, pos: int) -> tuple[Any, int]:
    tag = buf[pos]
    pos += 1
    if tag == _NONE:
        return None, pos
    if tag == _TRUE:
        return True, pos
    if tag == _FALSE:
        return False, pos
    if tag == _INT:
        return _Q.unpack_from(buf, pos)[0], pos + 8
    if tag == _FLOAT:
        return _D.unpack_from(buf, pos)[0], pos + 8
    if tag in (_STR, _BYTES, _BIGINT):
        (n,) = _I.unpack_from(buf, pos)
        pos += 4
        raw = bytes(buf[pos : pos + n])
        if len(raw) != n:
            msg = "snapshot is truncated"
            raise StateError(msg)
        pos += n
        if tag == _STR:
            return raw.decode("utf-8", "surrogatepass"), pos
        if tag == _BIGINT:
            return int(raw.decode()), pos
        return raw, pos
    if tag in (_LIST, _TUPLE, _SET):
        (n,) = _I.unpack_from(buf, pos)
        pos += 4
        items = []
        for _ in range(n):
            v, pos = _decode(buf, pos)
            items.append(v)
        if tag == _TUPLE:
            return tuple(items), pos
        if tag == _SET:
            return set(items), pos
        return items, pos
    if tag == _DICT:
        (n,) = _I.unpack_from(buf, pos)
        pos += 4
        d = {}
        for _ in range(n):
            k, pos = _decode(buf, pos)
            v, pos = _decode(buf, pos)
            d[k] = v
        return d, pos
    msg = f"snapshot holds an unknown value tag {tag}"
    raise StateError(msg)


def encode(tree: Any, plan_name: str) -> bytes:
    """`CEPS`, the format version, the plan's name, the tree, then the SHA-256 of all before."""
    body = bytearray()
    _encode(tree, body)
    header = MAGIC + struct.pack("<H", STATE_FORMAT)
    name = plan_name.encode()
    meta = _I.pack(len(name)) + name
    digest = hashlib.sha256(header + meta + body).digest()
    return header + meta + bytes(body) + digest


def decode(blob: bytes, plan_name: str | None = None) -> Any:
    """The tree of a blob `encode` made; StateError if it is foreign, of another format
    version, corrupt, truncated, or (given `plan_name`) of another plan."""
    if blob[:4] != MAGIC[: len(blob)] or not blob:
        msg = "not a Cepheus snapshot (it does not start with the snapshot header)"
        raise StateError(msg)
    if len(blob) < 6:
        msg = "snapshot is truncated"
        raise StateError(msg)
    (version,) = struct.unpack_from("<H", blob, 4)
    if version != STATE_FORMAT:
        msg = f"snapshot format version {version} is not supported (this engine reads {STATE_FORMAT})"
        raise StateError(msg)
    if len(blob) < 6 + 4 + 32:
        msg = "snapshot is truncated"
        raise StateError(msg)
    payload, digest = blob[:-32], blob[-32:]
    if hashlib.sha256(payload).digest() != digest:
        msg = "snapshot checksum does not match: the snapshot is corrupt or truncated"
        raise StateError(msg)
    (n,) = _I.unpack_from(blob, 6)
    if 10 + n > len(payload):
        msg = "snapshot is truncated or corrupt"
        raise StateError(msg)
    taken_from = blob[10 : 10 + n].decode(errors="replace")
    if plan_name is not None and taken_from != plan_name:
        msg = f"snapshot was taken from plan '{taken_from}', not '{plan_name}'"
        raise StateError(msg)
    try:
        tree, pos = _decode(memoryview(payload), 10 + n)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        msg = "snapshot is truncated or corrupt"
        raise StateError(msg) from exc
    if pos != len(payload):
        msg = "snapshot has trailing bytes"
        raise StateError(msg)
    return tree


class Stateful:
    """Anything whose state a snapshot must carry."""

    def snapshot(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def restore(self, state: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError
