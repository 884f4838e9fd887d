"""A member's seat for a redundant plan: its term, when an acknowledgement needs the lease
renewed first, when it reads who holds the lease, and what it does with written outputs."""

from __future__ import annotations

from ha.acks import Confirm, Release
from ha.lease import Timing
from ha.ports import Lease, LogPosition
from ha.roles import Action, Decision, Role, Transition
from ha.seat import PlanSeat, Report

T = Timing(ttl_ms=2000, renew_ms=250, margin_ms=750)
ASKED = Decision(Role.STANDBY, Action.ACQUIRE)


def lease(holder: str, epoch: int = 1, ttl_ms: int = 2000, required: LogPosition | None = None) -> Lease:
    return Lease("p", holder, epoch, ttl_ms, required)


def notifying(at: float = 0.0, epoch: int = 1, fenced: int = 0) -> PlanSeat:
    seat = PlanSeat("p", "a", T)
    assert seat.answered(at, lease("a", epoch), at, ASKED) is Transition.TAKE_OVER
    assert seat.took_over(fenced) == epoch
    return seat


def test_a_granted_lease_starts_a_term_and_a_lapsed_one_ends_it() -> None:
    seat = notifying(epoch=3)
    assert seat.epoch == 3 and seat.holds(1.0)
    assert (
        seat.transition(1.3, Decision(Role.STANDBY, Action.NOTHING)) is Transition.STEP_DOWN
    )  # 2 s - 0.75 s
    seat.stepped_down()
    assert seat.epoch == 0


def test_an_acknowledgement_waits_for_a_renewal_sent_after_it_started_that_requires_its_record() -> None:
    seat = notifying()
    need = LogPosition(1, 10)
    assert seat.needs_confirmation(0.5, need)
    assert seat.renewed(0.6, lease("a", required=LogPosition(1, 12)), 1, need)
    assert not seat.needs_confirmation(0.5, need)  # that renewal serves every bundle waiting since before it
    assert not seat.needs_confirmation(0.6, LogPosition(1, 12))
    assert seat.needs_confirmation(0.7, need), (
        "a bundle that started after the renewal was sent needs its own"
    )
    assert seat.needs_confirmation(0.5, LogPosition(1, 13)), "nor does it cover more than it required"


def test_a_renewal_confirms_nothing_when_the_store_names_another_term_or_requires_too_little() -> None:
    seat = notifying(epoch=2)
    need = LogPosition(2, 5)
    assert not seat.renewed(0.5, None, 2, need)  # no answer
    assert not seat.renewed(0.5, lease("b", 3, required=need), 2, need)
    assert not seat.renewed(0.5, lease("a", 4, required=need), 2, need)  # granted anew: not this term
    assert not seat.renewed(0.5, lease("a", 2, required=LogPosition(2, 4)), 2, need)
    assert seat.needs_confirmation(0.0, need)
    assert seat.renewed(0.5, lease("a", 2, required=LogPosition(2, 5)), 2, need)


def test_a_new_term_requires_nothing_until_its_own_renewals_do() -> None:
    seat = notifying()
    assert seat.renewed(0.2, lease("a", required=LogPosition(1, 9)), 1, LogPosition(1, 9))
    seat.stepped_down()
    assert seat.answered(3.0, lease("a", 2), 3.0, ASKED) is Transition.TAKE_OVER
    seat.took_over(0)
    assert seat.needs_confirmation(0.0, LogPosition(1, 1))


def test_written_outputs_are_trimmed_only_while_no_fence_refused_one_this_term() -> None:
    seat = notifying(fenced=4)  # refusals of an earlier term do not count
    assert seat.report(4, 0.5) is Report.TRIM
    seat.role.holder.step_down()  # its lease lapsed on its own clock
    assert seat.report(5, 0.6) is Report.WAIT, "the next notifier delivers what the standbys hold"
    assert seat.report(5, 0.7) is Report.WAIT
    seat.role.answered(0.8, lease("a"))  # it holds the lease again
    assert seat.report(5, 0.9) is Report.REDELIVER  # no next notifier will: this one delivers again
    assert seat.report(5, 1.0) is Report.TRIM, "refusals are counted again from the redelivery"


def test_a_standby_reads_the_lease_every_renewal_and_closely_after_the_stream_ended() -> None:
    seat = PlanSeat("p", "b", T)
    assert seat.must_look_up and seat.lookup_due(0.0, None)
    seat.looked_up_at(0.0, lease("a"))
    assert not seat.must_look_up and seat.notifier == "a"
    assert not seat.lookup_due(0.1, None) and seat.lookup_due(0.25, None)
    assert seat.lookup_due(0.06, stream_ended_at=0.05), "every 50 ms after the notifier's stream ended"
    seat.stream_ended()
    assert seat.must_look_up
    seat.looked_up_at(0.3, lease("c", 2))
    assert seat.notifier == "c"
    seat.looked_up_at(0.6, lease("a", 3))
    assert seat.notifier == "a" and not seat.must_look_up


