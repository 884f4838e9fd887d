"""A redundant plan's held outputs survive a restart from its snapshot: what the snapshot keeps
of the gate is held again, so a member restarted from it can deliver what the notifier had not
written when it takes over, and it can tell when it cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.output.base import Fence, Origin
from app.cluster.fence import NotifierFence
from app.cluster.gate import LockedGate
from engine.errors import NotLeader
from engine.events import Event
from engine.runtime import state as state_codec
from tests.support.journals import Run, Wall

Sent = tuple[str, list[Event], Origin, Fence | None]


def gate(sent: list[Sent]) -> LockedGate:
    return LockedGate(
        "p", lambda stream_id, events, where, fence: sent.append((stream_id, events, where, fence))
    )


def outputs(position: int, n: int = 2) -> tuple[str, list[Event], Origin]:
    events = [Event(1000 + position, (f"r{position}", i, 0.5), i == 1) for i in range(n)]
    return "outs:1.0.0", events, Origin("p", "log-1", position, 0)


def test_a_restart_from_the_snapshot_holds_and_delivers_what_was_not_known_written() -> None:
    before: list[Sent] = []
    old = gate(before)
    for position in range(1, 6):
        old.hold(*outputs(position))
    old.trim(2)  # the notifier reported positions 1 and 2 written
    kept: Any = state_codec.decode(state_codec.encode({"outputs": old.state()}, "p"), "p")["outputs"]

    after: list[Sent] = []
    restarted = gate(after)
    assert restarted.restore(kept) == 6
    assert restarted.complete and restarted.delivered == 2
    restarted.hold(*outputs(6))  # the log's replay after the snapshot

    def fence(transaction: object, /) -> None:
        """The new term's fence."""

    restarted.open(fence, 6)  # it takes over
    delivered = [
        (where.position, [(e.timestamp, tuple(e.data), e.expired) for e in events])
        for _, events, where, _ in after
    ]
    assert delivered == [
        (p, [(1000 + p, (f"r{p}", 0, 0.5), False), (1000 + p, (f"r{p}", 1, 0.5), True)]) for p in range(3, 7)
    ]
    assert all(f is fence for *_, f in after)


def test_a_snapshot_of_a_gate_that_dropped_outputs_restores_one_that_may_not_take_over() -> None:
    old = LockedGate("p", lambda *_: None, max_events=4)
    for position in range(1, 5):
        old.hold(*outputs(position))  # positions 1 and 2 dropped: it holds 3 and 4 only
    assert not old.complete
    restarted = gate([])
    restarted.restore(old.state())
    assert not restarted.complete, "outputs of position 2 may never have been written"
    restarted.trim(2)
    assert restarted.complete


def test_the_plans_snapshot_keeps_what_its_gate_holds_as_of_the_position_it_covers(tmp_path: Path) -> None:
    run = Run(tmp_path / "log", Wall(1_000))
    held = gate([])
    run.journal.outputs = held.state
    run.journal.send("In", [("k", 1)], 1_010)
    held.hold(*outputs(run.journal.position))
    capture, _, position = run.journal.capture()
    restarted = Run(tmp_path / "other", Wall(2_000))
    kept = restarted.runtime.restore(capture.encode()).annex["outputs"]
    again = gate([])
    assert again.restore(kept) == 2
    assert [where.position for _, _, where in again.carried()[0]] == [position]


def test_a_fence_that_refused_once_refuses_every_later_write_and_a_redelivery_goes_under_a_new_one() -> None:
    """The sink's marks are high-water marks per log: an output written after a refused one
    would make the sink skip the refused one when it is delivered again."""
    holds = [True]
    fence = NotifierFence("p", 1, lambda: holds[0])
    fence(None)
    holds[0] = False  # the lease lapsed on this node's clock
    with pytest.raises(NotLeader):
        fence(None)
    holds[0] = True  # renewed: it holds the same lease again
    with pytest.raises(NotLeader):
        fence(None)

    sent: list[Sent] = []
    g = gate(sent)
    g.open(fence, 0)
    for position in (1, 2):
        g.hold(*outputs(position))
    g.release(2)
    again = NotifierFence("p", 1, lambda: holds[0])
    assert g.redeliver(again) == 4
    assert [(where.position, f) for _, _, where, f in sent[2:]] == [(1, again), (2, again)]
