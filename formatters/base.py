"""The formatter plug point: the `Formatter` protocol and the stream attributes it is built from.

A formatter turns a list of `engine.Event` of one stream into records for an output
adapter: dict rows (map), JSON text (json), XML text (xml), plain text (text) or
`WSO2Event` (wso2event). It is built once from the stream's attributes and a config
dict, is stateless afterwards and safe to share between threads.
Imports only `engine.events`, `engine.errors` and `engine.types`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from engine.errors import FormatError
from engine.types import AttrType

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

R = TypeVar("R")


class Attribute(NamedTuple):
    """One attribute of a stream: its name and SiddhiQL type; position = index in `Event.data`."""

    name: str
    type: AttrType


class Formatter(Protocol[R]):
    """Turns events of one stream into records; `format` keeps the order of the events."""

    kind: str
    """The formatter type name, as given to `build_formatter` (`map`, `json`, ...)."""

    @property
    def attributes(self) -> tuple[Attribute, ...]: ...

    def format(self, events: Sequence[Event]) -> list[R]: ...


def normalise_attributes(attributes: Sequence[tuple[str, AttrType | str]]) -> tuple[Attribute, ...]:
    """`[(name, AttrType or type name), ...]` as `Attribute`s; names must be unique."""
    result: list[Attribute] = []
    seen: set[str] = set()
    for item in attributes:
        try:
            name, kind = item
        except (TypeError, ValueError):
            msg = f"a stream attribute must be a (name, type) pair, got {item!r}"
            raise FormatError(msg) from None
        if isinstance(kind, str):
            parsed = AttrType.parse(kind)
            if parsed is None:
                msg = f"attribute {name!r} has unknown type {kind!r}"
                raise FormatError(msg)
            kind = parsed
        if not isinstance(name, str) or not name or not isinstance(kind, AttrType):
            msg = f"a stream attribute must be a (name, AttrType) pair, got {item!r}"
            raise FormatError(msg)
        if name in seen:
            msg = f"the stream defines attribute {name!r} twice"
            raise FormatError(msg)
        seen.add(name)
        result.append(Attribute(name, kind))
    return tuple(result)


def attribute_index(attributes: Sequence[Attribute], settings: Settings, key: str, name: str) -> int:
    """The position of attribute `name`, or a config error at `key` listing the stream's attributes."""
    for i, attr in enumerate(attributes):
        if attr.name == name:
            return i
    known = ", ".join(a.name for a in attributes) or "no attributes"
    settings.fail(key, f"unknown attribute {name!r} (the stream has {known})")
