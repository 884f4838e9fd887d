"""`DiskFaults`: the plans whose input log the disk does not take now, said once, not per bundle.

A full file system (ENOSPC), a quota (EDQUOT), a failed write (EIO), a failed flush or one that
has not finished for long makes a plan's log refuse appends (`DiskFault`); the receivers refuse
the bundles as retryable and their clients send them again, maybe many times a second. Here
the first refusal is logged at ERROR, then one line per `interval` while they go on (with how
many were refused since the last), and one at WARNING once the fault is over: an append was
taken and none refused for `settle` seconds (on a full disk a small record, a clock tick, may
still fit where a bundle does not: that is no recovery). `report()` is what `/health/details`
shows per plan (`input_log_faults`). Imports `app.persistence.errors` only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.persistence.errors import DiskFault

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 10.0
SETTLE_SECONDS = 1.0


@dataclass
class _Fault:
    last: DiskFault  # the newest refusal (its path and reason)
    since: float  # monotonic: when the log first refused
    since_wall: float  # the same moment, as wall-clock seconds (for the health report)
    refused: int  # appends refused since `since`
    logged_at: float  # monotonic: the last line about it
    refused_at_line: int  # `refused` when that line was written
    last_at: float  # monotonic: the newest refusal
    took_at: float | None = None  # monotonic: the first append taken after it


class DiskFaults:
    """Thread-safe; `clock` is monotonic seconds."""

    def __init__(
        self,
        interval: float = INTERVAL_SECONDS,
        settle: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._settle = settle
        self._clock = clock
        self._faults: dict[str, _Fault] = {}
        self._lock = threading.Lock()

    def met(self, fault: DiskFault, *, refused: bool = True) -> None:
        """`fault.plan`'s log did not take a write or a flush (`refused`: an append was refused)."""
        now = self._clock()
        with self._lock:
            known = self._faults.get(fault.plan)
            if known is None:
                self._faults[fault.plan] = _Fault(
                    fault, now, time.time(), int(refused), now, int(refused), now
                )
                log.error("%s", fault)
                return
            known.last, known.last_at, known.took_at = fault, now, None
            known.refused += int(refused)
            if now - known.logged_at < self._interval:
                return
            lately = known.refused - known.refused_at_line
            known.logged_at, known.refused_at_line = now, known.refused
        log.error(
            "%s (for %.0f s now; %d appends refused in the last %.0f s)",
            fault, now - known.since, lately, self._interval,
        )  # fmt: skip

    def took(self, plan: str) -> None:
        """`plan`'s log took an append: a fault it had is over once none is refused for `settle` s."""
        if plan not in self._faults:  # the hot path: no lock while the disk is fine
            return
        now = self._clock()
        with self._lock:
            known = self._faults.get(plan)
            if known is None:
                return
            if known.took_at is None:
                known.took_at = now
            if now - known.last_at < self._settle:
                return
            del self._faults[plan]
        self._over(plan, known, now)

    def _over(self, plan: str, known: _Fault, now: float) -> None:
        log.warning(
            "input log of plan '%s' takes appends again, after %.1f s in which %d were refused (%s)",
            plan, now - known.since, known.refused, known.last.why,
        )  # fmt: skip

    def report(self) -> dict[str, dict[str, Any]]:
        """Per plan whose log refuses appends now: why, the path, since when, how many refused,
        and whether it waits for a restart (a failed flush)."""
        now = self._clock()
        with self._lock:
            over = [
                (plan, f)
                for plan, f in self._faults.items()
                if f.took_at is not None and now - f.last_at >= self._settle
            ]
            for plan, _ in over:
                del self._faults[plan]
            for plan, f in over:
                self._over(plan, f, now)
            return {
                plan: {
                    "error": f.last.why,
                    "path": f.last.path,
                    "since": datetime.fromtimestamp(f.since_wall, UTC).isoformat(timespec="seconds"),
                    "refused": f.refused,
                    "restart_needed": f.last.restart,
                }
                for plan, f in self._faults.items()
            }
