"""`InMemoryHandler`: a complete `Handler` kept in dictionaries.

The test double of the receiver (and a reference for the node's own handler): users and
passwords in a dict (or any credentials accepted), stream definitions with the §5.3
redefinition rules, and every published event appended to a list. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from adapters.thrift.definitions import WireStreamDefinition, check_definition
from adapters.thrift.errors import AuthenticationFailed
from adapters.thrift.events import WireEvent


class InMemoryHandler:
    """Keeps definitions and events in memory; `users=None` accepts any credentials."""

    def __init__(
        self,
        users: Mapping[str, str] | None = None,
        definitions: Iterable[WireStreamDefinition] = (),
    ) -> None:
        self._users = dict(users) if users is not None else None
        self._lock = threading.Lock()
        self._definitions = {d.stream_id: d for d in definitions}
        self.events: list[WireEvent] = []
        self.published = threading.Condition(self._lock)

    def authenticate(self, username: str, password: str, address: str) -> None:
        if self._users is not None and self._users.get(username) != password:
            msg = "wrong userName or password"
            raise AuthenticationFailed(msg)

    def define_stream(self, definition: WireStreamDefinition) -> str:
        with self._lock:
            existing = check_definition(definition, self._definitions.values())
            if existing is None:
                self._definitions[definition.stream_id] = definition
            return definition.stream_id

    def find_stream_id(self, name: str, version: str) -> str | None:
        stream_id = f"{name}:{version}"
        with self._lock:
            return stream_id if stream_id in self._definitions else None

    def delete_stream(self, stream_id: str) -> bool:
        with self._lock:
            return self._definitions.pop(stream_id, None) is not None

    def definition(self, stream_id: str) -> WireStreamDefinition | None:
        return self._definitions.get(stream_id)

    def publish(self, events: list[WireEvent]) -> None:
        with self._lock:
            self.events.extend(events)
            self.published.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        """Block until at least `count` events arrived; False on timeout."""
        with self._lock:
            return self.published.wait_for(lambda: len(self.events) >= count, timeout)
