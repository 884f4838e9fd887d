"""The output gate of a redundant plan: a standby holds, a notifier releases what its standbys
hold, a takeover delivers what is still held, and a standby knows when it may take over."""

from __future__ import annotations

from typing import Any

from engine.events import Event
from ha.gate import OutputGate


class Epoch:
    """A fence that lets every write through and says which term it is."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, transaction: object, /) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Epoch) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


class Sink:
    def __init__(self) -> None:
        self.got: list[tuple[int, Any]] = []  # (position, fence)

    def __call__(self, stream_id: str, events: list[Event], origin: int, fence: Any) -> None:
        self.got.extend((origin, fence) for _ in events)


def held(gate: OutputGate[int, Epoch], position: int, n: int = 1) -> None:
    gate.hold(position, "out:1.0.0", [Event(position, [position])] * n, position)


def test_a_standby_holds_trims_what_the_notifier_delivered_and_delivers_the_rest_on_takeover() -> None:
    sink = Sink()
    gate = OutputGate("p", sink)
    for position in (1, 2, 3):
        held(gate, position)
    assert gate.release(3) == 0 and sink.got == []  # a standby releases nothing
    gate.trim(1)
    assert gate.held == 2 and gate.complete
    assert gate.open(Epoch("fence-7"), through=3) == 2
    assert sink.got == [(2, Epoch("fence-7")), (3, Epoch("fence-7"))]
    assert gate.released == 3


def test_a_notifier_releases_in_order_up_to_what_its_standbys_hold() -> None:
    sink = Sink()
    gate = OutputGate("p", sink)
    gate.open(Epoch("f"), through=0)
    held(gate, 1)
    held(gate, 2, n=2)
    assert gate.release(1) == 1 and sink.got == [(1, Epoch("f"))]
    assert gate.release(2) == 2 and gate.held == 3  # released, not yet known written
    gate.trim(2)  # its adapters wrote them
    assert gate.held == 0
    gate.close()
    held(gate, 3)
    assert gate.release(3) == 0 and gate.held == 1  # stepped down: held again


def test_outputs_released_but_not_known_written_go_again_in_the_next_term() -> None:
    sink = Sink()
    gate = OutputGate("p", sink)
    gate.open(Epoch("epoch-1"), through=0)
    held(gate, 1)
    held(gate, 2)
    gate.release(2)  # ... and the fence refused them: the lease ran out before the write
    gate.close()
    held(gate, 3)
    sink.got.clear()
    assert gate.open(Epoch("epoch-2"), through=3) == 3  # the same node notifies again
    assert sink.got == [(1, Epoch("epoch-2")), (2, Epoch("epoch-2")), (3, Epoch("epoch-2"))]


def test_a_standby_that_joined_from_a_snapshot_or_dropped_outputs_waits_for_the_notifiers_word() -> None:
    gate = OutputGate("p", Sink(), max_events=2)
    gate.reset(after=10)
    assert not gate.complete  # outputs before position 10 were the notifier's alone
    gate.trim(10)
    assert gate.complete
    for position in (11, 12, 13):
        held(gate, position)
    assert gate.held == 2 and gate.covers_after == 11 and not gate.complete  # 11 was dropped
    gate.trim(11)
    assert gate.complete


def test_a_takeover_delivers_what_is_held_up_to_its_start_and_the_rest_as_it_settles() -> None:
    sink = Sink()
    gate: OutputGate[int, Epoch] = OutputGate("p", sink)
    held(gate, 1)
    held(gate, 2)  # a copy the new notifier sequenced as it took over: not yet held by its standbys
    gate.open(Epoch("e2"), 1)
    assert sink.got == [(1, Epoch("e2"))]
    gate.release(2)
    assert sink.got == [(1, Epoch("e2")), (2, Epoch("e2"))]


def test_a_notifier_whose_lease_lapsed_delivers_again_what_is_not_known_written() -> None:
    sink = Sink()
    gate: OutputGate[int, Epoch] = OutputGate("p", sink)
    gate.open(Epoch("e1"), 0)
    for position in (1, 2, 3):
        held(gate, position)
    gate.release(2)
    gate.trim(1)  # 1 is known written; 2 was released (its write refused, say); 3 waits
    sink.got.clear()
    assert gate.redeliver() == 1
    assert sink.got == [(2, Epoch("e1"))]  # not 3: its record has not settled
    gate.close()
    assert gate.redeliver() == 0  # a standby delivers nothing
    assert gate.has_room


def test_the_gate_has_room_below_half_its_bound() -> None:
    gate: OutputGate[int, Epoch] = OutputGate("p", Sink(), max_events=4)
    held(gate, 1, 1)
    assert gate.has_room
    held(gate, 2, 1)
    assert not gate.has_room  # the node stops taking input long before anything is dropped
    gate.trim(2)
    assert gate.has_room and gate.dropped == 0


def test_a_takeover_resends_what_it_released_before_and_counts_as_released_nothing_a_state_replaced() -> None:
    """A former notifier that joined back from another member's state had released position 1
    in its own term; taking over again, it must not count that as released (the notifier's
    trim would then drop the carried outputs of position 1 unwritten)."""
    sink = Sink()
    gate = OutputGate("p", sink)
    gate.open(Epoch("e1"), through=0)
    held(gate, 1)
    gate.release(1)
    gate.close()
    gate.reset(1)  # it joins back from the new notifier's state
    held(gate, 1)  # the carried output of position 1
    held(gate, 2)
    gate.carried_in(0)
    sink.got.clear()
    assert gate.open(Epoch("e3"), through=0) == 0 and gate.released == 0
    assert gate.release(2) == 2
    assert sink.got == [(1, Epoch("e3")), (2, Epoch("e3"))]


def test_a_takeover_delivers_again_at_once_what_this_node_released_without_knowing_it_written() -> None:
    sink = Sink()
    gate = OutputGate("p", sink)
    gate.open(Epoch("e1"), through=0)
    for position in (1, 2, 3):
        held(gate, position)
    gate.release(2)
    gate.close()
    sink.got.clear()
    assert gate.open(Epoch("e2"), through=0) == 2
    assert sink.got == [(1, Epoch("e2")), (2, Epoch("e2"))] and gate.released == 2


def test_outputs_known_written_are_not_held_again() -> None:
    """A standby behind the notifier's report, or a restart replaying its log after the
    position it kept as written, holds only what a takeover would have to deliver."""
    gate: OutputGate[int, Epoch] = OutputGate("p", Sink(), max_events=4)
    gate.trim(5)  # as a restart is told (`PlanJournal.recover(written=...)`)
    for position in range(1, 8):
        held(gate, position)
    assert gate.held == 2 and gate.dropped == 0 and gate.complete
