"""Notifier placement: every node with the same view picks the same member; plans spread;
a member leaving moves only its own plans; an operator's pin wins while its member lives."""

from __future__ import annotations

from collections import Counter

from ha.placement import notifier, ranking

PLANS = [f"plan-{n}" for n in range(600)]
MEMBERS = ["node-a:4000", "node-b:4001", "node-c:4002"]


def test_the_same_view_gives_the_same_notifier_in_any_order() -> None:
    for plan in PLANS[:50]:
        assert notifier(plan, MEMBERS) == notifier(plan, reversed(MEMBERS)) == ranking(plan, MEMBERS)[0]


def test_plans_spread_over_the_members() -> None:
    counts = Counter(notifier(plan, MEMBERS) for plan in PLANS)
    assert set(counts) == set(MEMBERS)
    assert min(counts.values()) > 150  # of 600, about 200 each


def test_a_member_leaving_moves_only_its_plans_to_their_second_choice() -> None:
    before = {plan: notifier(plan, MEMBERS) for plan in PLANS}
    after = {plan: notifier(plan, MEMBERS[:2]) for plan in PLANS}
    for plan in PLANS:
        if before[plan] != MEMBERS[2]:
            assert after[plan] == before[plan]
        else:
            assert after[plan] == ranking(plan, MEMBERS)[1]


def test_a_pin_wins_while_its_member_is_alive() -> None:
    plan = PLANS[0]
    other = next(m for m in MEMBERS if m != notifier(plan, MEMBERS))
    assert notifier(plan, MEMBERS, {plan: other}) == other
    assert notifier(plan, [m for m in MEMBERS if m != other], {plan: other}) != other
    assert notifier(plan, []) is None
