"""Membership from heartbeats: learned through the WKA, suspected then dead when silent, dead
at once when its connection closes, alive again when it speaks."""

from __future__ import annotations

import pytest

from ha.membership import Membership, State, Timeouts
from ha.placement import notifier

T = Timeouts(heartbeat_ms=200, suspect_ms=600, dead_ms=1500, forget_ms=10_000)


def test_a_member_started_with_the_wka_learns_the_cluster_from_heartbeats() -> None:
    c = Membership("c:4002", T, wka=["a:4000"])
    assert c.targets(0.0) == ["a:4000"]
    c.heartbeat("a:4000", ["a:4000", "b:4001"], now=1.0)
    assert c.view(1.0) == {"a:4000": State.ALIVE, "b:4001": State.SUSPECTED, "c:4002": State.ALIVE}
    assert c.targets(1.0) == ["a:4000", "b:4001"]  # it heartbeats b too, so b learns of it
    c.heartbeat("b:4001", ["a:4000", "b:4001", "c:4002"], now=1.1)
    assert c.alive(1.1) == ["a:4000", "b:4001", "c:4002"]


def test_a_silent_member_is_suspected_then_dead_and_alive_again_when_it_speaks() -> None:
    m = Membership("a", T)
    m.heartbeat("b", [], now=0.0)
    assert m.state("b", 0.5) is State.ALIVE
    assert m.state("b", 0.7) is State.SUSPECTED
    assert m.state("b", 1.6) is State.DEAD
    assert m.alive(1.6) == ["a"]
    m.heartbeat("b", [], now=2.0)
    assert m.state("b", 2.0) is State.ALIVE


def test_a_closed_connection_is_death_at_once() -> None:
    m = Membership("a", T)
    m.heartbeat("b", [], now=0.0)
    m.lost("b")
    assert m.state("b", 0.01) is State.DEAD
    m.heartbeat("b", [], now=0.5)  # restarted
    assert m.state("b", 0.5) is State.ALIVE


def test_members_never_heard_from_are_forgotten() -> None:
    m = Membership("a", T)
    m.heartbeat("b", ["ghost"], now=0.0)
    assert "ghost" in m.view(0.0)
    assert "ghost" not in m.view(11.0)


def test_members_with_the_same_heartbeats_place_notifiers_alike() -> None:
    views = []
    for me in ("a", "b", "c"):
        m = Membership(me, T)
        for sender in ("a", "b", "c"):
            m.heartbeat(sender, ["a", "b", "c"], now=5.0)
        views.append(m.alive(5.1))
    assert views[0] == views[1] == views[2]
    assert len({notifier(f"plan-{n}", views[0]) for n in range(50)}) == 3


def test_timeouts_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="membership timeouts need"):
        Timeouts(heartbeat_ms=500, suspect_ms=400)


def test_only_a_member_heard_from_whose_connection_closed_or_that_fell_silent_is_gone() -> None:
    m = Membership("a", T, wka=["b"])
    assert not m.gone("b", 0.0)  # never heard from: not known to be gone, just not known
    m.heartbeat("b", ["a", "c"], 0.0)
    assert not m.gone("c", 5.0)  # only heard of
    assert not m.gone("b", 0.1) and not m.lost_connection("b")
    m.lost("b")
    assert m.gone("b", 0.2) and m.lost_connection("b")
    m.heartbeat("b", [], 0.3)
    assert not m.gone("b", 0.4)
    assert m.gone("b", 2.0) and not m.lost_connection("b")  # silent past dead_ms
