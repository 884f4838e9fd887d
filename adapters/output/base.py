"""The output adapter plug point: `OutputAdapter`, its counters and the HA fencing hook.

An output adapter takes records from a formatter and delivers them to a target (a
database table, a log, an HTTP endpoint). `publish` only enqueues; a background writer
delivers, retrying while the target is down. The counters say where every record went:

    published = written + rejected + fenced + abandoned + pending
    (overflowed records were never published: `publish` refused them)

Imports only `engine.errors`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.errors import AdapterError, ConfigError

Fence = Callable[[Any], object]
"""HA fencing hook: called once per write with the adapter's transaction handle (the
SQLAlchemy `Connection` of the write transaction for the RDBMS adapter, None for adapters
without transactions); it raises to abort the write. See `OutputAdapter.publish`."""


class AdapterConfigError(AdapterError, ConfigError):
    """An adapter's configuration is invalid; `.key` is the offending key (e.g. `columns[1].type`)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


class AdapterStopped(AdapterError):
    """`publish` was called on an adapter that has been stopped."""


class RecordError(AdapterError):
    """A record the adapter cannot take (wrong shape, unknown column); `publish` refused the call."""


@dataclass(frozen=True)
class AdapterStats:
    """A consistent snapshot of one adapter's counters (records, unless noted)."""

    published: int = 0  # accepted by publish()
    written: int = 0  # delivered to the target
    overflow: int = 0  # refused by publish() because the buffer was full
    rejected: int = 0  # refused by the target for good (bad data); logged
    fenced: int = 0  # discarded because the fence raised (this node may no longer write)
    abandoned: int = 0  # still pending when stop() gave up waiting
    errors: int = 0  # failed write attempts (each retry counts)
    in_doubt: int = 0  # writes whose commit was interrupted: retried, so possibly written twice
    pending: int = 0  # in the buffer now

    @property
    def dropped(self) -> int:
        """Records that will never reach the target (not counting fenced ones)."""
        return self.overflow + self.rejected + self.abandoned


class OutputAdapter(Protocol):
    """What the node drives: start, publish (non-blocking), flush, stop; counters in `stats`."""

    name: str
    kind: str

    def start(self) -> None:
        """Start delivering (a background writer thread for buffered adapters). Idempotent."""

    def publish(self, records: Sequence[Any], fence: Fence | None = None) -> int:
        """Enqueue `records` in order and return how many were accepted; never blocks on the target.

        Records beyond the buffer's free space are refused, counted in `stats.overflow` and
        logged (rate-limited). A record of the wrong shape refuses the whole call with
        `RecordError`; publishing after `stop` raises `AdapterStopped`.

        `fence` — the HA hook: when given, every write that includes these records first
        calls `fence(handle)` inside the same transaction (RDBMS: the SQLAlchemy
        `Connection`, so a lease-epoch check commits or rolls back together with the rows).
        If it raises, the write is rolled back and the records are discarded and counted in
        `stats.fenced` (the new notifier re-sends them from its journal). Database errors
        raised by the fence count as the database being down: the write is retried.
        """
        ...

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every record published before the call is written (or rejected/fenced).

        True when none of them is still pending; False on timeout.
        """
        ...

    def stop(self, timeout: float | None = None) -> bool:
        """Flush for up to `timeout`, then stop the writer; records still pending are abandoned.

        Returns what the flush returned. Idempotent.
        """
        ...

    @property
    def stats(self) -> AdapterStats: ...
