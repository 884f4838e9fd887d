"""The session table shared by the plain and the TLS listener (PROTOCOL §4).

A session is created by `connect`, removed by `disconnect`, and expires a fixed time after
its creation; activity does not extend it. Because every session lives equally long, the
table is ordered by expiry and expired entries are dropped from its front. Thread-safe.
Imports nothing of ours.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable


def _random_id() -> str:
    return str(uuid.uuid4())


class Sessions:
    """Session ids → user name, each valid for `timeout_seconds` after creation."""

    def __init__(
        self,
        timeout_seconds: float,
        *,
        new_id: Callable[[], str] = _random_id,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._timeout = timeout_seconds
        self._new_id = new_id
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[float, str]] = {}

    def create(self, username: str) -> str:
        """A fresh session for `username` (normally a random UUID)."""
        with self._lock:
            now = self._clock()
            self._purge(now)
            session_id = self._new_id()
            self._sessions.pop(session_id, None)
            self._sessions[session_id] = (now + self._timeout, username)
            return session_id

    def valid(self, session_id: str | None) -> bool:
        if session_id is None:
            return False
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None:
                return False
            if entry[0] <= self._clock():
                del self._sessions[session_id]
                return False
            return True

    def user(self, session_id: str) -> str | None:
        with self._lock:
            entry = self._sessions.get(session_id)
            return None if entry is None else entry[1]

    def remove(self, session_id: str | None) -> bool:
        with self._lock:
            return self._sessions.pop(session_id or "", None) is not None

    def __len__(self) -> int:
        with self._lock:
            self._purge(self._clock())
            return len(self._sessions)

    def _purge(self, now: float) -> None:
        expired = []
        for session_id, (expires, _user) in self._sessions.items():
            if expires > now:
                break
            expired.append(session_id)
        for session_id in expired:
            del self._sessions[session_id]
