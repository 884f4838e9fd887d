"""`Tracer`: the last events of the streams someone is watching (the console's event tracer).

Costs nothing for a stream nobody watches but one dict lookup per bundle. A stream is watched
for `watch_seconds` after the last time its trace was read, and keeps at most `keep` events
(copied references to the bundle's rows, no formatting until read).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any


class Tracer:
    def __init__(self, keep: int = 200, watch_seconds: float = 30.0, max_streams: int = 64) -> None:
        self._keep = keep
        self._watch_seconds = watch_seconds
        self._max_streams = max_streams
        self._lock = threading.Lock()
        self._events: dict[str, deque[tuple[int, tuple[Any, ...]]]] = {}
        self._read_at: dict[str, float] = {}

    @property
    def watched(self) -> dict[str, deque[tuple[int, tuple[Any, ...]]]]:
        """The streams watched now (test membership before building rows for `record`)."""
        return self._events

    def record(
        self, stream_id: str, rows: Sequence[tuple[Any, ...]], timestamps: Sequence[int] | int
    ) -> None:
        kept = self._events.get(stream_id)
        if kept is None:
            return
        start = max(0, len(rows) - self._keep)
        stamps = [timestamps] * len(rows) if isinstance(timestamps, int) else timestamps
        with self._lock:
            kept.extend(zip(stamps[start:], rows[start:], strict=True))

    def last(self, stream_id: str, limit: int) -> list[tuple[int, tuple[Any, ...]]]:
        """The newest `limit` events of `stream_id` (oldest first); starts watching it."""
        now = time.monotonic()
        with self._lock:
            for stream, read_at in list(self._read_at.items()):
                if now - read_at > self._watch_seconds:
                    del self._read_at[stream]
                    self._events.pop(stream, None)
            self._read_at[stream_id] = now
            kept = self._events.get(stream_id)
            if kept is None:
                if len(self._events) >= self._max_streams:
                    return []
                kept = self._events[stream_id] = deque(maxlen=self._keep)
            return list(kept)[-limit:]
