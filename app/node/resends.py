"""`Resends`: bundles a client sends again because a takeover cut off their acknowledgement.

A notifier that dies after its standbys hold a bundle but before the client got its
acknowledgement leaves the client no choice but to send the bundle again (to the next
receiver of `tcp://a|tcp://b`, or through a standby that relayed it). The new notifier already
has that bundle, sequenced in the old notifier's term. So a journal remembers the digests of
its last `keep` bundles; for `window_ms` after it takes over, a bundle identical to one of
them (same stream, same event timestamps, same values: a client's resend) is acknowledged
without being processed again, each remembered bundle once. Outside that window, or for a
bundle never sequenced before, nothing is filtered. Clients that stamp events (WSO2's do) make
two distinct bundles identical only if they repeat the same values at the same millisecond.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from typing import Any


def digest(stream: str, timestamps: Sequence[int], rows: Sequence[tuple[Any, ...]]) -> int:
    return hash((stream, tuple(timestamps), tuple(rows)))


class Resends:
    def __init__(self, keep: int = 4096, window_ms: int = 10_000) -> None:
        self._recent: deque[int] = deque(maxlen=keep)
        self._window_ms = window_ms
        self._before: Counter[int] = Counter()
        self._until = 0

    def seen(self, bundle: int) -> None:
        """A bundle was sequenced (this node's own, or the notifier's it applied)."""
        self._recent.append(bundle)

    def took_over(self, now_ms: int) -> None:
        """This node sequences from now on: what it has seen may come again for a while."""
        self._before = Counter(self._recent)
        self._until = now_ms + self._window_ms

    def resent(self, bundle: int, now_ms: int) -> bool:
        """Whether `bundle`, arriving at `now_ms`, is a resend of one sequenced before the takeover."""
        if now_ms >= self._until or self._before[bundle] <= 0:
            return False
        self._before[bundle] -= 1
        return True
