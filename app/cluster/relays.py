"""Bundles members relay to a plan's notifier: `RelayedBundles`, the notifier's memory of them."""

from __future__ import annotations

import threading
from collections import OrderedDict


class RelayedBundles:
    """A notifier's memory of the bundles members relayed to it, by the id the relaying member
    gave each (`<member incarnation>:<n>`), so that one sent again because its answer was lost
    (a connection that failed after the notifier took it) is answered as the first time, not
    processed twice. An attempt still being processed makes the repeat wait for its answer; a
    refused attempt is forgotten (the repeat is processed anew). At most `keep` ids are kept.
    """

    def __init__(self, keep: int = 10_000) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._answers: OrderedDict[str, _Answer] = OrderedDict()

    def begin(self, relay_id: str) -> tuple[bool, _Answer]:
        """(True, a new answer to fill in) for an id not seen, else (False, the first attempt's)."""
        with self._lock:
            answer = self._answers.get(relay_id)
            if answer is not None:
                return False, answer
            answer = self._answers[relay_id] = _Answer()
            while len(self._answers) > self._keep:
                self._answers.popitem(last=False)
            return True, answer

    def refused(self, relay_id: str, answer: _Answer, why: str) -> None:
        with self._lock:
            if self._answers.get(relay_id) is answer:
                del self._answers[relay_id]
        answer.give(why)

    def taken(self, answer: _Answer) -> None:
        answer.give(None)


class _Answer:
    def __init__(self) -> None:
        self._done = threading.Event()
        self.refusal: str | None = None

    def give(self, refusal: str | None) -> None:
        self.refusal = refusal
        self._done.set()

    def wait(self, timeout: float) -> str | None:
        """The first attempt's refusal, None if it was taken; a refusal too if it is still undecided."""
        if not self._done.wait(timeout):
            return "the first attempt at this bundle is still being processed"
        return self.refusal
