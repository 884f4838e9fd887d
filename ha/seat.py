"""`PlanSeat`: one member's seat for one redundant plan, the decisions between its role rounds
and its term that the node (`app.cluster.member`) and the HA simulator (`tests/sim/member.py`)
both take, so the simulator checks the code the node runs.

A seat keeps `ha.roles.PlanRole` and what the member concluded from the lease store's answers:
- the term it notifies under (`epoch`, 0 as a standby), and what that term's renewals made the
  lease require (`required`: a bundle whose acknowledgement needs the lease to require more asks
  the store, `needs_confirmation`/`renewed`);
- when it last read who holds the lease, and whether it is due to read it again (a standby
  reads it every renewal, closely after the notifier's stream ended: `ha.lease`);
- the fence refusals counted when its term began, which decide whether it may tell the standbys
  that outputs are written (`report`): a refused output may have been released long before, so
  while any is refused the next notifier must still deliver what the standbys hold; unless this
  member holds the lease again, when it delivers everything not known written again itself;
- the requirement it last found it could not cover (`ineligible`), so that is said once.

Pure logic: time, the lease store's answers and the adapters' counts come in as arguments.
Imports `ha.acks`, `ha.lease`, `ha.ports` and `ha.roles` only.
"""

from __future__ import annotations

import enum

from ha.acks import Acknowledgements
from ha.lease import Timing, lease_lookup_interval
from ha.ports import Lease, LogPosition
from ha.roles import Decision, PlanRole, Round, Situation, Transition


class Report(enum.StrEnum):
    """What a notifier does with the outputs its adapters wrote."""

    TRIM = "trim"  # every one released is written: the standbys may forget them
    REDELIVER = "redeliver"  # the fence refused some while its lease lapsed, and it holds it again
    WAIT = "wait"  # refused while another may notify: the next notifier delivers them


