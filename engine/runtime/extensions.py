"""Run-time side of the `str:`, `time:` and `math:` functions (siddhi-execution-string, -time,
-math, which every WSO2 CEP/SP/SI pack shipped). Each mirrors the extension's `execute`:
where the extension throws a SiddhiAppRuntimeException these raise ValueError, which fails
the chunk as a processing error naming the query."""

from __future__ import annotations

import copy
import datetime as _dt
import json
import math
import re
import struct
from functools import lru_cache
from typing import Any

from engine.runtime import java_dates
from engine.runtime.helpers import java_number_str
from engine.types import f32

DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"
TIME_UNITS = ("YEAR", "MONTH", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "QUARTER")

# ---- str: ---------------------------------------------------------------------------


def _java_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_number_str(v)
    return str(v)


def str_concat(*values: Any) -> str:
    """Null arguments are skipped, as StringBuilder appends of the non-null ones."""
    return "".join(_java_str(v) for v in values if v is not None)


def _need(value: Any, fn: str, which: str = "The argument") -> Any:
    if value is None:
        msg = f"Invalid input given to str:{fn}() function. {which} cannot be null"
        raise ValueError(msg)
    return value


def str_length(s: Any) -> int:
    return len(_need(s, "length"))


def str_lower(s: Any) -> str:
    return str(_need(s, "lower")).lower()


def str_upper(s: Any) -> str:
    return str(_need(s, "upper")).upper()


def str_contains(s: Any, part: Any) -> bool:
    if s is None:
        return False
    return _need(part, "contains", "Second argument") in s


def str_char_at(s: Any, i: Any) -> str:
    _need(s, "charat", "First argument")
    _need(i, "charat", "Second argument")
    if not 0 <= i < len(s):
        msg = f"Index argument {i} is negative or not less than the length of the given string {s}"
        raise ValueError(msg)
    return str(s[i])


def str_strcmp(a: Any, b: Any) -> int:
    """Java's String.compareTo: the first differing char's difference, else the length's."""
    _need(a, "strcmp", "First argument")
    _need(b, "strcmp", "Second argument")
    for x, y in zip(a, b, strict=False):
        if x != y:
            return ord(x) - ord(y)
    return len(a) - len(b)


@lru_cache(maxsize=256)
def java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regex as a Python one (the common subset: possessive and atomic forms aside)."""
    return re.compile(pattern)


def java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """Java's String.split(regex): no match gives the text; a zero-width match at the start
    makes no leading empty piece; trailing empty pieces are dropped."""
    pieces: list[str] = []
    start = 0
    for m in pattern.finditer(text):
        if m.end() == 0:
            continue
        if m.start() == m.end() and m.start() >= len(text):
            break
        pieces.append(text[start : m.start()])
        start = m.end()
    if not pieces:
        return [text]
    pieces.append(text[start:])
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def _substring(s: str, begin: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if begin < 0 or stop > len(s) or begin > stop:
        msg = f"begin {begin}, end {stop}, length {len(s)}"
        raise ValueError(msg)
    return s[begin:stop]


def str_substr(s: Any, a: Any, b: Any = None, three: bool = False) -> str:
    """`substr(s, begin)`, `substr(s, begin, length)`, `substr(s, regex)` (the first match, or
    ''), `substr(s, regex, group)`."""
    _need(s, "substr", "First argument")
    _need(a, "substr", "Second argument")
    if three:
        _need(b, "substr", "Third argument")
    if isinstance(a, str):
        m = java_regex(a).search(s)
        if m is None:
            return ""
        return m.group(b if three else 0) or ""
    return _substring(s, a, a + b if three else None)


# ---- math: --------------------------------------------------------------------------


def math_ceil(v: Any) -> float | None:
    return None if v is None else float(math.ceil(v)) if math.isfinite(v) else float(v)


def math_floor(v: Any) -> float | None:
    return None if v is None else float(math.floor(v)) if math.isfinite(v) else float(v)


def math_round(v: Any) -> int | None:
    """Java's Math.round: floor(v + 0.5); NaN gives 0."""
    if v is None:
        return None
    if v != v:
        return 0
    if not math.isfinite(v):
        return 2**63 - 1 if v > 0 else -(2**63)
    return int(math.floor(v + 0.5))


