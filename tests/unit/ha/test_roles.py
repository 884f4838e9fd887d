"""A node's role for a redundant plan: who asks for the lease, when a standby takes over, when a
notifier moves the plan on, and that nobody asks before it has caught up."""

from __future__ import annotations

from ha.lease import Timing
from ha.placement import notifier
from ha.ports import Lease
from ha.roles import Action, Decision, PlanRole, Role, Situation, Transition

T = Timing(ttl_ms=2000, renew_ms=250, margin_ms=750)
NODES = ["a", "b"]
PLAN = next(f"plan-{n}" for n in range(100) if notifier(f"plan-{n}", NODES) == "a")  # a is preferred


def granted(holder: str, epoch: int = 1) -> Lease:
    return Lease(PLAN, holder, epoch, 2000)


def test_the_preferred_node_asks_notifies_while_it_holds_and_renews_every_interval() -> None:
    a = PlanRole(PLAN, "a", T)
    assert a.tick(0.0, NODES, caught_up=True).action is Action.ACQUIRE
    a.answered(0.0, granted("a"))
    decision = a.tick(0.1, NODES, caught_up=True)
    assert decision.role is Role.NOTIFIER and decision.action is Action.NOTHING
    assert a.tick(0.25, NODES, caught_up=True).action is Action.ACQUIRE


def test_nobody_asks_before_it_has_caught_up() -> None:
    a = PlanRole(PLAN, "a", T)
    assert a.tick(0.0, NODES, caught_up=False).action is Action.NOTHING


def test_a_standby_waits_while_the_notifier_lives_and_takes_over_when_it_is_gone() -> None:
    b = PlanRole(PLAN, "b", T)
    b.answered(0.0, granted("a"))  # told who holds it
    assert b.tick(0.5, NODES, caught_up=True).action is Action.NOTHING
    decision = b.tick(0.6, ["b"], caught_up=True)  # a dropped out of b's view (or its connection closed)
    assert (decision.role, decision.action) == (Role.STANDBY, Action.ACQUIRE)
    b.answered(0.6, granted("b", 2))
    assert b.tick(0.7, ["b"], caught_up=True).role is Role.NOTIFIER


def test_a_notifier_no_longer_preferred_releases_once_the_other_has_caught_up() -> None:
    b = PlanRole(PLAN, "b", T)
    b.answered(0.0, granted("b", 2))  # b took over while a was away; a is back and preferred
    assert b.tick(0.1, NODES, caught_up=True, others_caught_up=False).role is Role.NOTIFIER
    assert b.tick(0.2, NODES, caught_up=True, others_caught_up=True).action is Action.RELEASE
    b.released(0.2)
    assert b.tick(0.3, NODES, caught_up=True).role is Role.STANDBY
    assert b.tick(0.5, NODES, caught_up=True).action is Action.NOTHING  # a takes it now, not b
    assert b.tick(2.3, ["b"], caught_up=True).action is Action.ACQUIRE  # a never did: b takes it back


def test_a_notifier_that_cannot_renew_steps_down_on_its_own() -> None:
    a = PlanRole(PLAN, "a", T)
    a.answered(0.0, granted("a"))
    for t in (0.25, 0.5, 0.75, 1.0):
        a.answered(t, None)  # the registry is unreachable
    assert a.tick(1.2, NODES, caught_up=True).role is Role.NOTIFIER
    assert a.tick(1.3, NODES, caught_up=True).role is Role.STANDBY


def test_a_lease_the_store_says_expired_is_asked_for_even_with_its_holder_alive() -> None:
    b = PlanRole(PLAN, "b", T)
    b.answered(0.0, granted("a"))
    assert b.tick(0.5, NODES, caught_up=True).action is Action.NOTHING  # a holds it and is alive
    b.lease = Lease(PLAN, "a", 1, 0)  # a is cut off from the store: its lease ran out there
    assert b.tick(0.6, NODES, caught_up=True).action is Action.ACQUIRE


def test_a_member_that_came_back_gets_the_plan_only_after_failback_in_a_row() -> None:
    b = PlanRole(PLAN, "b", T, failback_s=5.0)
    b.answered(0.0, granted("b", 2))  # b took over while a was away; a is back and preferred
    for t in (0.1, 0.2):
        b.answered(t, granted("b", 2))
        assert b.tick(t, NODES, caught_up=True).role is Role.NOTIFIER
    b.answered(0.3, granted("b", 2))
    assert b.tick(0.3, ["b"], caught_up=True).role is Role.NOTIFIER  # a gone again: the wait starts over
    t = 0.4
    while t < 5.4:
        b.answered(t, granted("b", 2))
        assert b.tick(t, NODES, caught_up=True).action is not Action.RELEASE, t
        t = round(t + 0.2, 1)
    assert b.tick(5.45, NODES, caught_up=True).action is Action.RELEASE


