"""`InflightBudget`: the bytes of partly received messages that all connections may hold at once.

Each connection's `Reader` adds what it reads from its socket and gives it back when its
message is done, so the memory that clients can make the node hold is bounded node-wide,
whatever the number of connections: a reader that finds the budget spent waits before it
reads (back-pressure on its client) up to a timeout, then gives up and its connection
closes. Bytes are counted once read, not reserved before, so an idle connection waiting for
its next message holds nothing; the budget can therefore be overshot by at most one read
per connection that is reading at that moment.
Thread-safe; imports nothing of ours.
"""

from __future__ import annotations

import threading


class InflightBudget:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._freed = threading.Condition()

    @property
    def held(self) -> int:
        with self._freed:
            return self._held

    def wait_for_room(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds until the budget is not spent; False if it stayed spent."""
        with self._freed:
            return self._freed.wait_for(lambda: self._held < self.limit, timeout)

    def add(self, n: int) -> None:
        with self._freed:
            self._held += n

    def give(self, n: int) -> None:
        if n <= 0:
            return
        with self._freed:
            self._held -= n
            self._freed.notify_all()
