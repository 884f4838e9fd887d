"""`Membership`: which cluster members are alive, suspected or dead, from the heartbeats seen.

Every member heartbeats every `heartbeat_ms` to the well-known addresses (WKA) and to the
members it has learned of; a heartbeat names its sender and the members the sender knows, so
a member started with only the WKA list learns the whole cluster. A member not heard from for
`suspect_ms` is suspected, for `dead_ms` dead (and forgotten after `forget_ms`). A closed
connection from a peer's process is proof it died (`lost`): dead at once, without waiting.
The view only proposes notifiers (`ha.placement`); the registry's lease decides.

Pure logic: time (monotonic seconds) and heartbeats come in as arguments. Imports nothing of ours.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class State(enum.StrEnum):
    ALIVE = "alive"
    SUSPECTED = "suspected"
    DEAD = "dead"


@dataclass(frozen=True)
class Timeouts:
    heartbeat_ms: int = 200
    suspect_ms: int = 600
    dead_ms: int = 1500
    forget_ms: int = 600_000

    def __post_init__(self) -> None:
        if not 0 < self.heartbeat_ms < self.suspect_ms < self.dead_ms < self.forget_ms:
            msg = (
                "membership timeouts need 0 < heartbeat_ms < suspect_ms < dead_ms < forget_ms, got "
                f"{self.heartbeat_ms}, {self.suspect_ms}, {self.dead_ms}, {self.forget_ms}"
            )
            raise ValueError(msg)


@dataclass
class _Member:
    heard: float | None  # when a heartbeat of its own last arrived (None: only heard of)
    learned: float  # when it was first heard of
    lost: bool = False  # its connection closed: dead until it heartbeats again
    lost_at: float = 0.0  # when that was seen


class Membership:
    """This member's (`me`) view of the cluster."""

    def __init__(self, me: str, timeouts: Timeouts, wka: Iterable[str] = ()) -> None:
        self.me = me
        self.timeouts = timeouts
        self._members: dict[str, _Member] = {}
        self._wka = sorted(set(wka) - {me})

    def heartbeat(self, sender: str, knows: Iterable[str], now: float) -> None:
        """A heartbeat of `sender` arrived at `now`, naming the members it knows."""
        if sender != self.me:
            member = self._members.get(sender)
            if member is None:
                self._members[sender] = _Member(now, now)
            else:
                member.heard, member.lost = now, False
        for other in knows:
            if other != self.me and other not in self._members:
                self._members[other] = _Member(None, now)

    def lost(self, member: str, now: float = 0.0) -> None:
        """The connection to `member`'s process closed, at `now`: it is dead now."""
        found = self._members.get(member)
        if found is not None:
            found.lost = True
            found.lost_at = now

    def gone(self, member: str, now: float) -> bool:
        """Whether `member` was heard from and is dead now (its connection closed, or silent past
        `dead_ms`): a member never heard from is not known to be gone, just not known."""
        found = self._members.get(member)
        return found is not None and found.heard is not None and self.state(member, now) is State.DEAD

    def departed(self, now: float) -> dict[str, float]:
        """The members whose process is known to have died (heard from, and their connection
        closed), and when that was seen."""
        return {
            m: found.lost_at
            for m, found in self._members.items()
            if self.gone(m, now) and self.lost_connection(m)
        }

    def lost_connection(self, member: str) -> bool:
        """Whether `member`'s connection closed (and it has not heartbeated since)."""
        found = self._members.get(member)
        return found is not None and found.lost

    def state(self, member: str, now: float) -> State:
        if member == self.me:
            return State.ALIVE
        found = self._members.get(member)
        if found is None or found.lost:
            return State.DEAD
        since = found.heard if found.heard is not None else found.learned
        silent_ms = (now - since) * 1000
        if found.heard is None:  # only heard of: alive once it speaks for itself
            return State.SUSPECTED if silent_ms < self.timeouts.dead_ms else State.DEAD
        if silent_ms < self.timeouts.suspect_ms:
            return State.ALIVE
        return State.SUSPECTED if silent_ms < self.timeouts.dead_ms else State.DEAD

    def view(self, now: float) -> dict[str, State]:
        """Every member known (this one included) and its state; long-dead ones are forgotten."""
        forget = self.timeouts.forget_ms / 1000
        for name in [n for n, m in self._members.items() if now - (m.heard or m.learned) > forget]:
            del self._members[name]
        out = {name: self.state(name, now) for name in self._members}
        out[self.me] = State.ALIVE
        return dict(sorted(out.items()))

    def alive(self, now: float) -> list[str]:
        """The members that take part in placing notifiers: alive ones (this one included)."""
        return [name for name, state in self.view(now).items() if state is State.ALIVE]

    def targets(self, now: float) -> list[str]:
        """Where to send this member's next heartbeat: the WKA and every member not dead."""
        known = [
            name for name, state in self.view(now).items() if state is not State.DEAD and name != self.me
        ]
        return sorted(set(self._wka) | set(known))

    def knows(self, now: float) -> list[str]:
        """The members a heartbeat of this member names: those it does not consider dead."""
        return [name for name, state in self.view(now).items() if state is not State.DEAD]
