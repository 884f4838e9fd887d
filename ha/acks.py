"""`Acknowledgements`: when a notifier may acknowledge a client's bundle, and release its outputs.

The notifier of a redundant plan sequences each bundle at a position of the plan's log and
pushes the record to its standbys. It may acknowledge the bundle to its client only once a
takeover could not lose it:
- every live standby holds the record (one that does not acknowledge it within
  `ack_timeout` is dropped, and must subscribe again); and
- when no standby holds it, some standby of this term may lack it (it is catching up, or its
  subscription ended), or the term has acknowledged nothing yet (standbys of earlier terms
  may think themselves able to take over too), a renewal of the notifier's lease sent after
  the bundle was appended must have raised the lease's requirement to the record (`Confirm`):
  the lease store then grants the lease only to a member that holds it, and a notifier
  deposed meanwhile (taken over while paused or cut off) finds its renewal refused;
- and the notifier's lease still holds on its own clock (the caller's `holds`).
A standby counts itself able to take over once it was told `live`, and a subscription that
ends keeps it so: it cannot know whether it was dropped. Hence `may_lack`.

Once the notifier stops (`close`), a bundle still settling is acknowledged only if every
standby that was in sync held it and the term's requirement covered it; else it is refused
and its client sends it again.

Pure logic: time comes in as arguments; the caller waits, drops, asks the lease store and
releases the outputs as `decide` says. Imports nothing of ours but `ha.ports`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ha.ports import LogPosition


@dataclass(eq=False)
class Standby:
    """One subscription of a standby to this notifier, in this term."""

    peer: str
    joined_at: int  # the notifier's position when it subscribed: in sync once it acknowledged it
    acked: int = 0
    live: bool = False  # told `live`: it counts itself able to take over from then on
    ready: bool = False  # it says it could take over (it holds what a takeover must deliver)
    gone: bool = False

    @property
    def in_sync(self) -> bool:
        return not self.gone and self.acked >= self.joined_at

    def may_lack(self, position: int) -> bool:
        """Whether it may count itself able to take over without holding `position`: the record
        was sent to it (it subscribed before) and it has not acknowledged it."""
        return self.joined_at < position and self.acked < position


@dataclass(frozen=True)
class Wait:
    """Live standbys have not acknowledged the record yet: ask again at `until` (seconds) or
    when an acknowledgement arrives."""

    until: float


@dataclass(frozen=True)
class Drop:
    """These standbys did not acknowledge in time: drop them (they subscribe again), then ask again."""

    standbys: tuple[Standby, ...]
    why: str


@dataclass(frozen=True)
class Confirm:
    """Renew the lease raising its requirement to `require` (or find a renewal sent since the
    bundle was appended that did); then `confirmed`."""

    require: LogPosition


@dataclass(frozen=True)
class Release:
    """Acknowledge the bundle, if the lease holds, and release its outputs."""


@dataclass(frozen=True)
class Refuse:
    """Do not acknowledge the bundle: its client sends it again."""

    why: str


Step = Wait | Drop | Confirm | Release | Refuse


@dataclass
class Acknowledgements:
    """The standbys of one plan this member notifies for, in one term."""

    plan: str
    ack_timeout: float = 1.0
    standbys: list[Standby] = field(default_factory=list)  # subscribed now
    of_term: list[Standby] = field(default_factory=list)  # every subscription of this term, ended ones too
    required: bool = False  # whether this term raised the lease's requirement yet
    closed: bool = False
    final: tuple[int, ...] = ()  # at close: what each standby in sync had acknowledged

    def again(self) -> Acknowledgements:
        """The rule for this term taken up again: its notifier stepped down (its lease lapsed on
        its own clock) and then renewed the same lease. Every standby of the term so far may
        count itself able to take over with what it had acknowledged, so each stays one that
        may lack what comes next until it subscribes again."""
        rule = Acknowledgements(self.plan, self.ack_timeout)
        rule.of_term = list(self.of_term)
        return rule

    def subscribed(self, peer: str, position: int) -> Standby:
        standby = Standby(peer, position)
        self.standbys = [*self.standbys, standby]
        self.of_term.append(standby)
        return standby

    def acknowledged(self, standby: Standby, position: int, ready: bool) -> None:
        standby.acked = max(standby.acked, position)
        standby.ready = ready
        # it was told `state` or `resume` first, which ended what its earlier subscriptions let it believe
        if any(s.peer == standby.peer and s is not standby for s in self.of_term):
            self.of_term = [s for s in self.of_term if s.peer != standby.peer or s is standby]

    def ended(self, standby: Standby) -> None:
        standby.gone = True
        self.standbys = [s for s in self.standbys if s is not standby]

    def close(self) -> None:
        """No longer the notifier: every subscription ends."""
        self.final = tuple(s.acked for s in self.standbys if s.in_sync)
        self.closed = True
        for standby in self.standbys:
            standby.gone = True

    def in_sync(self) -> list[str]:
        """The standbys that hold every record and could take over now."""
        return sorted({s.peer for s in self.standbys if s.in_sync and s.ready})

    def decide(self, position: int, started: float, now: float, log: LogPosition) -> Step:
        """What to do next for the bundle at `position`, appended at `started`; `log` is where
        the notifier's log stands (its term, its newest position)."""
        if self.closed:
            if (
                not self.final
                or any(acked < position for acked in self.final)
                or not self.required
                or any(s.may_lack(position) for s in self.of_term)
            ):
                return Refuse(
                    f"plan {self.plan}: this node stopped notifying before its standbys held the bundle"
                )
            return Release()
        lagging = tuple(s for s in self.standbys if s.live and not s.gone and s.acked < position)
        if lagging:
            deadline = started + self.ack_timeout
            if now < deadline:
                return Wait(deadline)
            return Drop(lagging, f"record {position} not acknowledged within {self.ack_timeout:.1f} s")
        held = any(s.in_sync and s.acked >= position for s in self.standbys)
        lacking = any(s.may_lack(position) for s in self.of_term)
        if held and not lacking and self.required:
            return Release()
        # one lease write may serve the bundles settling behind this one: require as much as
        # every live standby holds (with none, no other member holds any of it anyway)
        live = [s.acked for s in self.standbys if s.live and not s.gone]
        cover = max(position, min(live) if live else log.position)
        return Confirm(LogPosition(log.term, cover))

    def confirmed(self, ok: bool) -> Step:
        """The answer to `Confirm`: the lease's requirement covers the bundle, or not."""
        if not ok:
            return Refuse(
                f"plan {self.plan}: the bundle is not held by every standby and this node's lease is not confirmed"
            )
        self.required = True
        return Release()

    def drain_done(self, position: int) -> bool:
        """Whether every standby in sync holds `position` (a graceful hand-over waits for it)."""
        return not any(s.in_sync and s.acked < position for s in self.standbys)
