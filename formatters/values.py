"""Target type names and value conversion for the map formatter.

Owns the grammar of a declared type (`BIGINT`, `VARCHAR(20)`, `DECIMAL(10,2)`, `double`,
...) and the conversion of an attribute value to the Python kind such a column takes
(str, int, float, bool). Conversions never lose information silently: `2.5` is not an
integer, and `"abc"` is not a number. The RDBMS adapter reuses `parse_type_name` for its
`columns` declarations. Imports only `engine.errors`.
"""

from __future__ import annotations

import enum
import math
import re

from engine.errors import FormatError

_TYPE_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


class Kind(enum.Enum):
    """The Python kind of value a target type holds."""

    STRING = "string"
    INTEGER = "integer"
    REAL = "real"
    BOOLEAN = "boolean"


_KINDS: dict[str, Kind] = {
    # SiddhiQL / WSO2 type names
    "string": Kind.STRING,
    "int": Kind.INTEGER,
    "long": Kind.INTEGER,
    "float": Kind.REAL,
    "double": Kind.REAL,
    "bool": Kind.BOOLEAN,
    # SQL type names
    "varchar": Kind.STRING,
    "char": Kind.STRING,
    "text": Kind.STRING,
    "integer": Kind.INTEGER,
    "smallint": Kind.INTEGER,
    "bigint": Kind.INTEGER,
    "real": Kind.REAL,
    "double precision": Kind.REAL,
    "decimal": Kind.REAL,
    "numeric": Kind.REAL,
    "boolean": Kind.BOOLEAN,
}

TYPE_NAMES = tuple(_KINDS)


def parse_type_name(text: str) -> tuple[str, tuple[int, ...]] | None:
    """`"VARCHAR(20)"` → `("varchar", (20,))`; None when the text is not a type declaration."""
    m = _TYPE_RE.match(text)
    if m is None:
        return None
    base = " ".join(m.group(1).lower().split())
    args = tuple(int(g) for g in m.group(2, 3) if g is not None)
    return base, args


def kind_of(text: str) -> Kind | None:
    """The value kind of a declared type, or None when the type is unknown."""
    parsed = parse_type_name(text)
    if parsed is None:
        return None
    return _KINDS.get(parsed[0])


def convert(value: object, kind: Kind) -> object:
    """`value` as `kind`; None stays None. Raises FormatError when it cannot be done exactly."""
    if value is None:
        return None
    if kind is Kind.STRING:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if kind is Kind.INTEGER:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
    elif kind is Kind.REAL:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                result = float(value.strip())
            except ValueError:
                pass
            else:
                if math.isfinite(result):
                    return result
    elif kind is Kind.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    msg = f"cannot convert {value!r} to {kind.value} exactly"
    raise FormatError(msg)
