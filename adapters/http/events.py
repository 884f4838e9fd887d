"""Events from JSON and CSV into rows of a stream (the HTTP receiver, the console's simulator, `cepheus publish`).

A stream's row is its flattened attributes: `meta_x`, `correlation_x`, then the payload. One
JSON event is any of

* an array of values in that order: `["Order1", "Tom", ...]`;
* `{"data": [...] | {"orderNo": "Order1", ...}, "timestamp": 1700000000000}` (timestamp optional);
* WSO2's JSON mapping: `{"event": {"metaData": {...}, "correlationData": {...}, "payloadData": {...}}}`.

A CSV record is the values in row order, as text. Every mistake is an `EventFormatError`
naming the event and the attribute. A stream is anything shaped as a `StreamShape` (the
node's `app.node.catalog.KnownStream` is one); nothing of `app` is imported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from adapters.wording import counted
from engine.errors import CEPError
from engine.types import AttrType, coerce

Row = tuple[Any, ...]


class StreamShape(Protocol):
    """What the conversion needs of a stream: its id, its attributes flattened and by section."""

    @property
    def id(self) -> str:
        """`name:version`."""
        ...

    @property
    def attributes(self) -> Sequence[tuple[str, AttrType]]:
        """Names and types, flattened in row order: `meta_x`, `correlation_x`, then the payload."""
        ...

    @property
    def sections(self) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
        """The attribute names of meta, correlation and payload, unprefixed (WSO2's JSON mapping)."""
        ...


class EventFormatError(CEPError):
    """An event that does not fit its stream; the message says which event and attribute."""


def rows_from_json(body: Any, stream: StreamShape) -> tuple[list[Row], list[int | None]]:
    """A request body (a list of events, or one event object) as rows and timestamps."""
    items = [body] if isinstance(body, Mapping) else body
    if not isinstance(items, list):
        msg = "the body must be a JSON list of events (or one event object)"
        raise EventFormatError(msg)
    rows: list[Row] = []
    stamps: list[int | None] = []
    for i, item in enumerate(items):
        row, ts = row_from_json(item, stream, f"event {i}")
        rows.append(row)
        stamps.append(ts)
    return rows, stamps


def row_from_json(item: Any, stream: StreamShape, where: str) -> tuple[Row, int | None]:
    if isinstance(item, list):
        return _row(item, stream, where), None
    if not isinstance(item, Mapping):
        msg = f"{where}: expected an array of values or an object, got {_kind(item)}"
        raise EventFormatError(msg)
    timestamp = _timestamp(item.get("timestamp"), where)
    if "event" in item:
        _only(item, ("event", "timestamp"), where)
        return _wso2_row(item["event"], stream, where), timestamp
    _only(item, ("data", "timestamp"), where)
    if "data" not in item:
        msg = f"{where}: expected a 'data' array or object (or WSO2's 'event' object)"
        raise EventFormatError(msg)
    data = item["data"]
    if isinstance(data, list):
        return _row(data, stream, where), timestamp
    if isinstance(data, Mapping):
        return _named_row(data, stream, where), timestamp
    msg = f"{where}: 'data' must be an array or an object, got {_kind(data)}"
    raise EventFormatError(msg)


def row_from_csv(fields: Sequence[str], stream: StreamShape, where: str) -> Row:
    """One CSV record; an empty field is null for every type but string."""
    if len(fields) != len(stream.attributes):
        msg = f"{where}: {stream.id} has {len(stream.attributes)} attributes, the record has {len(fields)} fields"
        raise EventFormatError(msg)
    out = []
    for (name, kind), text in zip(stream.attributes, fields, strict=True):
        out.append(_from_text(text, kind, f"{where}: attribute {name!r}"))
    return tuple(out)


def _row(values: list[Any], stream: StreamShape, where: str) -> Row:
    if len(values) != len(stream.attributes):
        msg = f"{where}: {stream.id} has {counted(len(stream.attributes), 'attribute')}, got {counted(len(values), 'value')}"
        raise EventFormatError(msg)
    return tuple(
        _value(v, kind, where, name) for (name, kind), v in zip(stream.attributes, values, strict=True)
    )


def _named_row(data: Mapping[str, Any], stream: StreamShape, where: str) -> Row:
    names = {name for name, _ in stream.attributes}
    unknown = [k for k in data if k not in names]
    if unknown:
        msg = f"{where}: {stream.id} has no attribute {unknown[0]!r} (it has {', '.join(sorted(names))})"
        raise EventFormatError(msg)
    missing = [name for name, _ in stream.attributes if name not in data]
    if missing:
        msg = f"{where}: attribute {missing[0]!r} is missing (use null for no value)"
        raise EventFormatError(msg)
    return tuple(_value(data[name], kind, where, name) for name, kind in stream.attributes)


def _wso2_row(event: Any, stream: StreamShape, where: str) -> Row:
    if not isinstance(event, Mapping):
        msg = f"{where}: 'event' must be an object with metaData, correlationData and payloadData"
        raise EventFormatError(msg)
    _only(event, ("metaData", "correlationData", "payloadData"), f"{where}: event")
    named: dict[str, Any] = {}
    meta, correlation, payload = stream.sections
    for key, prefix, names in (
        ("metaData", "meta_", meta),
        ("correlationData", "correlation_", correlation),
        ("payloadData", "", payload),
    ):
        section = event.get(key, {})
        if not isinstance(section, Mapping):
            msg = f"{where}: event.{key} must be an object"
            raise EventFormatError(msg)
        known = set(names)
        for name, value in section.items():
            if name not in known:
                msg = f"{where}: event.{key} has no attribute {name!r} in {stream.id}"
                raise EventFormatError(msg)
            named[prefix + name] = value
    return _named_row(named, stream, where)


def _value(value: Any, kind: AttrType, where: str, name: str) -> Any:
    try:
        return coerce(value, kind)
    except (TypeError, ValueError) as exc:
        msg = f"{where}: attribute {name!r}: {exc}"
        raise EventFormatError(msg) from None


def _from_text(text: str, kind: AttrType, where: str) -> Any:
    if kind is AttrType.STRING:
        return text
    stripped = text.strip()
    if not stripped:
        return None
    try:
        if kind is AttrType.BOOL:
            lowered = stripped.lower()
            if lowered not in ("true", "false"):
                raise ValueError(stripped)
            return lowered == "true"
        if kind in (AttrType.INT, AttrType.LONG):
            return coerce(int(stripped), kind)
        number = float(stripped)
        if math.isnan(number) and stripped.lower() != "nan":
            raise ValueError(stripped)
        return coerce(number, kind)
    except (TypeError, ValueError):
        article = "an" if kind is AttrType.INT else "a"
        msg = f"{where}: {stripped!r} is not {article} {kind.value}"
        raise EventFormatError(msg) from None


def _timestamp(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    msg = f"{where}: timestamp must be a whole number of ms since the epoch, got {value!r}"
    raise EventFormatError(msg)


def _only(item: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in item:
        if key not in keys:
            msg = f"{where}: unknown key {key!r} (expected {', '.join(keys)})"
            raise EventFormatError(msg)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
