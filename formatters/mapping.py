"""The `map` formatter: each event becomes a dict row, attribute → column.

Config:
    mappings = [{column = "sum_order_id", attribute = "sumOrderId", type = "BIGINT"}, ...]
        `type` is optional; when given the value is converted to what such a column holds
        (see `formatters.values`). The short form `mappings = {sum_order_id = "sumOrderId"}`
        (column = attribute) maps without conversion. Without `mappings`, every attribute
        maps to a column of its own name.
    timestamp_column = "ts"   optional: also put the event timestamp (ms) in this column.

Rows keep the order of `mappings`. Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import FormatError
from formatters.base import Attribute, attribute_index
from formatters.values import TYPE_NAMES, Kind, convert, kind_of

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

Row = dict[str, Any]


class MapFormatter:
    """Events → `dict` rows keyed by column name."""

    kind = "map"

    def __init__(self, attributes: tuple[Attribute, ...], settings: Settings) -> None:
        self._attributes = attributes
        plan: list[tuple[str, int, Kind | None]] = []
        if "mappings" in settings and isinstance(settings.raw("mappings"), Mapping):
            pairs = settings.string_table("mappings")
            if not pairs:
                settings.fail("mappings", "must map at least one column")
            for column, name in pairs.items():
                plan.append((column, attribute_index(attributes, settings, f"mappings.{column}", name), None))
        elif "mappings" in settings:
            entries = settings.tables("mappings")
            if not entries:
                settings.fail("mappings", "must list at least one mapping")
            for entry in entries:
                column = entry.string("column")
                name = entry.string("attribute")
                index = attribute_index(attributes, entry, "attribute", name)
                declared = entry.optional_string("type")
                kind = None
                if declared is not None:
                    kind = kind_of(declared)
                    if kind is None:
                        entry.fail("type", f"unknown type {declared!r} (known: {', '.join(TYPE_NAMES)})")
                entry.done()
                plan.append((column, index, kind))
        else:
            plan = [(a.name, i, None) for i, a in enumerate(attributes)]
        self.timestamp_column = settings.optional_string("timestamp_column")
        columns = [c for c, _, _ in plan] + ([self.timestamp_column] if self.timestamp_column else [])
        seen: set[str] = set()
        for i, column in enumerate(columns):
            if column in seen:
                key = "timestamp_column" if i == len(plan) else f"mappings[{i}].column"
                settings.fail(key, f"column {column!r} is mapped twice")
            seen.add(column)
        self.columns: tuple[str, ...] = tuple(columns)
        self._plan = tuple(plan)

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    def format(self, events: Sequence[Event]) -> list[Row]:
        rows: list[Row] = []
        ts_column = self.timestamp_column
        for n, event in enumerate(events):
            data = event.data
            row: Row = {}
            for column, index, kind in self._plan:
                value = data[index]
                if kind is not None:
                    try:
                        value = convert(value, kind)
                    except FormatError as exc:
                        attr = self._attributes[index].name
                        msg = f"map formatter: event {n}: attribute {attr!r} → column {column!r}: {exc}"
                        raise FormatError(msg) from exc
                row[column] = value
            if ts_column is not None:
                row[ts_column] = event.timestamp
            rows.append(row)
        return rows
