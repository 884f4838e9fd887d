"""`PlanRole`: one node's role for one redundant plan, and what it should do next.

Driven by ticks: each tick brings the membership view (`alive`), whether this node has caught
up with the plan's input, and the answer to the last lease request. The rules:
- a node asks for the lease when placement names it notifier, when the lease's holder is
  not alive in its view (takeover: a dead notifier's lease is taken as soon as it expires,
  and a closed connection makes it dead at once), or when the store says the lease expired
  (a holder alive but cut off from the store), but never before it has caught up;
- it notifies only while `ha.lease.Holder` says the lease holds;
- a notifier that placement no longer names (a member came back, an operator moved the plan)
  releases the lease once the preferred member has caught up, so the move costs no gap, and
  leaves it to that member for a lease's time; a member that came back gets its plans only
  after placement has named it for `failback_s` without a break (an operator's move is at
  once), so a member that pauses or restarts again and again does not drag its plans along;
- a node that does not hold the lease is a standby: it processes the plan's input and keeps
  its outputs for a takeover, but writes nothing.
Views may disagree during a partition: then two nodes may both ask, and the store grants one.

`round` takes one role round as a member runs it (`app.cluster.member`): the drain and pin
policy, whether to ask the store for the lease with `acquire` or `take_over`, or to release
it; `transition` says, after the store's answer, whether this node takes over, steps down, or
starts a new term.

Pure logic. Imports `ha.lease`, `ha.placement` and `ha.ports` only.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from ha.lease import Holder, Timing
from ha.placement import notifier, ranking
from ha.ports import Lease

ORPHANED_ASK_S = 0.05  # how often a lease whose holder left (or did not renew it) is asked for


class Role(enum.StrEnum):
    STANDBY = "standby"
    NOTIFIER = "notifier"


class Action(enum.StrEnum):
    ACQUIRE = "acquire"  # ask the store for (or to renew) the lease
    RELEASE = "release"  # give the lease up now (a move); the next holder takes over at once
    NOTHING = "nothing"


class Transition(enum.StrEnum):
    TAKE_OVER = "take over"  # this node notifies from now on
    STEP_DOWN = "step down"  # this node no longer notifies
    NEW_TERM = "new term"  # it still notifies, under a new epoch: step down, then take over
    NONE = "none"


@dataclass(frozen=True)
class Decision:
    role: Role
    action: Action


@dataclass(frozen=True)
class Situation:
    """What a member knows when it takes a role round for a plan."""

    now: float
    alive: Collection[str]  # members alive in its view, itself included
    dead: Mapping[str, float]  # members whose process is known to have died, and since when
    draining: Collection[str]  # members an operator is draining
    pins: Mapping[str, str]  # plan → the member an operator pinned it to
    settled: bool  # it has heard from the others long enough for its view to count
    followed: bool  # its subscription to the notifier is (or was, when it ended) live
    caught_up: bool  # it holds every record the notifier acknowledged, and the outputs to deliver
    in_sync: Collection[str]  # as notifier: the standbys that could take over now
    # its gate holds every output not known written: without that it never asks for the lease,
    # not even one it held or one never granted (a standby joining from a snapshot, mid-join)
    vouches: bool = True


@dataclass(frozen=True)
class Round:
    """What one role round decided: `action`, and for `ACQUIRE` whether to take the lease
    over from `take_over` (holder, epoch) whose process died, before it expires."""

    decision: Decision
    preferred: str | None  # the member placement names notifier
    take_over: tuple[str, int] | None = None

    @property
    def action(self) -> Action:
        return self.decision.action


class PlanRole:
    """This node's (`node`) role for plan `plan`."""

    def __init__(self, plan: str, node: str, timing: Timing, failback_s: float = 0.0) -> None:
        self.plan = plan
        self.node = node
        self.holder = Holder(node, timing)
        self.failback_s = failback_s
        self.lease: Lease | None = None  # the store's last answer, whoever holds it
        self._lease_since = 0.0  # when this node first saw the lease's current holder and epoch
        self._yielded_at: float | None = None
        self._other_preferred: tuple[str, float] | None = None  # (member, since) while holding

    def answered(self, sent: float, lease: Lease | None) -> None:
        """The store answered a request sent at `sent` (None: it did not answer)."""
        if lease is not None:
            self.saw(lease, sent)
        self.holder.asked(sent, lease)

    def saw(self, lease: Lease, now: float) -> None:
        """The store says `lease` (an answer, or a look-up made at `now`)."""
        known = self.lease
        if known is None or (known.holder, known.epoch) != (lease.holder, lease.epoch):
            self._lease_since = now
        self.lease = lease

    def released(self, now: float) -> None:
        """This node gave the lease up at `now` for the preferred member to take: it does not ask
        for it again for a lease's time unless placement names it again."""
        self.holder.step_down(now)
        self.lease = None
        self._yielded_at = now

    def tick(
        self,
        now: float,
        alive: Iterable[str],
        caught_up: bool,
        pinned: Mapping[str, str] | None = None,
        others_caught_up: bool = True,
    ) -> Decision:
        members = sorted(set(alive) | {self.node})
        holds = self.holder.holds(now)
        role = Role.NOTIFIER if holds else Role.STANDBY
        preferred = notifier(self.plan, members, pinned)
        if holds and preferred != self.node:
            if self._hand_over(now, preferred, pinned) and others_caught_up:
                return Decision(Role.STANDBY, Action.RELEASE)
        else:
            self._other_preferred = None
        if holds:
            return Decision(role, Action.ACQUIRE if self.holder.due(now) else Action.NOTHING)
        if not caught_up:
            return Decision(role, Action.NOTHING)
        yielded = self._yielded_at is not None and now - self._yielded_at < self.holder.timing.ttl_ms / 1000
        if yielded and preferred != self.node:
            return Decision(role, Action.NOTHING)  # the member it yielded to takes the lease now
        holder = self.lease.holder if self.lease is not None else None
        expired = self.lease is not None and self.lease.ttl_ms <= 0  # its holder did not renew it
        orphaned = holder is None or holder == self.node or holder not in members or expired
        if orphaned and self.holder.due(now, ORPHANED_ASK_S):  # its holder left: take it now
            return Decision(role, Action.ACQUIRE)
        if preferred == self.node and self.holder.due(now):
            return Decision(role, Action.ACQUIRE)
        return Decision(role, Action.NOTHING)

    def round(self, s: Situation) -> Round | None:
        """One role round; None while the others have not been heard from long enough for this
        member's view to count (unless it follows a live notifier)."""
        if not s.settled and not s.followed:
            return None
        candidates = [m for m in s.alive if m not in s.draining or m == self.node]
        pinned = dict(s.pins)
        if self.node in s.draining:  # hand every plan to the best other member
            others = [m for m in candidates if m != self.node]
            if others and pinned.get(self.plan) not in others:
                pinned[self.plan] = ranking(self.plan, others)[0]
        known = self.lease
        caught_up = s.vouches and (s.caught_up or known is None or known.holder == self.node)
        preferred = notifier(self.plan, sorted({*candidates, self.node}), pinned)
        decision = self.tick(s.now, candidates, caught_up, pinned, others_caught_up=preferred in s.in_sync)
        take_over = None
        if decision.action is Action.ACQUIRE and known is not None and known.holder != self.node:
            # early only from the process that held this lease: a death seen before this node
            # first saw the lease may be an earlier process's, the lease its successor's
            died = s.dead.get(known.holder)
            if died is not None and died >= self._lease_since:
                take_over = (known.holder, known.epoch)
        return Round(decision, preferred, take_over)

    def declined(self, now: float) -> None:
        """Granted the lease, this node gives it back at once (`ha.seat.PlanSeat.takes_over`)."""
        self.holder.step_down(now)

    def transition(self, now: float, decision: Decision, epoch: int) -> Transition:
        """After the round's lease request: what this node, notifying under `epoch` (0: not),
        does now."""
        holds = self.holder.holds(now)
        if holds and epoch and self.holder.epoch != epoch:
            return Transition.NEW_TERM  # granted anew under another epoch (it had expired)
        if holds and not epoch:
            return Transition.TAKE_OVER
        if epoch and (not holds or decision.role is Role.STANDBY):
            return Transition.STEP_DOWN
        return Transition.NONE

    def _hand_over(self, now: float, preferred: str | None, pinned: Mapping[str, str] | None) -> bool:
        """Whether to give the lease to `preferred` now: an operator's move at once, a member
        that came back once placement has named it for `failback_s` in a row."""
        if preferred is None:
            return False
        if (pinned or {}).get(self.plan) == preferred:
            return True
        if self._other_preferred is None or self._other_preferred[0] != preferred:
            self._other_preferred = (preferred, now)
        return now - self._other_preferred[1] >= self.failback_s
