"""The `json` formatter: one JSON object (as text) per event.

Config:
    envelope = "flat"    `{"customerName": "Tom", "sumOrderId": 1}` (default)
               "event"   the whole event: `{"stream": "deliveredOrders", "timestamp": 1200,
                         "type": "current", "data": {...}}` (`stream` only when known)
               "wso2"    WSO2's default JSON mapping: `{"event": {"metaData": {...},
                         "correlationData": {...}, "payloadData": {...}}}`, split as the
                         wso2event formatter does (`meta`/`correlation`/`payload` keys or the
                         `meta_`/`correlation_` name prefixes)
    fields = {sumOrderId = "sum", customerName = "customer"}
                         optional (flat/event): which attributes, in this order, and their
                         field names; default every attribute under its own name
    timestamp_field = "ts"   optional (flat): also write the event timestamp

Values keep their JSON types; non-finite floats (NaN, ±inf), which JSON cannot carry,
become null. Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import FormatError
from engine.types import AttrType
from formatters.base import Attribute, attribute_index
from formatters.wso2event import Sections

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

ENVELOPES = ("flat", "event", "wso2")
_FLOATISH = (AttrType.FLOAT, AttrType.DOUBLE, AttrType.OBJECT)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(obj: object) -> str:
    """Compact UTF-8 JSON; values JSON has no type for are written as their `str`."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError) as exc:
        msg = f"json formatter: cannot encode {obj!r}: {exc}"
        raise FormatError(msg) from exc


class JsonFormatter:
    """Events → JSON text, one object per event."""

    kind = "json"

    def __init__(
        self, attributes: tuple[Attribute, ...], settings: Settings, stream: str | None = None
    ) -> None:
        self._attributes = attributes
        self.envelope = settings.string("envelope", "flat", choices=ENVELOPES)
        self.stream = (stream or "").partition(":")[0] or None
        self._sections: Sections | None = None
        if self.envelope == "wso2":
            if "fields" in settings:
                settings.fail("fields", "cannot be used with envelope 'wso2' (names come from the stream)")
            self._sections = Sections.split(attributes, settings)
        fields = settings.string_table("fields")
        if fields:
            pairs = [(attribute_index(attributes, settings, f"fields.{a}", a), f) for a, f in fields.items()]
        else:
            pairs = [(i, a.name) for i, a in enumerate(attributes)]
        self.timestamp_field = settings.optional_string("timestamp_field")
        if self.timestamp_field is not None and self.envelope != "flat":
            settings.fail("timestamp_field", "applies only to envelope 'flat'")
        names = [f for _, f in pairs] + ([self.timestamp_field] if self.timestamp_field else [])
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            settings.fail("fields" if fields else "timestamp_field", f"field {dup!r} is written twice")
        self._pairs = tuple(pairs)
        self._check_floats = any(a.type in _FLOATISH for a in attributes)

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    def _values(self, data: Sequence[Any]) -> Sequence[Any]:
        return [_finite(v) for v in data] if self._check_floats else data

    def format(self, events: Sequence[Event]) -> list[str]:
        out: list[str] = []
        for event in events:
            data = self._values(event.data)
            obj: dict[str, Any]
            if self._sections is not None:
                s = self._sections
                obj = {
                    "event": {
                        "metaData": {s.names[i]: data[i] for i in s.meta},
                        "correlationData": {s.names[i]: data[i] for i in s.correlation},
                        "payloadData": {s.names[i]: data[i] for i in s.payload},
                    }
                }
            else:
                fields = {name: data[i] for i, name in self._pairs}
                if self.envelope == "event":
                    obj = {} if self.stream is None else {"stream": self.stream}
                    obj["timestamp"] = event.timestamp
                    obj["type"] = "expired" if event.expired else "current"
                    obj["data"] = fields
                else:
                    obj = fields
                    if self.timestamp_field is not None:
                        obj[self.timestamp_field] = event.timestamp
            out.append(dumps(obj))
        return out