def test_an_operators_move_hands_over_at_once_whatever_the_failback() -> None:
    b = PlanRole(PLAN, "b", T, failback_s=60.0)
    b.answered(0.0, granted("b", 2))
    assert b.tick(0.1, NODES, caught_up=True, pinned={PLAN: "a"}).action is Action.RELEASE


def test_a_lease_its_holder_gave_up_is_asked_for_at_once_not_a_renewal_later() -> None:
    a = PlanRole(PLAN, "a", T)  # preferred, but b kept the plan (failback) and a asked in vain
    a.answered(0.0, granted("b", 2))
    assert a.tick(0.1, NODES, caught_up=True).action is Action.NOTHING  # asked 0.1 s ago, b holds it
    a.lease = Lease(PLAN, "b", 2, 0)  # b released it on a graceful stop
    assert a.tick(0.1, NODES, caught_up=True).action is Action.ACQUIRE


def situation(now: float, alive: list[str], **kw: object) -> Situation:
    base: dict[str, object] = {
        "now": now,
        "alive": alive,
        "dead": {},
        "draining": (),
        "pins": {},
        "settled": True,
        "followed": True,
        "caught_up": True,
        "in_sync": (),
    }
    base.update(kw)
    return Situation(**base)  # type: ignore[arg-type]


def test_a_round_takes_the_lease_over_only_from_a_holder_whose_process_died() -> None:
    b = PlanRole(PLAN, "b", T)
    b.answered(0.0, granted("a", 4))
    silent = b.round(situation(0.6, ["b"]))  # a is out of b's view: asked for, not taken over
    assert silent is not None and silent.action is Action.ACQUIRE and silent.take_over is None
    b2 = PlanRole(PLAN, "b", T)
    b2.answered(0.0, granted("a", 4))
    died = b2.round(situation(0.6, ["b"], dead={"a": 0.5}))
    assert died is not None and died.take_over == ("a", 4)


def test_a_round_waits_until_the_view_counts_unless_the_notifier_is_followed() -> None:
    b = PlanRole(PLAN, "b", T)
    assert b.round(situation(0.1, ["b"], settled=False, followed=False)) is None
    assert b.round(situation(0.1, ["b"], settled=False, followed=True)) is not None


def test_a_draining_member_hands_its_plans_to_the_best_other_member() -> None:
    a = PlanRole(PLAN, "a", T)
    a.answered(0.0, granted("a"))
    turn = a.round(situation(0.1, NODES, draining={"a"}, in_sync={"b"}))
    assert turn is not None and turn.preferred == "b" and turn.action is Action.RELEASE


def test_after_the_answer_a_node_takes_over_steps_down_or_starts_a_new_term() -> None:
    a = PlanRole(PLAN, "a", T)
    a.answered(0.0, granted("a", 5))
    notifying = Decision(Role.NOTIFIER, Action.NOTHING)
    assert a.transition(0.1, notifying, epoch=0) is Transition.TAKE_OVER
    assert a.transition(0.1, notifying, epoch=5) is Transition.NONE
    assert a.transition(0.1, notifying, epoch=4) is Transition.NEW_TERM
    assert a.transition(0.1, Decision(Role.STANDBY, Action.RELEASE), epoch=5) is Transition.STEP_DOWN
    assert a.transition(5.0, notifying, epoch=5) is Transition.STEP_DOWN  # its lease ran out


def test_a_death_seen_before_the_lease_is_no_ground_to_take_that_lease_over_early() -> None:
    """A member died (its connection closed, its port refused) and came back while cut off:
    the lease its new process took is no dead process's; it is taken only once it expires."""
    b = PlanRole(PLAN, "b", T)
    b.saw(granted("a", 3), 5.0)  # first seen at 5.0, after a's death was seen at 4.0
    turn = b.round(situation(5.1, ["b"], dead={"a": 4.0}))
    assert turn is not None and turn.action is Action.ACQUIRE and turn.take_over is None
    b.saw(granted("a", 3), 6.0)  # the same lease again: still first seen at 5.0
    turn = b.round(situation(6.5, ["b"], dead={"a": 6.2}))  # a's process died at 6.2
    assert turn is not None and turn.take_over == ("a", 3)


def test_a_member_whose_gate_does_not_vouch_for_its_outputs_never_asks_for_the_lease() -> None:
    """Not for a lease never granted, nor for one it held: a standby mid-join from a snapshot
    lacks the outputs the notifier carries after it."""
    fresh = PlanRole(PLAN, "a", T)
    assert fresh.round(situation(0.1, ["a"], vouches=False)).action is Action.NOTHING  # type: ignore[union-attr]
    assert fresh.round(situation(0.2, ["a"])).action is Action.ACQUIRE  # type: ignore[union-attr]
    own = PlanRole(PLAN, "a", T)
    own.answered(0.0, granted("a", 3))
    own.declined(0.1)
    assert not own.holder.holds(0.2)
    assert own.round(situation(0.3, ["a"], vouches=False)).action is Action.NOTHING  # type: ignore[union-attr]
