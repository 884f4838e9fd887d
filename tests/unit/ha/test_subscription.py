"""A standby resumes only inside the notifier's log and term; anything else takes a snapshot.
On the standby's side, a subscription's state vouches for its outputs only once they all came."""

from __future__ import annotations

import pytest

from engine.events import Event
from ha.gate import OutputGate
from ha.messages import Subscribe
from ha.subscription import Subscription, resumes


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (Subscribe("p", "log-a", 7, 3, "t", False), True),
        (Subscribe("p", "log-a", 4, 3, "t", False), True),  # just before the oldest record kept
        (Subscribe("p", "log-a", 3, 3, "t", False), False),  # the log no longer has 4
        (Subscribe("p", "log-a", 11, 3, "t", False), False),  # ahead of the notifier: another history
        (Subscribe("p", "log-a", 7, 2, "t", False), False),  # another term: its records may differ
        (Subscribe("p", "log-b", 7, 3, "t", False), False),  # another log
        (Subscribe("p", "log-a", 7, 3, "t", True), False),  # it asks for a state afresh
    ],
)
def test_a_standby_resumes_only_a_prefix_of_the_notifiers_log_in_its_term(
    request_: Subscribe, expected: bool
) -> None:
    assert resumes(request_, "log-a", 3, first=5, last=10) is expected


def standby_gate() -> OutputGate[int, str]:
    return OutputGate("p", lambda stream, events, origin, fence: None)


def test_a_state_vouches_for_the_outputs_it_covers_only_once_the_subscription_is_live() -> None:
    gate = standby_gate()
    joining = Subscription(gate)
    joining.installed(position=10, delivered=4, covers=4)
    gate.hold(7, "out", [Event(7, [7])], 7)  # a carried output
    assert not gate.complete and not joining.acknowledges
    joining.went_live()
    assert gate.complete and joining.acknowledges
    joining.delivered(10)
    assert gate.held == 0


def test_a_join_cut_short_leaves_the_gate_unable_to_vouch_even_when_the_next_subscription_resumes() -> None:
    """The state came, the carried outputs did not: the next subscription resumes after the
    state (its log holds it) and goes live, but the first one's cover is not its to apply."""
    gate = standby_gate()
    cut = Subscription(gate)
    cut.installed(position=10, delivered=4, covers=4)
    assert cut.ended() is False  # never live: not caught up
    resumed = Subscription(gate)  # `Resume` from position 10
    resumed.went_live()
    assert not gate.complete  # it may take over only once the notifier reports 10 written
    resumed.delivered(10)
    assert gate.complete


def test_a_subscription_ended_while_live_leaves_the_standby_caught_up_unless_dropped() -> None:
    died = Subscription(standby_gate())
    died.went_live()
    assert died.ended() is True and not died.live
    dropped = Subscription(standby_gate())
    dropped.went_live()
    assert dropped.ended(dropped=True) is False
    assert Subscription.follows(8, 7) and not Subscription.follows(9, 7)
