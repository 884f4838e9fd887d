"""`ClusterSettings`: what a member needs to know of itself and the cluster (from `[cluster]`
and `[ha]`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ha.lease import Timing
from ha.membership import Timeouts

if TYPE_CHECKING:
    from app.cluster.tls import ClusterKeys


@dataclass(frozen=True)
class ClusterSettings:
    me: str  # this node's id
    advertise: str  # where the others reach this node's cluster port, "host:port"
    host: str
    port: int
    wka: tuple[str, ...]
    keys: ClusterKeys  # the shared secret, and with TLS this member's contexts (`app.cluster.tls`)
    timeouts: Timeouts
    timing: Timing
    failback_s: float = 0.0  # a member that came back gets its plans after this long preferred
