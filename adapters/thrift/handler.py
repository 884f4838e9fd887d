"""What the Thrift receiver needs from the node: the `Handler` protocol.

The node implements it; `DataBridgeServer` calls it from one thread per connection, so
every method must be thread-safe, and `definition` (called once per stream per bundle)
should be a dictionary lookup. Errors a method may raise, and what the client then sees:

| method          | raise                  | wire reply                                   |
|-----------------|------------------------|----------------------------------------------|
| authenticate    | AuthenticationFailed   | `ae` with the error's text                   |
| define_stream   | DefinitionConflict     | `ade`                                        |
| define_stream   | MalformedDefinition    | `mtd`                                        |
| define_stream   | any other CEPError     | `tde` with the error's text                  |
| publish         | UndefinedEventType     | `ue` (clients log and drop the bundle)       |
| any             | anything else          | TApplicationException INTERNAL_ERROR; clients |
|                 |                        | treat it as a failed connection and resend   |

Imports only this package's data types.
"""

from __future__ import annotations

from typing import Protocol

from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.events import WireEvent


class Handler(Protocol):
    """The node side of the Data Bridge receiver."""

    def authenticate(self, username: str, password: str, address: str) -> None:
        """Return when `connect(username, password)` from client `address` may open a session;
        else raise `AuthenticationFailed` with what the client should be told (wrong
        credentials, or too many failures from its address: retry later)."""
        ...

    def define_stream(self, definition: WireStreamDefinition) -> str:
        """Store `definition` (§5.3 rules: see `definitions.check_definition`); return its stream id."""
        ...

    def find_stream_id(self, name: str, version: str) -> str | None:
        """`name:version` when that stream is defined, else None (sent as `tnde`)."""
        ...

    def delete_stream(self, stream_id: str) -> bool:
        """Forget a stream definition; True when one was removed."""
        ...

    def definition(self, stream_id: str) -> WireStreamDefinition | None:
        """The definition bundles of `stream_id` are decoded with, or None if unknown."""
        ...

    def publish(self, events: list[WireEvent]) -> None:
        """Accept the decoded events of one bundle (may block to apply back-pressure)."""
        ...
