"""`LeaseTable`: the rules of `ha.ports.LeaseStore` as plain Python, one table of leases in memory.

It is the reference the registry's SQL store (`app.registry.leases`) is tested against (the
same requests, the same answers: `tests/integration/registry/test_lease_rules.py`) and the
lease store of the HA simulator. The store's clock is an argument (`now_ms`, the database's
clock in the registry): no node's clock decides who holds a lease.

The rules:
- `acquire` grants or renews: it renews a lease its holder still holds (the epoch stays); it
  grants a lease never granted (epoch 1), or an expired one (epoch + 1, even to its last
  holder: a new term) when the asker's log covers what the lease requires; else nothing
  changes. A renewal with `require` raises the requirement to it, never lowers it; a request
  with `require` (a notifier confirming its term before it acknowledges) only renews a lease
  that exists: one that arrives after its holder released the lease, or after it expired,
  must not start a term its sender does not know of (it stepped down: the lease would stand
  unused until it expired).
- `renew` renews many leases at once: each its holder still holds, as `acquire` would (the
  epoch stays, the requirement too); it grants nothing.
- `take_over` grants a lease still held by `dead` under `epoch` at once (epoch + 1), when the
  asker's log covers what it requires: only for a holder whose process is known gone, and
  safe only because the sink's fence refuses the old epoch's late writes.
- `release` ends its holder's lease now; `release_all` every lease a node holds. A released
  lease expires at the beginning of time (`RELEASED`), not at the store's "now": a store clock
  stepping back must not bring it back to life.
Every answer is the lease as it stands afterwards, whoever holds it.

Pure logic. Imports nothing of ours but `ha.ports`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ha.ports import Lease, LogPosition

RELEASED = 0  # the expiry of a released lease, in ms since the epoch


@dataclass
class _Row:
    holder: str
    epoch: int
    expires_ms: int
    required: LogPosition | None = None


def covers(held: LogPosition | None, required: LogPosition | None) -> bool:
    """Whether a log standing at `held` (None: no log) holds what `required` names."""
    if required is None:
        return True
    return held is not None and held.covers(required)


class LeaseTable:
    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}

    def acquire(
        self,
        plan: str,
        node: str,
        ttl_ms: int,
        now_ms: int,
        held: LogPosition | None = None,
        require: LogPosition | None = None,
    ) -> Lease:
        row = self._rows.get(plan)
        if row is None:
            self._rows[plan] = _Row(node, 1, now_ms + ttl_ms)
            return self._lease(plan, now_ms)
        renewal = row.holder == node and row.expires_ms > now_ms
        if renewal and require is not None and not _raised_past(row.required, require):
            row.required = require
        if renewal or (require is None and row.expires_ms <= now_ms and covers(held, row.required)):
            row.epoch = row.epoch if renewal else row.epoch + 1
            row.holder = node
            row.expires_ms = now_ms + ttl_ms
        return self._lease(plan, now_ms)

    def renew(self, plans: Sequence[str], node: str, ttl_ms: int, now_ms: int) -> dict[str, Lease]:
        for plan in plans:
            row = self._rows.get(plan)
            if row is not None and row.holder == node and row.expires_ms > now_ms:
                row.expires_ms = now_ms + ttl_ms
        return {plan: self._lease(plan, now_ms) for plan in plans if plan in self._rows}

    def take_over(
        self,
        plan: str,
        node: str,
        ttl_ms: int,
        now_ms: int,
        dead: str,
        epoch: int,
        held: LogPosition | None = None,
    ) -> Lease:
        row = self._rows.get(plan)
        if row is None:
            return self.acquire(plan, node, ttl_ms, now_ms, held)
        if row.holder == dead and row.epoch == epoch and node != dead and covers(held, row.required):
            row.epoch += 1
            row.holder = node
            row.expires_ms = now_ms + ttl_ms
        return self._lease(plan, now_ms)

    def release(self, plan: str, node: str, now_ms: int) -> bool:
        row = self._rows.get(plan)
        if row is None or row.holder != node:
            return False
        row.expires_ms = RELEASED
        return True

    def release_all(self, node: str, now_ms: int) -> int:
        ended = 0
        for row in self._rows.values():
            if row.holder == node and row.expires_ms > now_ms:
                row.expires_ms = RELEASED
                ended += 1
        return ended

    def current(self, plan: str, now_ms: int) -> Lease | None:
        return self._lease(plan, now_ms) if plan in self._rows else None

    def all(self, now_ms: int) -> list[Lease]:
        return [self._lease(plan, now_ms) for plan in sorted(self._rows)]

    def _lease(self, plan: str, now_ms: int) -> Lease:
        row = self._rows[plan]
        return Lease(plan, row.holder, row.epoch, max(0, row.expires_ms - now_ms), row.required)


def _raised_past(required: LogPosition | None, require: LogPosition) -> bool:
    """Whether `required` already stands at `require` or beyond (a renewal never lowers it)."""
    return required is not None and (
        required.term > require.term
        or (required.term == require.term and required.position >= require.position)
    )