def math_power(a: Any, b: Any) -> float | None:
    if a is None or b is None:
        return None
    try:
        return float(math.pow(a, b))
    except (OverflowError, ValueError):
        return math.inf if a > 0 else math.nan


def math_ln(v: Any) -> float | None:
    if v is None:
        return None
    if v == 0:
        return -math.inf
    if v < 0 or v != v:
        return math.nan
    return math.log(v)


def math_get_exponent(v: Any) -> int | None:
    """Java's Math.getExponent(double): the unbiased binary exponent."""
    if v is None:
        return None
    bits = int(struct.unpack(">q", struct.pack(">d", float(v)))[0])
    return ((bits >> 52) & 0x7FF) - 1023


def math_parse_long(s: Any) -> int | None:
    if s is None:
        return None
    if not re.fullmatch(r"[+-]?\d+", s):
        msg = f'For input string: "{s}"'
        raise ValueError(msg)
    return int(s)


# ---- time: --------------------------------------------------------------------------


def _week_of_year(t: _dt.datetime) -> int:
    """Java's Calendar.WEEK_OF_YEAR with the US defaults (weeks start on Sunday; week 1 holds
    1 January), so the last days of December may be week 1 of the next year."""

    def sunday_index(d: _dt.date) -> int:
        return (d.weekday() + 1) % 7

    day = t.date()
    nxt = _dt.date(day.year + 1, 1, 1)
    if (nxt - day).days <= sunday_index(nxt):
        return 1
    jan1 = _dt.date(day.year, 1, 1)
    return ((day - jan1).days + sunday_index(jan1)) // 7 + 1


def _extract_field(ms: int, unit: str) -> int:
    t = java_dates.fields_of(ms)
    if unit == "YEAR":
        return t.year
    if unit == "MONTH":
        return t.month
    if unit == "SECOND":
        return t.second
    if unit == "MINUTE":
        return t.minute
    if unit == "HOUR":
        return t.hour
    if unit == "DAY":
        return t.day
    if unit == "WEEK":
        return _week_of_year(t)
    if unit == "QUARTER":
        return (t.month - 1) // 3 + 1
    return 0


def time_extract_ms(ms: Any, unit: str) -> int | None:
    return None if ms is None else _extract_field(ms, unit)


def time_extract_text(text: Any, fmt: Any, unit: str) -> int | None:
    if text is None or fmt is None:
        return None
    return _extract_field(java_dates.parse_ms(text, fmt), unit)


def time_parse(text: Any, fmt: Any) -> int | None:
    if text is None or fmt is None:
        return None
    return java_dates.parse_ms(text, fmt)


def time_format_ms(ms: Any, fmt: Any) -> str | None:
    if ms is None or fmt is None:
        return None
    return java_dates.format_ms(ms, fmt)


def time_reformat(text: Any, target: Any, source: Any) -> str | None:
    if text is None or target is None or source is None:
        return None
    return java_dates.format_ms(java_dates.parse_ms(text, source), target)


def time_add_text(text: Any, amount: Any, unit: str, fmt: Any, sign: int) -> str | None:
    if text is None or amount is None or fmt is None:
        return None
    ms = java_dates.add_units(java_dates.parse_ms(text, fmt), unit, sign * amount)
    return java_dates.format_ms(ms, fmt)


def time_add_ms(ms: Any, amount: Any, unit: str, sign: int) -> str | None:
    """dateAdd/dateSub on epoch ms return the result's millis as a string, as the extension."""
    if ms is None or amount is None:
        return None
    return str(java_dates.add_units(ms, unit, sign * amount))


def f32_or_none(v: Any) -> Any:
    return None if v is None else f32(v)


