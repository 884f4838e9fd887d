"""`Holder`: a node notifies only while its own, conservative deadline says the lease holds."""

from __future__ import annotations

import pytest

from ha.lease import Holder, Timing
from ha.ports import Lease

TIMING = Timing(ttl_ms=2000, renew_ms=250, margin_ms=750)


def lease(holder: str = "a", epoch: int = 1) -> Lease:
    return Lease("pizza", holder, epoch, 2000)


def test_a_granted_lease_holds_from_the_request_until_ttl_minus_margin() -> None:
    h = Holder("a", TIMING)
    assert not h.holds(0.0)
    assert h.asked(10.0, lease())
    assert h.holds(11.24) and not h.holds(11.25)  # 10 + (2000 - 750) ms, counted from the request
    assert h.epoch == 1


def test_failed_renewals_do_not_extend_the_deadline_so_the_node_steps_down_on_its_own() -> None:
    h = Holder("a", TIMING)
    h.asked(10.0, lease())
    for t in (10.25, 10.5, 10.75, 11.0):
        h.asked(t, None)  # the registry does not answer
    assert h.holds(11.2) and not h.holds(11.25)
    assert h.remaining(11.0) == pytest.approx(0.25)


def test_a_renewal_moves_the_deadline_on_and_a_paused_process_wakes_up_deposed() -> None:
    h = Holder("a", TIMING)
    h.asked(10.0, lease())
    h.asked(10.25, lease())
    assert h.holds(11.45)
    assert not h.holds(60.0)  # SIGSTOP for 50 s: past its deadline without asking anyone


def test_another_holder_or_an_older_epoch_grants_nothing() -> None:
    h = Holder("a", TIMING)
    assert not h.asked(10.0, lease("b", 1))
    h.asked(11.0, lease("a", 3))
    assert h.asked(11.1, lease("a", 2))  # a late answer of an older grant: it still holds by epoch 3
    assert h.epoch == 3
    assert h.holds(12.2) and not h.holds(12.3)  # the older answer did not move the deadline


def test_asking_is_due_every_renew_interval() -> None:
    h = Holder("a", TIMING)
    assert h.due(0.0)
    h.asked(10.0, None)
    assert not h.due(10.2) and h.due(10.25)


def test_step_down_stops_notifying_at_once() -> None:
    h = Holder("a", TIMING)
    h.asked(10.0, lease())
    h.step_down()
    assert not h.holds(10.1)


@pytest.mark.parametrize(("ttl", "renew", "margin"), [(2000, 800, 750), (1000, 250, 1000), (2000, 0, 750)])
def test_timings_that_cannot_work_are_refused(ttl: int, renew: int, margin: int) -> None:
    with pytest.raises(ValueError, match="lease timing needs"):
        Timing(ttl_ms=ttl, renew_ms=renew, margin_ms=margin)


def test_an_answer_naming_another_holder_under_a_newer_epoch_deposes_at_once() -> None:
    h = Holder("a", TIMING)
    h.asked(10.0, lease("a", 3))
    assert h.holds(10.5)
    assert not h.asked(10.5, lease("b", 4))  # taken over: the deadline no longer counts
    assert not h.holds(10.6)


def test_an_expired_answer_naming_this_node_is_no_grant() -> None:
    """A restarted process asks while its log lacks what the lease requires: the store refuses
    and answers with the row as it stands, its predecessor's (this node's name), expired."""
    h = Holder("a", TIMING)
    assert not h.asked(10.0, Lease("pizza", "a", 3, 0))
    assert not h.holds(10.1)
    h.asked(20.0, lease(epoch=3))
    assert h.holds(20.1)
    assert not h.asked(20.25, Lease("pizza", "a", 3, 0))  # the store's clock ran it out early
    assert not h.holds(20.3)


def test_an_answer_to_a_request_sent_before_the_node_stepped_down_grants_nothing() -> None:
    """A renewal in flight while the node released the lease (a hand-over) is served first and
    answered last: the store has given the lease away since, so it must not re-arm the node."""
    h = Holder("a", TIMING)
    h.asked(10.0, lease(epoch=4))
    h.step_down(10.3)  # released at 10.3 ...
    assert not h.asked(10.2, lease(epoch=4))  # ... the renewal sent at 10.2 answers late
    assert not h.holds(10.4)
    assert h.asked(10.5, lease(epoch=5))  # a grant asked for afterwards counts


def test_an_answer_sent_before_the_one_that_deposed_the_node_is_stale() -> None:
    h = Holder("a", TIMING)
    h.asked(10.0, lease(epoch=4))
    h.asked(10.6, Lease("pizza", "b", 5, 2000))  # taken over: b holds epoch 5
    assert not h.asked(10.5, lease(epoch=4))  # a's own renewal, sent earlier, answered later
    assert not h.holds(10.7)
