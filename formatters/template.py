"""The `text` formatter: one line of text per event from a template.

Config:
    template = "{customerName} ordered {sumOrderId}"

A placeholder is `{attribute}`, optionally with a conversion and a format spec as in
Python's `str.format` (`{price:.2f}`, `{name!r}`); `{@timestamp}` is the event timestamp
and `{@type}` `current` or `expired`; `{{` and `}}` are literal braces. The template is
compiled once, at build time, into literal pieces and attribute positions: placeholders
are looked up by exact name only (no `.attr`, `[index]` or nested fields), so a template
can never reach into objects or run code. A null value prints as `null`.
Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import FormatError
from engine.types import AttrType
from formatters.base import Attribute

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

TIMESTAMP = -1
TYPE = -2
_SPECIAL = {"@timestamp": (TIMESTAMP, AttrType.LONG), "@type": (TYPE, AttrType.STRING)}
_SAMPLES: dict[AttrType, Any] = {
    AttrType.STRING: "text",
    AttrType.INT: 1,
    AttrType.LONG: 1,
    AttrType.FLOAT: 1.5,
    AttrType.DOUBLE: 1.5,
    AttrType.BOOL: True,
}


def _render(value: Any, conversion: str | None, spec: str) -> str:
    if value is None:
        return "null"
    if conversion == "r":
        value = repr(value)
    elif conversion == "s":
        value = str(value)
    elif conversion == "a":
        value = ascii(value)
    elif isinstance(value, bool) and not spec:
        return "true" if value else "false"
    return format(value, spec)


class TextFormatter:
    """Events → text from a compiled template."""

    kind = "text"

    def __init__(self, attributes: tuple[Attribute, ...], settings: Settings) -> None:
        self._attributes = attributes
        self.template = settings.string("template")
        by_name = {a.name: (i, a.type) for i, a in enumerate(attributes)}
        pieces: list[tuple[str, int | None, str | None, str]] = []
        try:
            parsed = list(string.Formatter().parse(self.template))
        except ValueError as exc:
            settings.fail("template", f"{exc} in {self.template!r} (write {{{{ and }}}} for literal braces)")
        for literal, field, spec, conversion in parsed:
            if field is None:
                pieces.append((literal, None, None, ""))
                continue
            if field not in by_name and field not in _SPECIAL:
                known = ", ".join([*by_name, *_SPECIAL])
                if not field or not field.replace("_", "a").isalnum():
                    why = "a placeholder must be a plain attribute name"
                else:
                    why = "unknown attribute"
                settings.fail("template", f"{why}: {{{field}}} (available: {known})")
            index, kind = by_name[field] if field in by_name else _SPECIAL[field]
            spec = spec or ""
            if conversion not in (None, "r", "s", "a"):
                settings.fail(
                    "template", f"unknown conversion !{conversion} in {{{field}}} (use !s, !r or !a)"
                )
            if "{" in spec or "}" in spec:
                settings.fail("template", f"nested placeholders are not allowed: {{{field}:{spec}}}")
            sample = _SAMPLES.get(kind)
            if sample is not None and (spec or conversion):
                try:
                    _render(sample, conversion, spec)
                except ValueError as exc:
                    settings.fail("template", f"{{{field}}}: format {spec!r} does not suit a {kind}: {exc}")
            pieces.append((literal, index, conversion, spec))
        self._pieces = tuple(pieces)

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    def format(self, events: Sequence[Event]) -> list[str]:
        out: list[str] = []
        for n, event in enumerate(events):
            data = event.data
            parts: list[str] = []
            for literal, index, conversion, spec in self._pieces:
                parts.append(literal)
                if index is None:
                    continue
                if index == TIMESTAMP:
                    value: Any = event.timestamp
                elif index == TYPE:
                    value = "expired" if event.expired else "current"
                else:
                    value = data[index]
                try:
                    parts.append(_render(value, conversion, spec))
                except (ValueError, TypeError) as exc:
                    msg = f"text formatter: event {n}: cannot format {value!r} with {spec!r}: {exc}"
                    raise FormatError(msg) from exc
            out.append("".join(parts))
        return out
