"""SiddhiQL attribute types and the value rules that go with them.

Siddhi's `float` is a 32-bit IEEE float: values of float attributes are rounded to
32 bits when they enter the engine and after float arithmetic, so comparisons and
sums behave as they do in Siddhi. Imports nothing of ours.
"""

from __future__ import annotations

import enum
import struct
from array import array

_F32 = struct.Struct("<f")


class AttrType(enum.Enum):
    STRING = "string"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    BOOL = "bool"
    OBJECT = "object"

    def __str__(self) -> str:
        return self.value

    @property
    def is_numeric(self) -> bool:
        return self in _NUMERIC_RANK

    @classmethod
    def parse(cls, name: str) -> AttrType | None:
        try:
            return cls(name.lower())
        except ValueError:
            return None


_NUMERIC_RANK = {AttrType.INT: 0, AttrType.LONG: 1, AttrType.FLOAT: 2, AttrType.DOUBLE: 3}
NUMERIC_TYPES = frozenset(_NUMERIC_RANK)


def widest(a: AttrType, b: AttrType) -> AttrType:
    """Result type of arithmetic on two numeric types (int/int stays int, etc.)."""
    return a if _NUMERIC_RANK[a] >= _NUMERIC_RANK[b] else b


def f32(value: float) -> float:
    """Round a Python float to the nearest 32-bit float."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return value


def f32_column(values: list[float]) -> list[float]:
    """Round a whole column to 32-bit floats in C (None not allowed)."""
    return array("f", values).tolist()


INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def coerce(value: object, kind: AttrType) -> object:
    """Convert one external value (e.g. from JSON) to an attribute of `kind`.

    Raises TypeError or ValueError with a message naming the expected type.
    """
    if value is None:
        return None
    if kind is AttrType.STRING:
        if isinstance(value, str):
            return value
    elif kind is AttrType.BOOL:
        if isinstance(value, bool):
            return value
    elif kind is AttrType.INT or kind is AttrType.LONG:
        if isinstance(value, int) and not isinstance(value, bool):
            lo, hi = (INT_MIN, INT_MAX) if kind is AttrType.INT else (LONG_MIN, LONG_MAX)
            if not lo <= value <= hi:
                msg = f"{value} is out of range for {kind}"
                raise ValueError(msg)
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind is AttrType.FLOAT:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return f32(float(value))
    elif kind is AttrType.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    else:
        return value
    msg = f"expected {kind}, got {type_name(value)} {value!r}"
    raise TypeError(msg)


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def type_of_value(value: object) -> AttrType:
    """The SiddhiQL type a Python value would have (ints are longs when large)."""
    if isinstance(value, bool):
        return AttrType.BOOL
    if isinstance(value, int):
        return AttrType.INT if INT_MIN <= value <= INT_MAX else AttrType.LONG
    if isinstance(value, float):
        return AttrType.DOUBLE
    if isinstance(value, str):
        return AttrType.STRING
    return AttrType.OBJECT