# ---- regex: -------------------------------------------------------------------------


def _regex_of(regex: Any, fn: str) -> re.Pattern[str]:
    if regex is None:
        msg = f"Invalid input given to regex:{fn}() function. First argument cannot be null"
        raise ValueError(msg)
    return java_regex(regex)


def regex_matches(regex: Any, s: Any) -> bool:
    pattern = _regex_of(regex, "matches")
    return s is not None and pattern.fullmatch(s) is not None


def regex_looking_at(regex: Any, s: Any) -> bool:
    pattern = _regex_of(regex, "lookingAt")
    return s is not None and pattern.match(s) is not None


def regex_find(regex: Any, s: Any, start: Any = 0) -> bool:
    pattern = _regex_of(regex, "find")
    if s is None or start is None:
        return False
    if not 0 <= start <= len(s):
        msg = f"Illegal start index {start}"
        raise ValueError(msg)
    return pattern.search(s, start) is not None


def regex_group(regex: Any, s: Any, group: Any) -> str | None:
    """The group of the first match; null when nothing matches or there is no such group."""
    pattern = _regex_of(regex, "group")
    if s is None or group is None:
        msg = "Invalid input given to regex:group() function. Second and third arguments cannot be null"
        raise ValueError(msg)
    m = pattern.search(s)
    if m is None or not 0 <= group <= pattern.groups:
        return None
    found: str | None = m.group(group)
    return found


# ---- map: and list: (siddhi-execution-map, -list) -------------------------------------
# Maps are dicts and lists are lists; like the extensions' HashMap and LinkedList, put, add,
# remove and replace change the object they are given and return it (map:clone and
# list:clone copy).


def _map(m: Any, fn: str) -> dict[Any, Any]:
    if not isinstance(m, dict):
        kind = "null" if m is None else type(m).__name__
        msg = f"map:{fn}(): the first argument must be a map, found {kind}"
        raise ValueError(msg)
    return m


def _list(v: Any, fn: str) -> list[Any]:
    if not isinstance(v, list):
        kind = "null" if v is None else type(v).__name__
        msg = f"list:{fn}(): the first argument must be a list, found {kind}"
        raise ValueError(msg)
    return v


def map_create(*kv: Any) -> dict[Any, Any]:
    return {kv[i]: kv[i + 1] for i in range(0, len(kv), 2)}


def map_create_from_json(text: Any) -> dict[Any, Any]:
    if not isinstance(text, str):
        msg = "map:createFromJSON(): data should be a string"
        raise ValueError(msg)
    try:
        value = json.loads(text)
    except ValueError as exc:
        msg = f"Cannot create JSON from '{text}' in create from json function"
        raise ValueError(msg) from exc
    if not isinstance(value, dict):
        msg = f"Cannot create JSON from '{text}' in create from json function"
        raise ValueError(msg)
    return value


def map_to_json(m: Any) -> str:
    return json.dumps(_map(m, "toJSON"), separators=(",", ":"), default=str)


def map_is_map(m: Any) -> bool:
    return isinstance(m, dict)


def map_put(m: Any, k: Any, v: Any) -> dict[Any, Any]:
    d = _map(m, "put")
    d[k] = v
    return d


def map_put_all(m: Any, other: Any) -> dict[Any, Any]:
    d = _map(m, "putAll")
    d.update(_map(other, "putAll"))
    return d


def map_get(m: Any, k: Any, *default: Any) -> Any:
    d = _map(m, "get")
    return d.get(k, default[0]) if default else d.get(k)


def map_contains_key(m: Any, k: Any) -> bool:
    return k in _map(m, "containsKey")


def map_contains_value(m: Any, v: Any) -> bool:
    return v in _map(m, "containsValue").values()


def map_is_empty(m: Any) -> bool:
    return not _map(m, "isEmpty")


def map_keys(m: Any) -> list[Any]:
    return list(_map(m, "keys"))


