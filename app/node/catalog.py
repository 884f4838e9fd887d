"""`StreamCatalog`: the registry's stream definitions, cached for the receivers' hot path.

Receivers look a stream up once per bundle or request, so lookups are dictionary reads of an
immutable snapshot that `reload` swaps in whole. Definitions made by clients (`defineStream`)
are written to the registry first, so every node of the cluster sees them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from adapters.thrift import MalformedDefinition, WireStreamDefinition, check_definition
from app.registry import Attribute, InUseError, Registry, StreamDefinition, ValidationError
from engine.types import AttrType


@dataclass(frozen=True)
class KnownStream:
    """One registered stream in the three shapes the node needs; an `adapters.http.events.StreamShape`."""

    definition: StreamDefinition
    wire: WireStreamDefinition
    attributes: tuple[tuple[str, AttrType], ...]  # flattened: meta_x, correlation_x, payload

    @property
    def id(self) -> str:
        return self.definition.id

    @property
    def sections(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The attribute names of meta, correlation and payload, unprefixed."""
        d = self.definition
        return (
            tuple(a.name for a in d.meta),
            tuple(a.name for a in d.correlation),
            tuple(a.name for a in d.payload),
        )


def to_wire(stream: StreamDefinition) -> WireStreamDefinition:
    def section(attrs: tuple[Attribute, ...]) -> tuple[tuple[str, str], ...]:
        return tuple((a.name, a.type) for a in attrs)

    return WireStreamDefinition(
        name=stream.name,
        version=stream.version,
        meta=section(stream.meta),
        correlation=section(stream.correlation),
        payload=section(stream.payload),
        description=stream.description or None,
    )


def from_wire(wire: WireStreamDefinition) -> StreamDefinition:
    def section(attrs: tuple[tuple[str, str], ...]) -> tuple[Attribute, ...]:
        return tuple(Attribute(name, kind) for name, kind in attrs)

    return StreamDefinition(
        name=wire.name,
        version=wire.version,
        description=wire.description or "",
        meta=section(wire.meta),
        correlation=section(wire.correlation),
        payload=section(wire.payload),
    )


def known(stream: StreamDefinition) -> KnownStream:
    attributes = tuple((name, AttrType(kind)) for name, kind in stream.siddhi_attributes())
    return KnownStream(stream, to_wire(stream), attributes)


class StreamCatalog:
    """Thread-safe cache of the registry's streams; writes go through to the registry."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._write_lock = threading.Lock()
        self._streams: dict[str, KnownStream] = {}

    def reload(self) -> None:
        """Read every stream definition from the registry (after a change anywhere in the cluster)."""
        self.replace(self._registry.list_streams())

    def replace(self, streams: Iterable[StreamDefinition]) -> None:
        self._streams = {s.id: known(s) for s in streams}

    def get(self, stream_id: str) -> KnownStream | None:
        return self._streams.get(stream_id)

    def wire(self, stream_id: str) -> WireStreamDefinition | None:
        found = self._streams.get(stream_id)
        return None if found is None else found.wire

    def ids(self) -> list[str]:
        return sorted(self._streams)

    def define(self, wire: WireStreamDefinition) -> str:
        """Store a client's definition under the §5.3 rules; idempotent for an equal one."""
        with self._write_lock:
            self.reload()
            existing = check_definition(wire, (s.wire for s in self._streams.values()))
            if existing is not None:
                return existing.stream_id
            try:
                stream = from_wire(wire).checked()
            except ValidationError as exc:
                raise MalformedDefinition(str(exc)) from None
            self._registry.put_stream(stream)
            self.reload()
            return stream.id

    def delete(self, stream_id: str) -> bool:
        """Remove a definition; False when it is unknown or a plan or formatter still uses it."""
        with self._write_lock:
            try:
                deleted = self._registry.delete_stream(stream_id)
            except InUseError:
                return False
            self.reload()
            return deleted
