"""The `wso2event` formatter: events as WSO2 events (meta / correlation / payload) for the Thrift forwarder.

Config:
    stream_name = "DeliveredEventStream"   the outgoing stream (default: the `stream` given
    stream_version = "1.0.0"               to `build_formatter`; version default 1.0.0)
    meta = ["deliveryNo"], correlation = [...], payload = [...]
        optional explicit split by attribute name. Without them the WSO2 convention
        applies: `meta_x` attributes are meta data `x`, `correlation_x` are correlation
        data `x`, the rest is payload. With `meta`/`correlation` but no `payload`, the
        attributes not listed form the payload.

Owns `WSO2Event` (what the forwarder sends), `WSO2StreamDefinition` (what it defines on the
peer, §5.1 of PROTOCOL-databridge.md) and the split (`Sections`, shared with the json
formatter's `wso2` envelope). Imports only `engine` event/error/type modules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.types import AttrType
from formatters.base import Attribute, attribute_index

if TYPE_CHECKING:
    from engine.events import Event
    from formatters.config import Settings

META_PREFIX = "meta_"
CORRELATION_PREFIX = "correlation_"
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
_WSO2_TYPES = {
    AttrType.STRING: "STRING",
    AttrType.INT: "INT",
    AttrType.LONG: "LONG",
    AttrType.FLOAT: "FLOAT",
    AttrType.DOUBLE: "DOUBLE",
    AttrType.BOOL: "BOOL",
}


@dataclass(frozen=True, slots=True)
class WSO2Event:
    """One event as a WSO2 Data Bridge client sends it; values in definition order."""

    stream_name: str
    stream_version: str
    timestamp: int
    meta: tuple[Any, ...] = ()
    correlation: tuple[Any, ...] = ()
    payload: tuple[Any, ...] = ()
    arbitrary: dict[str, str] = field(default_factory=dict)

    @property
    def stream_id(self) -> str:
        return f"{self.stream_name}:{self.stream_version}"


@dataclass(frozen=True, slots=True)
class WSO2StreamDefinition:
    """The outgoing stream: names without their `meta_`/`correlation_` prefix, WSO2 type names."""

    name: str
    version: str
    meta: tuple[tuple[str, str], ...] = ()
    correlation: tuple[tuple[str, str], ...] = ()
    payload: tuple[tuple[str, str], ...] = ()

    @property
    def stream_id(self) -> str:
        return f"{self.name}:{self.version}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `defineStream` takes."""

        def section(attrs: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
            return [{"name": n, "type": t} for n, t in attrs]

        return {
            "name": self.name,
            "version": self.version,
            "metaData": section(self.meta),
            "correlationData": section(self.correlation),
            "payloadData": section(self.payload),
        }


@dataclass(frozen=True, slots=True)
class Sections:
    """Attribute positions of each WSO2 section, and the names they carry there."""

    meta: tuple[int, ...]
    correlation: tuple[int, ...]
    payload: tuple[int, ...]
    names: tuple[str, ...]  # per attribute position: the name inside its section

    @classmethod
    def split(cls, attributes: tuple[Attribute, ...], settings: Settings) -> Sections:
        """Read `meta`/`correlation`/`payload` from `settings`, or apply the prefix convention."""
        names = [a.name for a in attributes]
        explicit = any(k in settings for k in ("meta", "correlation", "payload"))
        if not explicit:
            meta = [i for i, n in enumerate(names) if n.startswith(META_PREFIX)]
            corr = [i for i, n in enumerate(names) if n.startswith(CORRELATION_PREFIX)]
            rest = [i for i in range(len(names)) if i not in meta and i not in corr]
            return cls(tuple(meta), tuple(corr), tuple(rest), tuple(_strip(n) for n in names))
        taken: dict[int, str] = {}
        lists: dict[str, list[int]] = {}
        for key in ("meta", "correlation", "payload"):
            indexes: list[int] = []
            for j, name in enumerate(settings.strings(key, ())):
                i = attribute_index(attributes, settings, f"{key}[{j}]", name)
                if i in taken:
                    settings.fail(f"{key}[{j}]", f"attribute {name!r} is already in {taken[i]}")
                taken[i] = key
                indexes.append(i)
            lists[key] = indexes
        if "payload" not in settings:
            lists["payload"] = [i for i in range(len(names)) if i not in taken]
        return cls(
            tuple(lists["meta"]),
            tuple(lists["correlation"]),
            tuple(lists["payload"]),
            tuple(_strip(n) for n in names),
        )


def _strip(name: str) -> str:
    for prefix in (META_PREFIX, CORRELATION_PREFIX):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


class WSO2EventFormatter:
    """Events → `WSO2Event`s of one outgoing stream."""

    kind = "wso2event"

    def __init__(
        self, attributes: tuple[Attribute, ...], settings: Settings, stream: str | None = None
    ) -> None:
        self._attributes = attributes
        default_name, _, default_version = (stream or "").partition(":")
        name = (
            settings.string("stream_name", default_name) if default_name else settings.string("stream_name")
        )
        if ":" in name:
            settings.fail(
                "stream_name", f"must not contain ':' (got {name!r}); set stream_version separately"
            )
        version = settings.string("stream_version", default_version or "1.0.0")
        if not _VERSION_RE.match(version):
            settings.fail("stream_version", f"must look like 1.0.0, got {version!r}")
        self.sections = Sections.split(attributes, settings)
        for i in (*self.sections.meta, *self.sections.correlation, *self.sections.payload):
            if attributes[i].type not in _WSO2_TYPES:
                settings.fail(
                    "",
                    f"attribute {attributes[i].name!r} of type {attributes[i].type} cannot travel in a WSO2 event",
                )
        s = self.sections

        def section(indexes: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
            return tuple((s.names[i], _WSO2_TYPES[attributes[i].type]) for i in indexes)

        self.definition = WSO2StreamDefinition(
            name, version, section(s.meta), section(s.correlation), section(s.payload)
        )

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    def format(self, events: Sequence[Event]) -> list[WSO2Event]:
        name, version = self.definition.name, self.definition.version
        meta, corr, payload = self.sections.meta, self.sections.correlation, self.sections.payload
        out: list[WSO2Event] = []
        for event in events:
            data = event.data
            out.append(
                WSO2Event(
                    name,
                    version,
                    event.timestamp,
                    tuple(data[i] for i in meta),
                    tuple(data[i] for i in corr),
                    tuple(data[i] for i in payload),
                )
            )
        return out
