"""The cluster's errors.

```
HAError (engine.errors)
└─ ClusterError
   ├─ PeerError: the connection to a member failed, closed, or broke the protocol
   │  ├─ PeerClosed: closed in order (FIN)
   │  ├─ PeerReset: reset or failed
   │  │  └─ PeerTLSError: its TLS failed (no valid certificate, or a record altered on the way)
   │  └─ PeerRefused: nothing listens at its cluster port (its process is not running)
   └─ StateDoesNotFit: a notifier's state does not fit this member's plan
```
"""

from __future__ import annotations

from engine.errors import HAError


class ClusterError(HAError):
    """Something between this member and the others failed; the message says what."""


class PeerError(ClusterError):
    """The connection to a peer failed, closed, or the peer broke the protocol."""


class PeerClosed(PeerError):
    """The peer closed the connection in order (FIN): its process exited or died, for only
    the peer's own kernel closes a connection that way."""


class PeerReset(PeerError):
    """The connection was reset or failed (a firewall, a proxy, a network fault): nothing is
    known of the peer's process."""


class PeerTLSError(PeerReset):
    """The connection's TLS failed: the handshake (no certificate from the cluster CA, or no TLS
    at all), or a record that fails its integrity check (altered or forged on the way). Nothing
    read from the connection after that is used; as with a reset, nothing is known of the peer's
    process."""


class StateDoesNotFit(ClusterError):
    """A redundant plan's state from its notifier does not fit this member's plan whole (the
    members run different versions of Cepheus, or of the plan): this member cannot stand in
    for the notifier until they match."""

    def __init__(self, plan: str, parts: list[str]) -> None:
        self.plan = plan
        self.parts = parts
        msg = (
            f"plan {plan}: the notifier's state does not fit this member's plan whole ({', '.join(parts)}); "
            "this member cannot take over until both run the same version of Cepheus and of the plan"
        )
        super().__init__(msg)


class PeerRefused(PeerError):
    """Nothing listens at the member's cluster port: its host answered that no process does."""
