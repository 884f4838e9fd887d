"""The `xml` formatter: one XML document (as text) per event, one element per attribute.

Config:
    root = "events"      the document element ("" for none: the event element is the root)
    element = "event"    the element holding one event's attributes
    fields = {sumOrderId = "sum"}   optional: which attributes, in this order, and their
                                    element names; default every attribute under its name

`<events><event><sumOrderId>1</sumOrderId><customerName>Tom</customerName></event></events>`.
Text is escaped (`&`, `<`, `>`), characters XML 1.0 cannot hold become U+FFFD, booleans
are `true`/`false`, non-finite floats `NaN`/`INF`/`-INF` (XML Schema), and a null value is
an empty element `<x null="true"/>`. Element names are checked against XML's name rules.
Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from formatters.base import Attribute, attribute_index

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

# An XML Name without namespace prefixes: a letter or `_` first, then letters, digits, `.`, `-`, `_`.
_NAME_RE = re.compile(r"^[^\W\d][\w.\-]*$")
_INVALID_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def text_of(value: Any) -> str:
    """The escaped text content for one value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "INF" if value > 0 else "-INF"
        return repr(value)
    text = value if isinstance(value, str) else str(value)
    return escape(_INVALID_CHARS.sub("\ufffd", text))


class XmlFormatter:
    """Events → XML text."""

    kind = "xml"

    def __init__(self, attributes: tuple[Attribute, ...], settings: Settings) -> None:
        self._attributes = attributes
        root = settings.string("root", "events")
        element = settings.string("element", "event")
        if root and not _NAME_RE.match(root):
            settings.fail("root", f"{root!r} is not an XML element name")
        if not _NAME_RE.match(element):
            settings.fail("element", f"{element!r} is not an XML element name")
        fields = settings.string_table("fields")
        if fields:
            pairs = [(attribute_index(attributes, settings, f"fields.{a}", a), f) for a, f in fields.items()]
        else:
            pairs = [(i, a.name) for i, a in enumerate(attributes)]
        for i, name in pairs:
            if not _NAME_RE.match(name):
                key = f"fields.{attributes[i].name}" if fields else ""
                settings.fail(key, f"{name!r} is not an XML element name")
        self._pairs = tuple(pairs)
        self._open = (f"<{root}>" if root else "") + f"<{element}>"
        self._close = f"</{element}>" + (f"</{root}>" if root else "")

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    def format(self, events: Sequence[Event]) -> list[str]:
        out: list[str] = []
        for event in events:
            data = event.data
            parts = [self._open]
            for i, name in self._pairs:
                value = data[i]
                if value is None:
                    parts.append(f'<{name} null="true"/>')
                else:
                    parts.append(f"<{name}>{text_of(value)}</{name}>")
            parts.append(self._close)
            out.append("".join(parts))
        return out
