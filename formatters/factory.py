"""`build_formatter`: a formatter by type name from a stream's attributes and a config dict.

Owns the table of formatter types. Config errors are `FormatterConfigError`s whose
message and `.key` name the offending key. Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.types import AttrType
from formatters.base import Attribute, Formatter, normalise_attributes
from formatters.config import FormatterConfigError, Settings
from formatters.jsontext import JsonFormatter
from formatters.mapping import MapFormatter
from formatters.template import TextFormatter
from formatters.wso2event import WSO2EventFormatter
from formatters.xmltext import XmlFormatter

_Builder = Callable[[tuple[Attribute, ...], Settings, "str | None"], Formatter[Any]]

_BUILDERS: dict[str, _Builder] = {
    "map": lambda attrs, settings, stream: MapFormatter(attrs, settings),
    "json": JsonFormatter,
    "xml": lambda attrs, settings, stream: XmlFormatter(attrs, settings),
    "text": lambda attrs, settings, stream: TextFormatter(attrs, settings),
    "wso2event": WSO2EventFormatter,
}

FORMATTER_TYPES = tuple(_BUILDERS)


def build_formatter(
    type: str,  # noqa: A002 - the config's own word
    attributes: Sequence[tuple[str, AttrType | str]],
    config: Mapping[str, Any] | None = None,
    *,
    stream: str | None = None,
) -> Formatter[Any]:
    """A formatter of `type` for a stream with `attributes` (`[(name, AttrType), ...]`).

    `stream` (`"name"` or `"name:version"`) is the stream's own id: the json formatter's
    `event` envelope shows it and the wso2event formatter uses it when the config names no
    outgoing stream. Raises `FormatterConfigError` naming the key, or `FormatError` for
    malformed attributes.
    """
    builder = _BUILDERS.get(type)
    if builder is None:
        msg = f"formatter type {type!r} is unknown (known: {', '.join(FORMATTER_TYPES)})"
        raise FormatterConfigError(msg, "type")
    attrs = normalise_attributes(attributes)
    settings = Settings(config, where=f"{type} formatter")
    formatter = builder(attrs, settings, stream)
    settings.done()
    return formatter
