"""`RelayedBundles`: a notifier's memory of the bundles members relayed to it.

A member that is not the notifier relays its clients' bundles to the notifier, each under an id
that is the same on every attempt (`<member incarnation>:<n>`). An attempt whose answer was lost
(a connection that failed after the notifier took it) is made again under the same id, so the
notifier answers it as it answered the first, never processing it twice: an id whose attempt was
taken is answered as taken; one still being processed is answered once that attempt is decided;
a refused attempt is forgotten (its repeat is processed anew, as a new bundle). At most `keep`
ids are kept, the oldest forgotten first.

Shared by the node (`app.cluster.relays`, which waits for an undecided attempt under its lock)
and the HA simulator. Pure logic: no lock, no clock.
"""

from __future__ import annotations

import enum
import itertools
from collections import OrderedDict


class Attempt(enum.Enum):
    NEW = "new"  # process it (`begin` returned a token for `taken`/`refused`)
    PENDING = "pending"  # an earlier attempt is still being processed: answer as it is decided
    TAKEN = "taken"  # an earlier attempt was taken: answer it as taken, process nothing


class RelayedBundles:
    def __init__(self, keep: int = 10_000) -> None:
        self._keep = keep
        self._tokens = itertools.count(1)
        self._ids: OrderedDict[str, tuple[int, bool]] = OrderedDict()  # id → (token, taken)

    def status(self, relay_id: str) -> Attempt:
        """What an attempt under `relay_id` would be now (NEW: not known, or refused)."""
        known = self._ids.get(relay_id)
        if known is None:
            return Attempt.NEW
        return Attempt.TAKEN if known[1] else Attempt.PENDING

    def begin(self, relay_id: str) -> tuple[Attempt, int]:
        """An attempt under `relay_id` arrived: what it is, and (NEW) the token of its processing."""
        status = self.status(relay_id)
        if status is not Attempt.NEW:
            return status, 0
        token = next(self._tokens)
        self._ids[relay_id] = (token, False)
        while len(self._ids) > self._keep:
            self._ids.popitem(last=False)
        return Attempt.NEW, token

    def taken(self, relay_id: str, token: int) -> None:
        """The processing `token` of `relay_id` took the bundle."""
        if self._ids.get(relay_id, (0, False))[0] == token:
            self._ids[relay_id] = (token, True)

    def refused(self, relay_id: str, token: int) -> None:
        """The processing `token` of `relay_id` refused the bundle: a repeat is processed anew."""
        if self._ids.get(relay_id, (0, False))[0] == token:
            del self._ids[relay_id]
