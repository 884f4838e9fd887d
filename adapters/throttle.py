"""Rate limiting for repetitive log lines (buffer overflow, retries while a target is down).

Owns `Throttle` (one kind of line) and `Burst` (all lines of a source). A flood of identical warnings would hide everything else in the log and
cost more than the failure itself, yet a suppressed line must still be accounted for: each
line that does get through says how many were held back since the last one.
Imports nothing of ours.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Throttle:
    """Lets one event through per `interval` seconds and counts the ones it held back."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._last: float | None = None
        self._held = 0
        self._lock = threading.Lock()

    def allow(self) -> tuple[bool, int]:
        """(whether to log now, how many were held back since the last allowed one)."""
        now = self._clock()
        with self._lock:
            if self._last is not None and now - self._last < self.interval:
                self._held += 1
                return False, 0
            held, self._held = self._held, 0
            self._last = now
            return True, held

    def reset(self) -> None:
        """Forget the last allowed time (the next event logs at once)."""
        with self._lock:
            self._last = None
            self._held = 0


class Burst:
    """Lets at most `limit` events through per `interval` seconds, whatever their kind (many
    attackers, each throttled on its own, must not flood the log together), and counts the
    ones it held back."""

    def __init__(self, limit: int, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.interval = interval
        self._clock = clock
        self._window = -interval
        self._used = 0
        self._held = 0
        self._lock = threading.Lock()

    def allow(self) -> tuple[bool, int]:
        """(whether to log now, how many were held back before this one)."""
        now = self._clock()
        with self._lock:
            if now - self._window >= self.interval:
                self._window, self._used = now, 0
            if self._used >= self.limit:
                self._held += 1
                return False, 0
            self._used += 1
            held, self._held = self._held, 0
            return True, held
