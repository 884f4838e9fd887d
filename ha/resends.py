"""Bundles a member gets twice: `Resends` after a takeover, `DirectCopies` in full-active-active.

(A bundle relayed again by a member whose answer was lost: `app.cluster.relays.RelayedBundles`.)

`Resends`: bundles a client sends again because a takeover (or a lost connection) cut off their
acknowledgement.

A notifier that dies after its standbys hold a bundle but before the client got its
acknowledgement leaves the client no choice but to send the bundle again (to the next
receiver of `tcp://a|tcp://b`, or through a standby that relayed it). The new notifier already
has that bundle, sequenced in the old notifier's term. So a journal remembers the digests of
its last `keep` bundles; for `window_ms` after it takes over, a bundle identical to one of
them (same stream, same event timestamps, same values: a client's resend) is acknowledged
without being processed again, each remembered bundle once. Likewise a bundle a standby relays
that is identical to one this notifier sequenced itself in the last `window_ms`: the client
sent it here, lost the acknowledgement, and sent it again through the other member. Outside
those cases, or for a bundle never sequenced before, nothing is filtered. Clients that stamp events (WSO2's do) make
two distinct bundles identical only if they repeat the same values at the same millisecond.

Pure logic: time comes in as arguments.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any


def digest(stream: str, timestamps: Sequence[int], rows: Sequence[tuple[Any, ...]]) -> int:
    """The same number for the same bundle on every member (a notifier sends its recent ones
    to a standby that joins): a 64-bit BLAKE2b of the bundle's text."""
    text = repr((stream, list(timestamps), [tuple(row) for row in rows]))
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


class Resends:
    def __init__(self, keep: int = 4096, window_ms: int = 10_000) -> None:
        self._recent: deque[int] = deque(maxlen=keep)
        self._window_ms = window_ms
        self._before: Counter[int] = Counter()
        self._until = 0
        self._keep = keep
        self._sequenced: deque[tuple[int, int]] = deque()  # (at ms, bundle) this node sequenced lately
        self._sequenced_count: Counter[int] = Counter()

    def seen(self, bundle: int, at_ms: int | None = None) -> None:
        """A bundle was sequenced: by this node at `at_ms` (its plan clock), or by the notifier
        (None: a record it applied)."""
        self._recent.append(bundle)
        if at_ms is not None:
            self._sequenced.append((at_ms, bundle))
            self._sequenced_count[bundle] += 1
            self._expire(at_ms)

    def relayed_again(self, bundle: int, now_ms: int) -> bool:
        """Whether a bundle a member relays here at `now_ms` is one this node sequenced within the
        window: a client's resend through that member of a bundle whose acknowledgement it never
        got from here (the connection cut by a stop, a reset or a timeout)."""
        self._expire(now_ms)
        return self._sequenced_count[bundle] > 0

    def _expire(self, now_ms: int) -> None:
        while self._sequenced and (
            self._sequenced[0][0] < now_ms - self._window_ms or len(self._sequenced) > self._keep
        ):
            _, gone = self._sequenced.popleft()
            self._sequenced_count[gone] -= 1
            if self._sequenced_count[gone] <= 0:
                del self._sequenced_count[gone]

    def recent(self) -> list[int]:
        return list(self._recent)

    def replace(self, recent: Sequence[int]) -> None:
        """This member joined the notifier's log: its recent bundles are the notifier's, and what it
        sequenced itself before is no longer in its log (a client's resend of one must be processed)."""
        self._recent.clear()
        self._recent.extend(recent)
        self._sequenced.clear()
        self._sequenced_count.clear()

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


class DirectCopies:
    """A full-active-active standby's own copies of the bundles clients send to every member.

    Clients send each bundle to every member, so a standby gets its own copy of what the
    notifier sequences. It holds the copy (instead of relaying it) until the notifier's record
    of the same bundle arrives; a copy that arrives after that record is dropped at once. When
    the standby takes over, the copies the old notifier never sequenced are its to process, in
    the order they arrived: nothing a client sent is lost or processed twice. At most `keep`
    copies are held (the oldest are dropped past it, and counted) and `keep` sequenced bundles
    remembered for late copies.
    """

    def __init__(self, keep: int = 100_000) -> None:
        self._keep = keep
        self._held: dict[int, list[tuple[str, list[tuple[Any, ...]], list[int]]]] = {}
        self._order: deque[int] = deque()
        self._early: Counter[int] = Counter()  # sequenced before their copy arrived
        self._early_order: deque[int] = deque()
        self.dropped = 0

    def arrived(self, stream: str, rows: list[tuple[Any, ...]], timestamps: list[int]) -> None:
        bundle = digest(stream, timestamps, rows)
        if self._early[bundle] > 0:
            self._early[bundle] -= 1
            return
        self._held.setdefault(bundle, []).append((stream, rows, timestamps))
        self._order.append(bundle)
        while len(self._order) > self._keep:
            self._forget(self._order.popleft())
            self.dropped += 1

    def sequenced(self, bundle: int) -> None:
        """The notifier's record of `bundle` was applied here."""
        if self._held.get(bundle):
            self._forget(bundle)
            self._order.remove(bundle)
            return
        self._early[bundle] += 1
        self._early_order.append(bundle)
        while len(self._early_order) > self._keep:
            gone = self._early_order.popleft()
            self._early[gone] -= 1
            if self._early[gone] <= 0:
                del self._early[gone]

    def take(self) -> list[tuple[str, list[tuple[Any, ...]], list[int]]]:
        """The copies never sequenced, oldest first; they are no longer held."""
        taken = []
        for bundle in self._order:
            copies = self._held.get(bundle)
            if copies:
                taken.append(copies.pop(0))
        self._held.clear()
        self._order.clear()
        self._early.clear()  # a leader's late copies are the resend filter's (`Resends`)
        self._early_order.clear()
        return taken

    @property
    def held(self) -> int:
        return len(self._order)

    def _forget(self, bundle: int) -> None:
        copies = self._held.get(bundle)
        if copies:
            copies.pop(0)
            if not copies:
                del self._held[bundle]
