"""The acknowledgement rule: a notifier acknowledges a bundle only once every live standby
holds it, or a renewal of its lease made the registry require it of any next notifier."""

from __future__ import annotations

from ha.acks import Acknowledgements, Confirm, Drop, Refuse, Release, Wait
from ha.ports import LogPosition

LOG = LogPosition(term=3, position=10)


def test_the_first_bundle_of_a_term_is_confirmed_with_the_registry_even_when_held() -> None:
    rule = Acknowledgements("p")
    b = rule.subscribed("b", 8)
    b.live = True
    rule.acknowledged(b, 10, ready=True)
    assert rule.decide(10, 0.0, 0.0, LOG) == Confirm(LogPosition(3, 10))
    assert rule.confirmed(True) == Release()
    assert rule.decide(10, 0.0, 0.0, LOG) == Release()  # held, and the term required already


def test_a_live_standby_that_has_not_acknowledged_is_waited_for_then_dropped() -> None:
    rule = Acknowledgements("p", ack_timeout=1.0)
    b = rule.subscribed("b", 8)
    b.live = True
    rule.acknowledged(b, 9, ready=True)
    assert rule.decide(10, 5.0, 5.5, LOG) == Wait(6.0)
    step = rule.decide(10, 5.0, 6.0, LOG)
    assert isinstance(step, Drop) and step.standbys == (b,)
    rule.ended(b)  # the member drops it
    # it may count itself able to take over without 10: the registry must require 10 first
    assert rule.decide(10, 5.0, 6.0, LOG) == Confirm(LogPosition(3, 10))
    assert isinstance(rule.confirmed(False), Refuse)


def test_a_standby_catching_up_makes_the_registry_require_what_it_may_lack() -> None:
    rule = Acknowledgements("p")
    rule.required = True
    held = rule.subscribed("b", 5)
    held.live = True
    rule.acknowledged(held, 10, ready=True)
    catching_up = rule.subscribed("c", 10)  # joined at 10, acknowledged nothing yet, not live
    assert catching_up.may_lack(10) is False  # joined at 10: a snapshot covers it
    late = rule.subscribed("d", 9)
    assert late.may_lack(10)
    assert rule.decide(10, 0.0, 0.0, LOG) == Confirm(LogPosition(3, 10))


def test_a_resubscribed_standby_no_longer_counts_as_lacking_once_it_acknowledges() -> None:
    rule = Acknowledgements("p")
    rule.required = True
    old = rule.subscribed("b", 5)
    rule.ended(old)  # its subscription ended before it held 10: it may believe it can take over
    new = rule.subscribed("b", 10)  # catching up from a snapshot of 10
    assert isinstance(rule.decide(10, 0.0, 0.0, LOG), Confirm)
    new.live = True
    rule.acknowledged(new, 10, ready=True)  # told state/resume first: its old belief is over
    assert rule.decide(10, 0.0, 0.0, LOG) == Release()


def test_after_close_only_what_every_standby_in_sync_held_is_acknowledged() -> None:
    rule = Acknowledgements("p")
    rule.required = True
    b = rule.subscribed("b", 5)
    b.live = True
    rule.acknowledged(b, 9, ready=True)
    rule.close()
    assert rule.decide(9, 0.0, 0.0, LOG) == Release()
    assert isinstance(rule.decide(10, 0.0, 0.0, LOG), Refuse)
    assert rule.in_sync() == []  # every subscription ended


def test_a_confirmation_covers_what_every_live_standby_holds_so_one_write_serves_many() -> None:
    rule = Acknowledgements("p")
    b = rule.subscribed("b", 0)
    b.live = True
    rule.acknowledged(b, 12, ready=True)
    assert rule.decide(10, 0.0, 0.0, LogPosition(3, 14)) == Confirm(LogPosition(3, 12))
    alone = Acknowledgements("p")
    assert alone.decide(10, 0.0, 0.0, LogPosition(3, 14)) == Confirm(LogPosition(3, 14))
