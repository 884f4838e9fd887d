"""`Holder`: when a node may act as a plan's notifier, from the answers of the lease store.

The lease lives in the registry and expires by the database's clock (`ports.LeaseStore`). A
node cannot read that clock, so it keeps its own, conservative deadline on its monotonic
clock: the lease was granted no earlier than the moment the request was *sent*, so it is
valid at least until `sent + ttl`; the node stops notifying `margin` before that, to leave
room for its clock running slow and for a write it starts just before the end. A renewal that
fails (the registry unreachable, the lease taken by another node) leaves the deadline where
it was, so a node cut off from the registry steps down on its own, before the store can grant
the lease to anyone else. An answer naming another holder under a newer epoch (the lease was taken
over) deposes the node at once, and so does one naming this node with no time left (the store
refused to renew it, or expired it early by its own clock). A process paused (SIGSTOP, a long GC) wakes up past its deadline
and steps down the same way; what it may still have started is refused by the sink's fence.

Pure logic: time comes in as arguments. Imports nothing of ours but `ha.ports`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ha.ports import Lease

LOOK_CLOSELY_SECONDS = 2.0  # after the notifier's stream ends, who holds the lease is read every 50 ms


@dataclass(frozen=True)
class Timing:
    """`ttl_ms` the lease lasts in the store, renewed every `renew_ms`, given up `margin_ms`
    early. A renewal must fit several times into the margin, or one slow answer deposes the
    notifier."""

    ttl_ms: int = 2000
    renew_ms: int = 250
    margin_ms: int = 750

    def __post_init__(self) -> None:
        if not 0 < self.renew_ms < self.margin_ms < self.ttl_ms:
            msg = (
                f"lease timing needs 0 < renew_ms ({self.renew_ms}) < margin_ms ({self.margin_ms}) "
                f"< ttl_ms ({self.ttl_ms})"
            )
            raise ValueError(msg)


class Holder:
    """One node's view of its lease on one plan."""

    def __init__(self, node: str, timing: Timing) -> None:
        self.node = node
        self.timing = timing
        self.epoch: int | None = None  # of the lease this node holds or held last
        self._deadline: float | None = None  # monotonic seconds: notify before this only
        self._last_sent: float | None = None
        self._stale_before = float("-inf")  # answers to requests sent before this no longer count

    def due(self, now: float, every_s: float | None = None) -> bool:
        """Whether to ask the store now (to take or renew the lease): `every_s` (default: the
        renewal interval) after the last request."""
        every = self.timing.renew_ms / 1000 if every_s is None else every_s
        return self._last_sent is None or now - self._last_sent >= every

    def asked(self, sent: float, answer: Lease | None) -> bool:
        """Record the store's answer to a request sent at monotonic time `sent`; True when this
        node holds the lease now. An answer for another holder (or none: the request failed)
        changes nothing but the time of the last try. An answer to a request sent before this
        node stepped down (released the lease, or learnt it was taken over) is ignored: it
        may arrive after the step-down, granting what the store has since given away."""
        self._last_sent = max(sent, self._last_sent or sent)
        if answer is None or sent < self._stale_before:
            return self.holds(sent)
        if answer.holder != self.node:
            if self.epoch is not None and answer.epoch > self.epoch:
                self.step_down(sent)  # taken over (the store says so): no use waiting for the deadline
            return self.holds(sent)
        if answer.ttl_ms <= 0:
            # the row names this node, but expired: not a grant. The store refused it (a restarted
            # process asking while its log lacks what the lease requires), or its clock says the
            # lease ran out before this node's deadline did: either way, stop now
            self.step_down(sent)
            return False
        if self.epoch is not None and answer.epoch < self.epoch:
            return self.holds(sent)  # an answer older than one already seen: ignore it
        self.epoch = answer.epoch
        deadline = sent + (self.timing.ttl_ms - self.timing.margin_ms) / 1000
        if self._deadline is None or deadline > self._deadline:
            self._deadline = deadline
        return self.holds(sent)

    def holds(self, now: float) -> bool:
        """Whether this node may notify at monotonic time `now`."""
        return self._deadline is not None and now < self._deadline

    def remaining(self, now: float) -> float:
        """Seconds of notifying left (0 when not holding)."""
        return max(0.0, self._deadline - now) if self._deadline is not None else 0.0

    def step_down(self, now: float | None = None) -> None:
        """Stop notifying now (released, or moved to another node on request); answers to
        requests sent before `now` no longer count."""
        self._deadline = None
        if now is not None:
            self._stale_before = max(self._stale_before, now)


def lease_lookup_interval(renew_s: float, now: float, stream_ended_at: float | None) -> float:
    """How long a standby trusts what it last read of who holds a plan's lease: a renewal
    interval, but 50 ms for `LOOK_CLOSELY_SECONDS` after the notifier's stream ended (it may
    have released the lease on a graceful stop: take it over now, not a renewal later)."""
    if stream_ended_at is not None and now - stream_ended_at < LOOK_CLOSELY_SECONDS:
        return min(renew_s, 0.05)
    return renew_s
