"""A standby resumes only inside the notifier's log and term; anything else takes a snapshot.
On the standby's side, a state is installed only with every output the notifier carried with it."""

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


def test_a_state_is_installed_once_every_output_it_announces_came() -> None:
    gate = standby_gate()
    joining: Subscription[int, str] = Subscription(gate)
    joining.state(position=10, delivered=4, covers=4, carried=2, state="snapshot")
    joining.carried((7, "out", [Event(7, [7])], 7))
    assert joining.pending is None and gate.held == 0  # nothing changes before the last came
    joining.carried((8, "out", [Event(8, [8])], 8))
    assert joining.pending == "snapshot"
    joining.installed()
    assert joining.pending is None and gate.held == 2 and gate.complete
    bare: Subscription[int, str] = Subscription(standby_gate())
    bare.state(position=3, delivered=3, covers=3, carried=0, state="s")
    assert bare.pending == "s"  # every output written: nothing follows
    assert not joining.acknowledges
    joining.went_live()
    assert joining.acknowledges
    joining.delivered(10)
    assert gate.held == 0


def test_a_join_cut_short_changes_nothing_the_standby_held() -> None:
    """The state came, the carried outputs may not all have: the standby keeps the copy it had
    (its log, state and held outputs), complete as it was."""
    gate = standby_gate()
    gate.hold(3, "out", [Event(3, [3])], 3)  # what it held from an earlier subscription
    cut: Subscription[int, str] = Subscription(gate)
    cut.state(position=10, delivered=4, covers=4, carried=2, state="snapshot")
    cut.carried((7, "out", [Event(7, [7])], 7))
    assert cut.ended() is False  # never live: not caught up
    assert cut.pending is None and gate.held == 1 and gate.covers_after == 0 and gate.complete
    resumed: Subscription[int, str] = Subscription(gate)  # the next one resumes its own log
    resumed.went_live()
    assert gate.complete


def test_a_subscription_ended_while_live_leaves_the_standby_caught_up_unless_dropped() -> None:
    died = Subscription(standby_gate())
    died.went_live()
    assert died.ended() is True and not died.live
    dropped = Subscription(standby_gate())
    dropped.went_live()
    assert dropped.ended(dropped=True) is False
    assert Subscription.follows(8, 7) and not Subscription.follows(9, 7)