class PlanSeat:
    """Member `node`'s seat for plan `plan`."""

    def __init__(self, plan: str, node: str, timing: Timing, failback_s: float = 0.0) -> None:
        self.plan = plan
        self.node = node
        self.timing = timing
        self.role = PlanRole(plan, node, timing, failback_s)
        self.epoch = 0  # of the lease this member notifies under (0: standby)
        self.preferred: str | None = None  # the member placement names notifier, in this member's view
        self.looked_up: float | None = (
            None  # when the store was last asked who holds the lease (None: ask now)
        )
        self.confirmed_at = 0.0  # when the last renewal that confirmed this member's lease was sent
        self.required: LogPosition | None = None  # what its renewals made the lease require, this term
        self.ineligible: LogPosition | None = None  # the requirement last found not covered here
        self.fenced_at_takeover = 0  # the adapters' count of fence refusals when its term began
        self._rule: Acknowledgements | None = None  # of the last term it notified in
        self._tail = (0, 0)  # (released, appended) when the last watermark round looked
        self._rule_epoch = 0

    # ---- who holds the lease ------------------------------------------------------------------

    @property
    def must_look_up(self) -> bool:
        """Whether the round must first read the lease: never read, or the notifier's stream ended."""
        return self.role.lease is None or self.looked_up is None

    def lookup_due(self, now: float, stream_ended_at: float | None) -> bool:
        lease = self.role.lease
        every = lease_lookup_interval(self.timing.renew_ms / 1000, now, stream_ended_at)
        # its own lease with time left: another member may have it by now (this one stepped
        # down); its own released or expired lease is read at the usual pace (one it gave back
        # with no other member able to take it would be read 20 times a second for good)
        if lease is None or self.looked_up is None or (lease.holder == self.node and lease.ttl_ms > 0):
            return True
        return now - self.looked_up >= every

    def looked_up_at(self, now: float, lease: Lease | None) -> None:
        """The store said, when asked at `now`, that `lease` holds (None: it was never granted)."""
        self.looked_up = now
        if lease is not None:
            self.role.saw(lease, now)

    def stream_ended(self) -> None:
        """The notifier's stream to this standby ended: read the lease at the next round."""
        self.looked_up = None

    @property
    def notifier(self) -> str | None:
        """The other member that holds the lease, by what the store said last."""
        term = self.notifier_term
        return None if term is None else term[0]

    @property
    def notifier_term(self) -> tuple[str, int] | None:
        """(holder, epoch) of the other member's lease, by what the store said last: what a
        standby subscribes under (`leaves_join`)."""
        lease = self.role.lease
        return None if lease is None or lease.holder == self.node else (lease.holder, lease.epoch)

    def leaves_join(self, joined_under: tuple[str, int] | None, live: bool) -> bool:
        """Whether a standby leaves a subscription that is not live yet, made while the lease
        named `joined_under`: the store has since named another holder or epoch, so the member
        it joins was deposed. A join hears no expiry from its stream, and one joining a
        notifier whose host vanished would otherwise wait out its silence deadline (10 s) while
        the new notifier's clients (in full-active-active, this standby's as well) wait."""
        if live or joined_under is None:
            return False
        lease = self.role.lease
        return lease is not None and lease.holder != self.node and (lease.holder, lease.epoch) != joined_under

    def caught_up(self, streamed: bool, complete: bool, held: LogPosition) -> bool:
        """Whether this member may ask for the lease when it is free: its gate holds every output
        not known written (`complete`), and its log holds every record acknowledged, as far as it
        can tell: it followed the notifier's live stream (`streamed`: live, or live when the
        stream ended), or its log (`held`) covers what the lease last required. The store grants
        the lease only to a log that covers its requirement at that moment, so asking on a stale
        view costs a refusal, never a record."""
        if not complete:
            return False
        lease = self.role.lease
        return streamed or lease is None or held.covers(lease.required)

    # ---- role rounds --------------------------------------------------------------------------

    def round(self, situation: Situation) -> Round | None:
        turn = self.role.round(situation)
        if turn is not None:
            self.preferred = turn.preferred
        return turn

    def answered(self, sent: float, lease: Lease | None, now: float, decision: Decision) -> Transition:
        """The store answered the round's request sent at `sent` (None: no answer); what to do."""
        self.role.answered(sent, lease)
        if lease is not None and lease.holder == self.node and self.epoch and lease.epoch == self.epoch:
            self.confirmed_at = max(self.confirmed_at, sent)
        return self.transition(now, decision)

    def transition(self, now: float, decision: Decision) -> Transition:
        return self.role.transition(now, decision, self.epoch)

    def holds(self, now: float) -> bool:
        return self.role.holder.holds(now)

    def takes_over(self, complete: bool, now: float, follower_ended: bool = True) -> bool:
        """Granted the lease as a standby (`Transition.TAKE_OVER`): whether to notify. Not while
        its follower, told to stop, still applies what the old notifier sent
        (`follower_ended` False: a large state being installed, a stalled disk): it would write
        into the log and state this member notifies from. Not when
        its gate can no longer vouch for every output not known written (`complete`): a state
        the follower installed while the lease was being asked for replaced the outputs it held,
        and those the notifier carries after a state have not all arrived. Delivering from such
        a gate would skip outputs of acknowledged records for good (the old notifier, joining
        back from this member's state, forgets them too). It gives the lease back at once, so
        a member that holds them may take it, and asks again once its gate is whole."""
        if complete and follower_ended:
            return True
        self.role.declined(now)
        return False

    def took_over(self, fenced: int) -> int:
        """This member notifies from now on, its adapters having met `fenced` refusals; the epoch."""
        epoch = self.role.holder.epoch
        assert epoch is not None, "a member takes over only once granted a lease"
        self.epoch = epoch
        self.required = None  # this term has required nothing yet
        self.fenced_at_takeover = fenced
        return epoch

    def acknowledgements(self, epoch: int, ack_timeout: float = 1.0) -> Acknowledgements:
        """The acknowledgement rule of a term starting under `epoch`: a new one, or, when this
        member notified under the same epoch before (its lease lapsed on its own clock and it
        renewed the same lease), that term's, taken up again (`Acknowledgements.again`): a
        standby of the term may still count itself able to take over with what it held then."""
        last = self._rule
        if last is not None and self._rule_epoch == epoch:
            rule = last.again()
        else:
            rule = Acknowledgements(self.plan, ack_timeout)
        self._rule, self._rule_epoch = rule, epoch
        return rule

    def stepped_down(self) -> None:
        self.epoch = 0

    def released(self, now: float) -> None:
        """It gave the lease up for the preferred member (a hand-over)."""
        self.role.released(now)

    # ---- acknowledgements that need the lease to require more ------------------------------

    def needs_confirmation(self, since: float, require: LogPosition) -> bool:
        """Whether no renewal sent at `since` or later has made the lease require `require` yet."""
        required = self.required
        return not (self.confirmed_at >= since and required is not None and required.covers(require))

    def renewed(self, sent: float, lease: Lease | None, epoch: int, require: LogPosition) -> bool:
        """A renewal sent at `sent`, asking the lease of `epoch` to require `require`, got `lease`
        (None: no answer); whether it confirmed both."""
        self.role.answered(sent, lease)
        if lease is None or lease.holder != self.node or lease.epoch != epoch or lease.required is None:
            return False
        if not lease.required.covers(require):
            return False
        self.confirmed_at = sent
        self.required = lease.required
        return True

    def newly_ineligible(self, lease: Lease | None, held: LogPosition, holder_dead: bool) -> bool:
        """Whether to say that the lease, free to take (expired, or its holder dead), requires
        more of the plan's log than this member holds (`held`): once per requirement."""
        if lease is None or lease.holder == self.node or held.covers(lease.required):
            return False
        if lease.required == self.ineligible or not (lease.ttl_ms <= 0 or holder_dead):
            return False
        self.ineligible = lease.required
        return True

    # ---- outputs written ------------------------------------------------------------------------

    def takeover_delivery(self, after: int, delivered: int, taken_through: int) -> tuple[int, int]:
        """What a new notifier delivers as it takes over, its log at `after`, outputs known
        written through `delivered`, full-active-active copies it sequenced (or found sent)
        waiting through `taken_through` (0: none): `(through, tail)`, the position through which
        it delivers what its gate holds at once (`OutputGate.open`), and the one it then settles
        with no client waiting (0: none).

        It delivers none of what it holds at once: the old notifier may never have acknowledged
        those records, so the lease need not require them, and a member lacking them could be
        granted it next; if that member then processed the client's resend under its own log,
        the sink would get the outputs twice, under other origins. Settling the tail first makes
        the lease require the whole log (a term's first settle confirms), then releases every
        output up to it (and answers the clients of the copies waiting)."""
        return 0, max(after if after > delivered else 0, taken_through)

    def tail_to_settle(self, released: int, appended: int, settling: bool) -> int | None:
        """The position a notifier settles on its own (None: none now), asked once a watermark
        round. A record refused after it was appended (its lease could not be confirmed) keeps
        its outputs in the gate, unreleased, until a later record is settled; with none to come
        (its client's resend refused too, for want of room in that very gate) they would hold
        the gate, and the plan, forever. So when the newest record has stayed unreleased for a
        whole round with nothing settling, the notifier settles it itself: its outputs go out
        once the rule allows, as a takeover would deliver them (the record is in the log)."""
        stuck = (released, appended)
        seen, self._tail = self._tail, stuck
        if released >= appended or settling or seen != stuck:
            return None
        return appended

    def report(self, fenced: int, now: float) -> Report:
        """Every output released before the adapters were last flushed is written, and they have
        met `fenced` refusals in all: what to do."""
        if fenced == self.fenced_at_takeover:
            return Report.TRIM
        if self.holds(now):
            self.fenced_at_takeover = fenced
            return Report.REDELIVER
        return Report.WAIT
