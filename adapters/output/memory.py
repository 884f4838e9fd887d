"""`MemoryAdapter`: an in-memory double of a buffered output adapter, for tests of whoever publishes.

It behaves like the remote adapters — same buffer, writer thread, retry, counters — but
its target is a list. Tests switch the target off (`available = False`: writes fail as an
outage), make it refuse some records (`refuse`), and read what arrived (`written`,
`batches`, and `origins`, parallel to `written`), and may hold a linger's clock still (`clock`). With `skip_delivered=True` it also acts
like the RDBMS adapter's `cepheus_delivered` table: it keeps the last origin written per
source (`delivered`, which a test may fill as a previous process would have left it) and
skips records whose origin is not past it. The fence is called with None. Imports
sibling modules only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from adapters.output.base import Fence, Origin, Run, per_record
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
        skip_delivered: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, buffering or Buffering(retry_initial_ms=5, retry_max_ms=50), clock=clock)
        self.available = True
        self.refuse = refuse
        self.skip_delivered = skip_delivered
        self.attempts = 0
        self.written: list[Any] = []
        self.origins: list[Origin | None] = []
        self.batches: list[list[Any]] = []
        self.delivered: dict[str, Origin] = {}  # source -> last origin written (skip_delivered)
        self._lock = threading.Lock()

    def describe_target(self) -> str:
        return f"memory target {self.name}"

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> int:
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
            marks = dict(self.delivered)
            kept: list[Any] = []
            kept_runs: list[Run] = []
            at = 0
            for origin, count in origins:  # a run the target has a part of is split where it ends
                skip = 0
                if self.skip_delivered and origin is not None:
                    skip = origin.covered(marks.get(origin.source), count)
                    if skip < count:
                        marks[origin.source] = origin.nth(count - 1)
                if skip < count:
                    kept.extend(records[at + skip : at + count])
                    kept_runs.append((None if origin is None else origin.nth(skip), count - skip))
                at += count
            self.delivered = marks
            self.written.extend(kept)
            self.origins.extend(per_record(kept_runs))
            if kept:
                self.batches.append(kept)
        return len(records) - len(kept)
