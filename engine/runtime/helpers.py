"""Functions that generated query code calls: Java-compatible arithmetic and the
null-safe variants used when a chunk holds nulls.

The fast code path uses plain Python operators and raises TypeError on a null; the
query then re-runs the chunk through the safe path built from these helpers.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

from engine.types import f32 as _f32

f32 = _f32


def idiv(a: int, b: int) -> int | None:
    """Siddhi integer division: truncates toward zero; a zero divisor gives null."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def imod(a: int, b: int) -> int | None:
    """Siddhi integer remainder: sign of the dividend; a zero divisor gives null."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return a - b * (q if (a >= 0) == (b >= 0) else -q)


def fdiv(a: float, b: float) -> float | None:
    """Siddhi floating division: a zero divisor gives null (not Infinity)."""
    if b == 0:
        return None
    return a / b


def fmod(a: float, b: float) -> float | None:
    if b == 0:
        return None
    return math.fmod(a, b)


# ---- null-safe variants -----------------------------------------------------------


def s_add(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


def s_sub(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a - b


def s_mul(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a * b


def s_idiv(a: Any, b: Any) -> Any:
    return None if a is None or b is None else idiv(a, b)


def s_fdiv(a: Any, b: Any) -> Any:
    return None if a is None or b is None else fdiv(a, b)


def s_imod(a: Any, b: Any) -> Any:
    return None if a is None or b is None else imod(a, b)


def s_fmod(a: Any, b: Any) -> Any:
    return None if a is None or b is None else fmod(a, b)


def s_neg(a: Any) -> Any:
    return None if a is None else -a


def s_f32(a: Any) -> Any:
    return None if a is None else _f32(a)


def s_lt(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a < b


def s_le(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a <= b


def s_gt(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a > b


def s_ge(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a >= b


def s_get(row: Any, i: int) -> Any:
    """`row[i]`, or None when the row is missing (an outer-join side, an unmatched state)."""
    return None if row is None else row[i]


def new_uuid() -> str:
    return str(uuid.uuid4())


# ---- built-in function implementations ----------------------------------------------

_nan = math.nan
_inf = math.inf


def coalesce(*values: Any) -> Any:
    for v in values:
        if v is not None:
            return v
    return None


_DOUBLE_MIN = 4.9e-324  # Java's Double.MIN_VALUE: the smallest positive double
_DOUBLE_MAX = 1.7976931348623157e308


def _narrow(value: float, kind: Any) -> Any:
    name = kind.value
    if name in ("int", "long"):
        return int(value) if math.isfinite(value) else (2**31 - 1 if name == "int" else 2**63 - 1)
    if name == "float":
        return f32(value)
    return value


def max_of(kind: Any, *values: Any) -> Any:
    """Siddhi's maximum(): starts from Double.MIN_VALUE (a positive number), skips nulls."""
    best = _DOUBLE_MIN
    for v in values:
        if v is not None and float(v) > best:
            best = float(v)
    return _narrow(best, kind)


def min_of(kind: Any, *values: Any) -> Any:
    """Siddhi's minimum(): starts from Double.MAX_VALUE, skips nulls."""
    best = _DOUBLE_MAX
    for v in values:
        if v is not None and float(v) < best:
            best = float(v)
    if best == _DOUBLE_MAX:
        name = kind.value
        return {"int": 2**31 - 1, "long": 2**63 - 1, "float": math.inf}.get(name, _DOUBLE_MAX)
    return _narrow(best, kind)


def size_of_set(value: Any) -> int:
    return len(value) if isinstance(value, (set, frozenset)) else 0


def create_set(value: Any) -> set[Any]:
    return {value}


def _shortest_digits(v: float, is_float: bool) -> str:
    """The shortest decimal repr that reads back as the same double (or 32-bit float)."""
    if not is_float:
        return repr(v)
    for p in range(1, 10):
        text = f"{v:.{p}g}"
        if f32(float(text)) == v:
            return repr(float(text))
    return repr(v)


def java_number_str(v: float, is_float: bool = False) -> str:
    """Java's Double.toString / Float.toString: `1.0`, `0.5`, `1.0E10`, `NaN`, `Infinity`."""
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    text = _shortest_digits(v, is_float)
    a = abs(v)
    if 1e-3 <= a < 1e7:
        if "e" in text:
            text = f"{float(text):.{20}f}".rstrip("0")
        return text if "." in text else text + ".0"
    mantissa, _, exp = f"{float(text):e}".partition("e")
    digits = text.replace("-", "").replace(".", "").lstrip("0")
    if "e" in text:
        digits = text.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    digits = digits.rstrip("0") or "0"
    lead, rest = digits[0], digits[1:] or "0"
    sign = "-" if v < 0 else ""
    return f"{sign}{lead}.{rest}E{int(exp)}"


def _python_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "object"


def instance_of(value: Any, kind: Any) -> bool:
    """instanceOfX() on an `object` attribute: Python ints are Siddhi ints when they fit."""
    name = kind.value
    k = _python_kind(value)
    if name == "bool":
        return k == "bool"
    if name == "string":
        return k == "string"
    if name == "int":
        return k == "int" and -(2**31) <= value < 2**31
    if name == "long":
        return k == "int" and not -(2**31) <= value < 2**31
    if name in ("double", "float"):
        return k == "float"
    return value is not None


def cast(value: Any, kind: Any) -> Any:
    """cast(): relabels the value's type without converting it, as Siddhi does."""
    return value


def convert(value: Any, src: Any, dst: Any) -> Any:
    """convert(): Siddhi's conversions between string, numbers and bool (None if impossible)."""
    if value is None:
        return None
    to = dst.value
    try:
        if to == "string":
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, float):
                return java_number_str(value, src.value == "float")
            return str(value)
        if to == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str):
                return value.strip().lower() == "true"
            if isinstance(value, (int, float)):
                return value == 1
            return None
        if to in ("int", "long"):
            if isinstance(value, bool):
                return 1 if value else 0
            if isinstance(value, str):
                return int(value.strip())
            if isinstance(value, float):
                if value != value:
                    return 0
                return int(value)
            return int(value)
        if to in ("double", "float"):
            if isinstance(value, bool):
                return 1.0 if value else 0.0
            number = float(value.strip()) if isinstance(value, str) else float(value)
            return f32(number) if to == "float" else number
    except (ValueError, TypeError, OverflowError):
        return None
    return value


def table_any(table: Any, ids: Any, pred: Any) -> bool:
    """`cond in Table`: does any row (of the looked-up ones, if a key narrowed them) match?"""
    rows = table._rows  # noqa: SLF001 - the table's own storage, read-only here
    if ids is None:
        return any(pred(row) for row in rows.values())
    return any(pred(rows[i]) for i in ids if i in rows)


def pev(chain: Any, i: int) -> Any:
    """The row of event `i` of a pattern state's chain (negative: from the end), or None."""
    if chain is None:
        return None
    try:
        return chain[i][1]
    except IndexError:
        return None


def pts(chain: Any, i: int) -> Any:
    """The timestamp of event `i` of a pattern state's chain, or None."""
    if chain is None:
        return None
    try:
        return chain[i][0]
    except IndexError:
        return None