def test_its_own_lease_is_read_at_once_while_it_has_time_left_and_at_the_usual_pace_once_given_back() -> None:
    seat = PlanSeat("p", "b", T)
    seat.looked_up_at(0.0, lease("b", 4))  # it stepped down: another member may hold it by now
    assert seat.lookup_due(0.01, None)
    seat.looked_up_at(0.02, lease("b", 4, ttl_ms=0))  # it gave the lease back, and no one took it
    assert not seat.lookup_due(0.1, None) and seat.lookup_due(0.3, None)


def test_a_requirement_this_member_cannot_cover_is_said_once_and_only_when_the_lease_is_free() -> None:
    seat = PlanSeat("p", "b", T)
    held = LogPosition(1, 3)
    needs = lease("a", ttl_ms=2000, required=LogPosition(1, 5))
    assert not seat.newly_ineligible(
        needs, held, holder_dead=False
    )  # held by a live member: not ours to take
    assert seat.newly_ineligible(needs, held, holder_dead=True)
    assert not seat.newly_ineligible(needs, held, holder_dead=True)
    expired = lease("a", ttl_ms=0, required=LogPosition(1, 6))
    assert seat.newly_ineligible(expired, held, holder_dead=False)
    assert not seat.newly_ineligible(lease("a", ttl_ms=0, required=LogPosition(1, 3)), held, holder_dead=True)


def test_a_term_taken_up_again_keeps_its_standbys_as_ones_that_may_lack_what_comes_next() -> None:
    seat = notifying()
    first = seat.acknowledgements(1)
    b = first.subscribed("b", 0)
    b.live = True
    first.acknowledged(b, 5, ready=True)
    first.close()  # the lease lapsed on this member's clock; it renewed the same one
    again = seat.acknowledgements(1)
    c = again.subscribed("c", 5)
    c.live = True
    again.acknowledged(c, 7, ready=True)
    assert again.confirmed(True) == Release()  # the term's first acknowledgement raised the requirement
    assert again.decide(7, 0.0, 0.0, LogPosition(1, 7)) == Confirm(LogPosition(1, 7)), (
        "b counts itself able to take over with position 5: the requirement must pass it first"
    )
    fresh = seat.acknowledgements(2)  # a new epoch: no log of an earlier term covers its requirement
    d = fresh.subscribed("c", 5)
    d.live = True
    fresh.acknowledged(d, 7, ready=True)
    fresh.confirmed(True)
    assert fresh.decide(7, 0.0, 0.0, LogPosition(2, 7)) == Release()


def test_a_tail_of_records_refused_after_they_were_appended_is_settled_once_it_stays_unreleased() -> None:
    seat = notifying()
    assert seat.tail_to_settle(released=5, appended=8, settling=False) is None  # first seen
    assert seat.tail_to_settle(released=5, appended=8, settling=True) is None  # a client's settle may do it
    assert seat.tail_to_settle(released=5, appended=8, settling=False) == 8  # a round later, still stuck
    assert seat.tail_to_settle(released=8, appended=8, settling=False) is None
    assert seat.tail_to_settle(released=8, appended=9, settling=False) is None, "a new record: wait a round"


def test_a_standby_granted_the_lease_with_a_gate_that_does_not_vouch_gives_it_back() -> None:
    seat = PlanSeat("p", "a", T)
    assert seat.answered(0.0, lease("a", 2), 0.0, ASKED) is Transition.TAKE_OVER
    assert seat.takes_over(complete=True, now=0.01)
    assert seat.holds(0.02)
    assert not seat.takes_over(complete=False, now=0.03)
    assert not seat.holds(0.04) and seat.epoch == 0


def test_a_standby_granted_the_lease_while_its_follower_still_applies_the_old_stream_gives_it_back() -> None:
    seat = PlanSeat("p", "a", T)
    assert seat.answered(0.0, lease("a", 2), 0.0, ASKED) is Transition.TAKE_OVER
    assert not seat.takes_over(complete=True, now=0.01, follower_ended=False)
    assert not seat.holds(0.02) and seat.epoch == 0


def test_a_join_is_left_once_the_lease_names_another_notifier_and_a_live_stream_never_is() -> None:
    seat = PlanSeat("p", "b", T)
    assert seat.notifier_term is None
    seat.looked_up_at(0.0, lease("a", 3))
    joined_under = seat.notifier_term
    assert joined_under == ("a", 3)
    assert not seat.leaves_join(joined_under, live=False)
    seat.looked_up_at(0.3, lease("c", 4))  # a's host vanished mid-join; c took over
    assert seat.leaves_join(joined_under, live=False)
    assert not seat.leaves_join(joined_under, live=True), "a live stream hears of the change itself"
    seat.looked_up_at(0.6, lease("a", 5))  # the same member, another term
    assert seat.leaves_join(joined_under, live=False)
    seat.looked_up_at(0.9, lease("b", 6))  # this member: its takeover stops the follower
    assert not seat.leaves_join(joined_under, live=False)
    assert not seat.leaves_join(None, live=False)


def test_a_new_notifier_delivers_what_it_inherited_only_after_settling_its_log() -> None:
    seat = notifying()
    assert seat.takeover_delivery(after=7, delivered=3, taken_through=0) == (0, 7)
    assert seat.takeover_delivery(after=7, delivered=7, taken_through=0) == (0, 0)  # all written
    assert seat.takeover_delivery(after=7, delivered=7, taken_through=9) == (0, 9)  # copies waiting