def map_values(m: Any) -> list[Any]:
    return list(_map(m, "values").values())


def map_size(m: Any) -> int:
    return len(_map(m, "size"))


def map_clone(m: Any) -> dict[Any, Any]:
    return dict(_map(m, "clone"))


def map_replace(m: Any, k: Any, v: Any) -> dict[Any, Any]:
    d = _map(m, "replace")
    if k in d:
        d[k] = v
    return d


def map_replace_all(m: Any, other: Any) -> dict[Any, Any]:
    d = _map(m, "replaceAll")
    for k, v in _map(other, "replaceAll").items():
        if k in d:
            d[k] = v
    return d


def map_remove(m: Any, *keys: Any) -> dict[Any, Any]:
    d = _map(m, "remove")
    for k in keys:
        d.pop(k, None)
    return d


def map_clear(m: Any) -> dict[Any, Any]:
    d = _map(m, "clear")
    d.clear()
    return d


def list_create(*values: Any) -> list[Any]:
    return list(values)


def list_is_list(v: Any) -> bool:
    return isinstance(v, list)


def list_add(v: Any, item: Any, *index: Any) -> list[Any]:
    items = _list(v, "add")
    if index:
        if not 0 <= index[0] <= len(items):
            msg = f"list:add(): index {index[0]} is out of range for a list of {len(items)}"
            raise ValueError(msg)
        items.insert(index[0], item)
    else:
        items.append(item)
    return items


def list_get(v: Any, i: Any) -> Any:
    items = _list(v, "get")
    return items[i] if i is not None and 0 <= i < len(items) else None


def list_contains(v: Any, item: Any) -> bool:
    return item in _list(v, "contains")


def list_is_empty(v: Any) -> bool:
    return not _list(v, "isEmpty")


def list_remove(v: Any, item: Any) -> list[Any]:
    """Removes the first element equal to the value (List.remove(Object))."""
    items = _list(v, "remove")
    if item in items:
        items.remove(item)
    return items


def list_size(v: Any) -> int:
    return len(_list(v, "size"))


def list_clone(v: Any) -> list[Any]:
    return list(_list(v, "clone"))


# ---- json: (siddhi-execution-json) ----------------------------------------------------
# A JSON value is a string of JSON or an object (dicts, lists, numbers...). Paths are the
# JsonPath subset `$`, `.name`, `['name']`, `[index]` and `[*]`; a path without `$` reads
# as `$.path`, as JsonPath does.

_PATH_STEP = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\s*(-?\d+)\s*\]|\[\s*\*\s*\]|\.\*"
)

_MISSING = object()


@lru_cache(maxsize=256)
def json_path(path: str) -> tuple[tuple[str, Any], ...]:
    """The path as steps ("key", name), ("index", n), ("all", None); ValueError if Cepheus
    cannot read it."""
    text = path.strip()
    if not text.startswith("$"):
        text = "$." + text
    steps: list[tuple[str, Any]] = []
    i = 1
    while i < len(text):
        m = _PATH_STEP.match(text, i)
        if m is None:
            msg = (
                f"JSON path '{path}' is not supported at '{text[i:]}' "
                "(Cepheus reads $, .name, ['name'], [index] and [*])"
            )
            raise ValueError(msg)
        name = m.group(1) or m.group(2) or m.group(3)
        if name is not None:
            steps.append(("key", name))
        elif m.group(4) is not None:
            steps.append(("index", int(m.group(4))))
        else:
            steps.append(("all", None))
        i = m.end()
    return tuple(steps)


