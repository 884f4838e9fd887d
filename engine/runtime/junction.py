"""Stream junctions: where a stream's chunks fan out to queries and subscribers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk, Event
from engine.types import AttrType

Receiver = Callable[[Chunk], None]
Subscriber = Callable[[list[Event]], None]


class Junction:
    """One stream. Subscribers see events with their current/expired type first (the
    emission record); query receivers then see every event as a new arrival."""

    __slots__ = ("name", "names", "types", "receivers", "subscribers", "raw_subscribers")

    def __init__(self, name: str, names: list[str], types: list[AttrType]) -> None:
        self.name = name
        self.names = names
        self.types = types
        self.receivers: list[Receiver] = []
        self.subscribers: list[Subscriber] = []
        self.raw_subscribers: list[Callable[[str, Chunk], None]] = []

    def publish(self, chunk: Chunk) -> None:
        if self.raw_subscribers:
            for raw in self.raw_subscribers:
                raw(self.name, chunk)
        if self.subscribers:
            events = chunk.events()
            if events:
                for fn in self.subscribers:
                    fn(events)
        if self.receivers:
            downstream = chunk.current_only() if chunk.kinds is not None else chunk
            if downstream.rows:
                for receive in self.receivers:
                    receive(downstream)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "attributes": [[n, str(t)] for n, t in zip(self.names, self.types, strict=True)],
        }
