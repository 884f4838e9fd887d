"""A takeover's resent bundles are recognised once each, within the window only."""

from __future__ import annotations

from pathlib import Path

from ha.resends import Resends, digest
from tests.support.journals import Run


def test_a_bundle_sequenced_before_the_takeover_is_a_resend_once_within_the_window() -> None:
    resends = Resends(keep=3, window_ms=1000)
    a = digest("S", [1, 2], [("x", 1), ("y", 2)])
    b = digest("S", [3], [("z", 3)])
    for bundle in (a, b, a):
        resends.seen(bundle)
    assert not resends.resent(a, 0)  # no takeover yet: nothing is a resend
    resends.took_over(10_000)
    assert resends.resent(a, 10_100) and resends.resent(a, 10_200)  # seen twice: two resends
    assert not resends.resent(a, 10_300)  # a third copy is new input
    assert not resends.resent(b, 11_000)  # the window is over


def test_only_the_last_bundles_are_remembered_and_content_decides() -> None:
    resends = Resends(keep=2, window_ms=1000)
    old, mid, new = (digest("S", [t], [("v", t)]) for t in (1, 2, 3))
    for bundle in (old, mid, new):
        resends.seen(bundle)
    resends.took_over(0)
    assert not resends.resent(old, 1)  # fell out of the last two
    assert resends.resent(new, 1)
    assert digest("S", [2], [("v", 2)]) == mid and digest("T", [2], [("v", 2)]) != mid


def test_a_notifier_takes_a_bundle_relayed_soon_after_it_sequenced_it_as_a_resend() -> None:
    resends = Resends(window_ms=10_000)
    resends.seen(digest("S", [1], [("a", 1)]), at_ms=1_000)  # sequenced here, its ack lost
    resends.seen(digest("S", [2], [("b", 2)]))  # a record applied as a standby: not this node's
    assert resends.relayed_again(digest("S", [1], [("a", 1)]), 5_000)  # the client's resend via the standby
    assert not resends.relayed_again(digest("S", [2], [("b", 2)]), 5_000)
    assert not resends.relayed_again(digest("S", [1], [("a", 2)]), 5_000)  # another value: a new bundle
    assert not resends.relayed_again(digest("S", [1], [("a", 1)]), 11_001)  # past the window


def test_a_bundle_sent_here_after_its_relay_was_refused_is_not_processed_twice(tmp_path: Path) -> None:
    """The notifier took a relayed bundle late, after the standby's relay deadline refused its
    client; the client sends it again, here. (Two identical bundles sent here directly are both
    new: no relay was involved.)"""
    run = Run(tmp_path / "a")
    run.journal.resends = Resends()
    run.journal.lead(1, None)
    relayed = run.journal.send("In", [("k", 5)], 5, forward=False)
    outputs = len(run.out)
    assert run.journal.send("In", [("k", 5)], 5) == relayed  # the client's resend: the same position
    assert len(run.out) == outputs
    first = run.journal.send("In", [("k", 6)], 6)
    assert run.journal.send("In", [("k", 6)], 6) > first  # identical, both sent here: both processed


def test_a_relayed_resend_is_not_processed_twice_by_the_journal(tmp_path: Path) -> None:
    run = Run(tmp_path / "a")
    run.journal.resends = Resends()
    run.journal.lead(1, None)
    first = run.journal.send("In", [("k", 5)], 5)
    outputs = len(run.out)
    assert run.journal.send("In", [("k", 5)], 5, forward=False) == first  # relayed again: the same position
    assert run.journal.position == first and len(run.out) == outputs
    assert (
        run.journal.send("In", [("k", 5)], 5) > first
    )  # sent here directly: processed (no client id to tell)


def test_what_a_node_sequenced_before_it_joined_another_log_is_no_resend() -> None:
    """A notifier paused past its lease sequenced a bundle it could not acknowledge; it joined the
    new notifier's log from a snapshot (its own record is gone). When it notifies again and the
    client's resend is relayed to it, the bundle must be processed."""
    resends = Resends(window_ms=10_000)
    bundle = digest("S", [1], [("a", 1)])
    resends.seen(bundle, at_ms=1_000)
    resends.replace([digest("S", [0], [("z", 0)])])
    assert not resends.relayed_again(bundle, 2_000)
