"""`Admission`: which new connections the Data Bridge listeners take, and why they refuse the rest.

Three budgets, checked in this order: `max_connections_per_address` over both ports, so one
client address cannot take a port's whole budget; then each port's own budget
(`max_connections` for the plain port, `max_tls_connections` for the TLS login port), kept
apart so that a flood of one port cannot lock publishers out of the other. A refusal is a
sentence naming the limit and its configuration key, for the client and the log.
Addresses count per `client_key` (IPv6 per /64). Pure bookkeeping, thread-safe.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import NamedTuple

from adapters.addresses import client_key

PER_ADDRESS_KEY = "thrift.max_connections_per_address"


class Refusal(NamedTuple):
    key: str  # the configuration key of the limit that was hit
    reason: str  # a sentence for the client and the log


class Admission:
    def __init__(self, port_limits: dict[str, tuple[int, str]], per_address: int) -> None:
        """`port_limits`: listener kind ("plain", "tls") → (limit, its configuration key)."""
        self._limits = dict(port_limits)
        self._per_address = per_address
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()
        self._by_address: Counter[str] = Counter()

    def admit(self, kind: str, address: str) -> Refusal | None:
        """Count a new connection of `kind` from `address`, or say why it is refused."""
        limit, key = self._limits[kind]
        client = client_key(address)
        with self._lock:
            if self._by_address[client] >= self._per_address:
                reason = (
                    f"{self._per_address} connections from {client} are open already "
                    f"({PER_ADDRESS_KEY}); close idle ones or raise the limit"
                )
                return Refusal(PER_ADDRESS_KEY, reason)
            if self._open[kind] >= limit:
                reason = (
                    f"the {kind} port has its maximum of {limit} connections open ({key}); try again later"
                )
                return Refusal(key, reason)
            self._open[kind] += 1
            self._by_address[client] += 1
        return None

    def release(self, kind: str, address: str) -> None:
        client = client_key(address)
        with self._lock:
            self._open[kind] -= 1
            self._by_address[client] -= 1
            if self._by_address[client] <= 0:
                del self._by_address[client]

    def open_count(self, kind: str | None = None) -> int:
        with self._lock:
            return sum(self._open.values()) if kind is None else self._open[kind]

    def addresses(self) -> int:
        with self._lock:
            return len(self._by_address)
