"""`MemoryAdapter`: an in-memory double of a buffered output adapter, for tests of whoever publishes.

It behaves like the remote adapters — same buffer, writer thread, retry, counters — but
its target is a list. Tests switch the target off (`available = False`: writes fail as an
outage), make it refuse some records (`refuse`), and read what arrived (`written`,
`batches`). The fence is called with None. Imports sibling modules only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from adapters.output.base import Fence
from adapters.output.buffered import BufferedAdapter, Buffering, FenceRaised, Refused, RetryLater


class MemoryAdapter(BufferedAdapter):
    """Delivers records to `self.written`."""

    kind = "memory"

    def __init__(
        self,
        name: str = "memory",
        buffering: Buffering | None = None,
        *,
        refuse: Callable[[Any], bool] | None = None,
    ) -> None:
        super().__init__(name, buffering or Buffering(retry_initial_ms=5, retry_max_ms=50))
        self.available = True
        self.refuse = refuse
        self.attempts = 0
        self.written: list[Any] = []
        self.batches: list[list[Any]] = []
        self._lock = threading.Lock()

    def describe_target(self) -> str:
        return f"memory target {self.name}"

    def _write(self, records: list[Any], fence: Fence | None) -> None:
        with self._lock:
            self.attempts += 1
        if fence is not None:
            try:
                fence(None)
            except Exception as exc:
                raise FenceRaised(str(exc)) from exc
        if not self.available:
            msg = "memory target is down"
            raise RetryLater(msg)
        if self.refuse is not None and any(self.refuse(r) for r in records):
            msg = "memory target refused a record"
            raise Refused(msg)
        with self._lock:
            self.written.extend(records)
            self.batches.append(list(records))
