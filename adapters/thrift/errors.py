"""The errors of the Thrift Data Bridge adapter, and which wire exception each maps to.

```
AdapterError
├─ ThriftProtocolError        bytes that are not valid TBinaryProtocol (or too large)
├─ ConnectionClosed           the peer closed the connection (`.clean`: between messages)
├─ TransportError             a socket or TLS failure talking to a peer
│   └─ UntrustedCertificate   the peer's TLS certificate (or host name) did not verify
├─ RemoteApplicationError     the peer answered with a TApplicationException (`.type`)
├─ SessionExpired             `se`: unknown, expired or missing session id
├─ AuthenticationFailed       `ae`: connect refused
├─ DefinitionConflict         `ade`: another definition holds that name and version
├─ StreamNotFound             `tnde`: no definition for that name and version
└─ StreamDefinitionError      `tde`: the receiver could not store the definition
FormatError
├─ MalformedDefinition        `mtd`: the stream definition JSON is invalid (`.message`)
├─ UndefinedEventType         `ue`: a bundle does not match the stream definitions
└─ EventEncodingError         an event cannot be packed into a bundle (client side)
```

Every error keeps its wire message in `.message`, the text sent to or received from the peer.
Imports only `engine.errors`.
"""

from __future__ import annotations

from engine.errors import AdapterError, FormatError


class DeclaredError(Exception):
    """An exception declared in the IDL: `.message` is the text of the struct's field 1."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ThriftProtocolError(AdapterError):
    """The peer sent bytes that cannot be decoded; the connection cannot continue."""


class ConnectionClosed(AdapterError):
    """The peer closed the connection; `clean` when it did so between two messages."""

    def __init__(self, message: str, *, clean: bool) -> None:
        super().__init__(message)
        self.clean = clean


class TransportError(AdapterError):
    """A socket or TLS failure while talking to a Data Bridge peer."""


class UntrustedCertificate(TransportError):
    """The peer's TLS certificate is not trusted, or is not valid for the host name."""


class RemoteApplicationError(AdapterError):
    """The peer replied with a TApplicationException (Thrift protocol-level error)."""

    def __init__(self, message: str, type_: int) -> None:
        super().__init__(f"remote application error {type_}: {message}")
        self.message = message
        self.type = type_


class SessionExpired(DeclaredError, AdapterError):
    """`se`: the session id is unknown, expired or missing; log in again with `connect`."""


class AuthenticationFailed(DeclaredError, AdapterError):
    """`ae`: the receiver refused the user name and password."""


class DefinitionConflict(DeclaredError, AdapterError):
    """`ade`: a different definition with the same name and version (or attribute types) exists."""


class StreamNotFound(DeclaredError, AdapterError):
    """`tnde`: the receiver has no definition for that stream name and version."""


class StreamDefinitionError(DeclaredError, AdapterError):
    """`tde`: the receiver accepted the definition text but could not store it."""


class MalformedDefinition(DeclaredError, FormatError):
    """`mtd`: the stream definition is not valid; `.message` is the WSO2 wording of §5.3."""


class UndefinedEventType(DeclaredError, FormatError):
    """`ue`: the events of a bundle do not match the stream definitions the receiver holds."""


class EventEncodingError(FormatError):
    """An event's values do not fit its stream definition, so it cannot be put in a bundle."""