def _json_doc(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            msg = f"The input JSON is not a valid JSON. Input JSON - {value}"
            raise ValueError(msg) from exc
    return value


def _json_read(doc: Any, path: str) -> Any:
    """The value at the path, a list for a path with [*], or _MISSING."""
    current: list[Any] = [doc]
    many = False
    for kind, arg in json_path(path):
        nxt: list[Any] = []
        for v in current:
            if kind == "key" and isinstance(v, dict) and arg in v:
                nxt.append(v[arg])
            elif kind == "index" and isinstance(v, list) and -len(v) <= arg < len(v):
                nxt.append(v[arg])
            elif kind == "all":
                many = True
                nxt.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
        if not nxt and not many:
            return _MISSING
        current = nxt
    return current if many else current[0]


def _gson(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _java_text(v: Any) -> str:
    return _java_str(v) if not isinstance(v, (dict, list)) else _gson(v)


def _single(found: Any) -> Any:
    if found is _MISSING:
        return None
    if isinstance(found, list):
        return found[0] if len(found) == 1 else None
    return found


def json_get_string(value: Any, path: Any) -> str | None:
    found = _json_read(_json_doc(value), path)
    if found is _MISSING or found is None:
        return None
    return found if isinstance(found, str) else _gson(found)


def json_get_object(value: Any, path: Any) -> Any:
    found = _json_read(_json_doc(value), path)
    if found is _MISSING:
        return None
    return found[0] if isinstance(found, list) and len(found) == 1 else found


def _json_number(value: Any, path: Any, parse: Any) -> Any:
    found = _single(_json_read(_json_doc(value), path))
    if found is None:
        return None
    try:
        return parse(_java_text(found))
    except ValueError:
        return None


def _java_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(text)
    return int(text)


def _java_double(text: str) -> float:
    if not re.fullmatch(r"\s*[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)\s*", text):
        raise ValueError(text)
    return float(text.strip().rstrip("fFdD"))


def json_get_int(value: Any, path: Any) -> int | None:
    got = _json_number(value, path, _java_int)
    return got if got is None or -(2**31) <= got < 2**31 else None


def json_get_long(value: Any, path: Any) -> int | None:
    got = _json_number(value, path, _java_int)
    return got if got is None or -(2**63) <= got < 2**63 else None


def json_get_double(value: Any, path: Any) -> float | None:
    got: float | None = _json_number(value, path, _java_double)
    return got


def json_get_float(value: Any, path: Any) -> float | None:
    got = _json_number(value, path, _java_double)
    return None if got is None else f32(got)


def json_get_bool(value: Any, path: Any) -> bool | None:
    found = _single(_json_read(_json_doc(value), path))
    if found is None:
        return None
    return _java_text(found).lower() == "true"


def json_is_exists(value: Any, path: Any) -> bool:
    return _json_read(_json_doc(value), path) is not _MISSING


def json_set_element(value: Any, path: Any, element: Any, *key: Any) -> Any:
    """`setElement(json, path, value[, key])`: adds to the array at the path, puts key=value
    in the object at the path, or sets the path; returns the new document (a copy)."""
    doc = copy.deepcopy(_json_doc(value))
    if isinstance(element, str) and element[:1] in "[{":
        try:
            element = json.loads(element)
        except ValueError:
            pass
    steps = json_path(path)
    target = _json_read(doc, path)
    if target is _MISSING:
        return doc
    if isinstance(target, list) and not any(k == "all" for k, _ in steps):
        target.append(element)
        return doc
    if key:
        if isinstance(target, dict):
            target[str(key[0])] = element
        return doc
    if not steps:
        return element
    parent = _json_read(doc, "$" + "".join(_step_text(s) for s in steps[:-1]))
    kind, arg = steps[-1]
    if kind == "key" and isinstance(parent, dict):
        parent[arg] = element
    elif kind == "index" and isinstance(parent, list) and -len(parent) <= arg < len(parent):
        parent[arg] = element
    return doc


def _step_text(step: tuple[str, Any]) -> str:
    kind, arg = step
    if kind == "key":
        return "[" + json.dumps(arg) + "]"
    if kind == "index":
        return f"[{arg}]"
    return "[*]"


def json_to_string(value: Any, *escape: Any) -> str:
    text = _gson(value)
    return _gson(text) if escape and escape[0] else text


def json_to_object(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(str(text))
    except ValueError:
        return None
