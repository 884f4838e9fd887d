"""The ingress's backpressure: a bundle waits for room in every output its plans feed (through
chained plans too) and in their held outputs, and is refused before any plan sees it when
there is none."""

from __future__ import annotations

from typing import Any

import pytest

from app.node.errors import OutputsFull
from app.node.ingress import Binding, Ingress


class Plan:
    def __init__(self) -> None:
        self.got: list[list[Any]] = []

    def send(self, stream: str, rows: list[Any], timestamps: Any) -> None:
        self.got.append(rows)


class Room:
    """The output adapters' `room`: full for the streams in `full`; records what it was asked."""

    def __init__(self, full: frozenset[str] = frozenset()) -> None:
        self.full = full
        self.asked: list[frozenset[str]] = []

    def __call__(self, streams: frozenset[str], timeout: float, /) -> str | None:
        self.asked.append(streams)
        return "sinkTable" if streams & self.full else None


class Gate:
    def __init__(self, room: bool) -> None:
        self.room = room

    def has_room(self) -> bool:
        return self.room


def chained(room: Room, gate: Gate | None = None) -> tuple[Ingress, Plan, Plan]:
    """`a` imports in:1 and exports mid:1; `b` imports mid:1 and exports out:1."""
    ingress = Ingress(room=room, full_wait=0.0)
    a, b = Plan(), Plan()
    ingress.set_routes(
        {
            "in:1": (Binding("in:1", "a", a, "In", exports=("mid:1",), gate=gate),),
            "mid:1": (Binding("mid:1", "b", b, "Mid", exports=("out:1",)),),
        }
    )
    return ingress, a, b


def test_a_bundle_waits_for_every_output_it_can_reach_through_chained_plans() -> None:
    room = Room()
    ingress, a, _ = chained(room)
    ingress.publish_rows("in:1", [(1,)], [5])
    ingress.publish_rows("in:1", [(2,)], [6])
    assert a.got == [[(1,)], [(2,)]]
    assert room.asked == [frozenset({"mid:1", "out:1"})] * 2
    assert ingress.stats().pushed_back == 0


def test_a_full_output_downstream_refuses_the_bundle_before_any_plan_sees_it() -> None:
    ingress, a, _ = chained(Room(full=frozenset({"out:1"})))
    with pytest.raises(OutputsFull, match="output adapter 'sinkTable' is full") as info:
        ingress.publish_rows("in:1", [(1,), (2,)], [5, 6])
    assert info.value.retry_after == 1.0 and a.got == []
    assert ingress.stats().pushed_back == 2


def test_full_held_outputs_of_a_redundant_plan_refuse_the_bundle_too() -> None:
    ingress, a, _ = chained(Room(), Gate(room=False))
    with pytest.raises(OutputsFull, match="the held outputs of plan 'a' is full"):
        ingress.publish_rows("in:1", [(1,)], [5])
    assert a.got == []


def test_a_notifier_admits_a_relayed_bundle_by_its_plan() -> None:
    room = Room(full=frozenset({"mid:1"}))
    ingress, _, _ = chained(room)
    with pytest.raises(OutputsFull):
        ingress.admit_plan("a", 3)  # a feeds mid:1, which is full
    ingress.admit_plan("b", 1)  # b feeds out:1 only
    assert room.asked[-1] == frozenset({"out:1"})
    assert ingress.stats().pushed_back == 3


def test_routes_that_change_are_asked_anew() -> None:
    room = Room()
    ingress, a, _ = chained(room)
    ingress.publish_rows("in:1", [(1,)], [5])
    ingress.set_routes({"in:1": (Binding("in:1", "a", a, "In", exports=("other:1",)),)})
    ingress.publish_rows("in:1", [(2,)], [6])
    assert room.asked == [frozenset({"mid:1", "out:1"}), frozenset({"other:1"})]
