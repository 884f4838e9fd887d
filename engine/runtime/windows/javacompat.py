"""The Java behaviours that decide what some Siddhi windows emit, and in which order.

- `java_str`: `String.valueOf` of a Siddhi value (the keys of frequent and unique windows).
- `java_hash`: `hashCode()` of a key object (`String`, `Integer`, `Long`, `Double`, ...).
- `java_rem`: Java's `%` on longs (the sign follows the dividend).
- `JavaMap`: a `HashMap` or `ConcurrentHashMap`, reproducing its iteration order: buckets
  by spread hash, insertion order within a bucket, when it resizes and, for the concurrent
  map, the order its resize leaves nodes in. Tree bins (8+ keys in one bucket) are not
  modelled.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Generic, TypeVar

from engine.types import AttrType, f32

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
K = TypeVar("K")
V = TypeVar("V")


# ---- strings and hash codes ---------------------------------------------------------------


def _java_decimal(text: str, neg: bool) -> str:
    """Java's Double/Float.toString layout for the digits of `text` (a positive number)."""
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    e = len(ds) - 1 + exponent  # power of ten of the first digit
    prefix = "-" if neg else ""
    if -3 <= e < 7:
        if e >= 0:
            whole = (ds[: e + 1]).ljust(e + 1, "0")
            return f"{prefix}{whole}.{ds[e + 1 :] or '0'}"
        return f"{prefix}0.{'0' * (-e - 1)}{ds}"
    return f"{prefix}{ds[0]}.{ds[1:] or '0'}E{e}"


def java_double_str(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if str(v).startswith("-") else "0.0"
    return _java_decimal(repr(abs(v)), v < 0)


def java_float_str(v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")) or v == 0:
        return java_double_str(v)
    a = abs(v)
    for p in range(1, 10):  # the shortest decimal that reads back as the same float
        text = f"{a:.{p - 1}e}"
        if f32(float(text)) == a:
            return _java_decimal(text, v < 0)
    return java_double_str(v)


def java_str(value: Any, kind: AttrType | None = None) -> str:
    """`String.valueOf(value)` for a value of Siddhi type `kind`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_str(value) if kind is AttrType.FLOAT else java_double_str(value)
    return str(value)


def string_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & M32
    return h


def java_hash(value: Any, kind: AttrType | None = None) -> int:
    """`value.hashCode()` as an unsigned 32-bit int (null hashes to 0, as in HashMap)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return string_hash(value)
    if isinstance(value, int):
        if kind is AttrType.INT:
            return value & M32
        v = value & M64
        return (v ^ (v >> 32)) & M32
    if isinstance(value, float):
        if kind is AttrType.FLOAT:
            return 0x7FC00000 if value != value else int(struct.unpack("<I", struct.pack("<f", value))[0])
        bits = 0x7FF8000000000000 if value != value else int(struct.unpack("<Q", struct.pack("<d", value))[0])
        return (bits ^ (bits >> 32)) & M32
    return string_hash(str(value))


# ---- HashMap / ConcurrentHashMap iteration order -----------------------------------------------


class JavaMap(Generic[K, V]):
    """Keys and values in a Java hash map's iteration order. `concurrent` selects
    ConcurrentHashMap (resizes when the size reaches 3/4 of the table, and its transfer
    reverses the nodes before the last run of a bucket) over HashMap (resizes above 3/4,
    keeps order). Neither shrinks, `clear()` included."""

    def __init__(self, hasher: Callable[[K], int], concurrent: bool) -> None:
        self.hasher = hasher
        self.concurrent = concurrent
        self.cap = 16
        self.table: list[list[K]] = [[] for _ in range(16)]
        self.data: dict[K, V] = {}
        self.hashes: dict[K, int] = {}

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: K) -> bool:
        return key in self.data

    def get(self, key: K) -> V | None:
        return self.data.get(key)

    def _bucket(self, h: int, cap: int) -> int:
        return (h ^ (h >> 16)) & (cap - 1)

    def put(self, key: K, value: V) -> V | None:
        """Set `key`; returns the value it replaces (None if the key is new)."""
        old = self.data.get(key)
        if key in self.data:
            self.data[key] = value
            return old
        h = self.hasher(key)
        self.hashes[key] = h
        self.data[key] = value
        self.table[self._bucket(h, self.cap)].append(key)
        n = len(self.data)
        if (n >= self.cap * 3 // 4) if self.concurrent else (n > self.cap * 3 // 4):
            self._resize()
        return None

    def remove(self, key: K) -> V | None:
        if key not in self.data:
            return None
        self.table[self._bucket(self.hashes.pop(key), self.cap)].remove(key)
        return self.data.pop(key)

    def clear(self) -> None:
        self.table = [[] for _ in range(self.cap)]
        self.data.clear()
        self.hashes.clear()

    def _resize(self) -> None:
        n = self.cap
        table: list[list[K]] = [[] for _ in range(2 * n)]
        for i, nodes in enumerate(self.table):
            if not nodes:
                continue
            bit = [self.hashes[k] & n for k in nodes]
            if self.concurrent:
                last_run, run_bit = 0, bit[0]
                for j in range(1, len(nodes)):
                    if bit[j] != run_bit:
                        run_bit, last_run = bit[j], j
                lo = list(nodes[last_run:]) if run_bit == 0 else []
                hi = list(nodes[last_run:]) if run_bit != 0 else []
                for j in range(last_run):
                    (lo if bit[j] == 0 else hi).insert(0, nodes[j])
            else:
                lo = [k for k, b in zip(nodes, bit, strict=True) if b == 0]
                hi = [k for k, b in zip(nodes, bit, strict=True) if b != 0]
            table[i], table[i + n] = lo, hi
        self.cap = 2 * n
        self.table = table

    def keys(self) -> list[K]:
        return [k for nodes in self.table for k in nodes]

    def values(self) -> list[V]:
        data = self.data
        return [data[k] for nodes in self.table for k in nodes]

    def items(self) -> list[tuple[K, V]]:
        data = self.data
        return [(k, data[k]) for nodes in self.table for k in nodes]

    def snapshot(self, value: Callable[[V], Any] = lambda v: v) -> Any:
        return {"cap": self.cap, "items": [[k, value(v)] for k, v in self.items()]}

    def restore(self, state: Any, value: Callable[[Any], V] = lambda v: v) -> None:
        self.cap = state["cap"]
        self.clear()
        for k, v in state["items"]:  # iteration order re-inserted gives the same buckets
            h = self.hasher(k)
            self.hashes[k] = h
            self.data[k] = value(v)
            self.table[self._bucket(h, self.cap)].append(k)


def java_rem(a: int, b: int) -> int:
    """Java's `a % b` on longs: the sign follows the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r
