"""`Admission`: which new connections the Data Bridge listeners take, and why they refuse the rest.

Three budgets, checked in this order: `max_connections_per_address` over both ports, so one
client address cannot take a port's whole budget; then each port's own budget
(`max_connections` for the plain port, `max_tls_connections` for the TLS login port), kept
apart so that a flood of one port cannot lock publishers out of the other. A refusal is a
sentence naming the limit and its configuration key, for the client and the log.
Pure bookkeeping, thread-safe; imports nothing of ours.
"""

from __future__ import annotations

import threading
from collections import Counter


class Admission:
    def __init__(self, port_limits: dict[str, tuple[int, str]], per_address: int) -> None:
        """`port_limits`: listener kind ("plain", "tls") → (limit, its configuration key)."""
        self._limits = dict(port_limits)
        self._per_address = per_address
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()
        self._by_address: Counter[str] = Counter()

    def admit(self, kind: str, address: str) -> str | None:
        """Count a new connection of `kind` from `address`, or say why it is refused."""
        limit, key = self._limits[kind]
        with self._lock:
            if self._by_address[address] >= self._per_address:
                return (
                    f"{self._per_address} connections from {address} are open already "
                    "(thrift.max_connections_per_address); close idle ones or raise the limit"
                )
            if self._open[kind] >= limit:
                return f"the {kind} port has its maximum of {limit} connections open ({key}); try again later"
            self._open[kind] += 1
            self._by_address[address] += 1
        return None

    def release(self, kind: str, address: str) -> None:
        with self._lock:
            self._open[kind] -= 1
            self._by_address[address] -= 1
            if self._by_address[address] <= 0:
                del self._by_address[address]

    def open_count(self, kind: str | None = None) -> int:
        with self._lock:
            return sum(self._open.values()) if kind is None else self._open[kind]

    def addresses(self) -> int:
        with self._lock:
            return len(self._by_address)
