"""`InflightBudget`: the bytes of partly received messages that all connections may hold at once.

Each connection's `Reader` takes room from the budget before it reads from its socket (and
gives back what the read did not fill), and gives the rest back when its message is done,
so the bytes that clients can make the node hold never exceed the budget, whatever the
number of connections. A reader that finds no room waits (back-pressure on its client) up
to a timeout, then gives up and its connection closes. A connection waiting for its next
message takes only a small first read (`FIRST_READ`), so idle connections hold little.
Thread-safe; imports nothing of ours.
"""

from __future__ import annotations

import threading

FIRST_READ = 4096  # what a connection waiting for a message may read (and hold) at first


class InflightBudget:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._freed = threading.Condition()

    @property
    def held(self) -> int:
        with self._freed:
            return self._held

    def take(self, n: int, timeout: float | None) -> bool:
        """Take `n` bytes, waiting up to `timeout` seconds for the room; False if it never came."""
        with self._freed:
            if not self._freed.wait_for(lambda: self._held + n <= self.limit, timeout):
                return False
            self._held += n
            return True

    def give(self, n: int) -> None:
        if n <= 0:
            return
        with self._freed:
            self._held -= n
            self._freed.notify_all()
