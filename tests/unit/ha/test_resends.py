"""A takeover's resent bundles are recognised once each, within the window only."""

from __future__ import annotations

from pathlib import Path

import pytest

from ha.resends import Resends
from tests.support.journals import Run, digest


def test_a_bundle_held_at_the_takeover_takes_its_record_until_answered_within_the_window() -> None:
    resends = Resends(keep=3, window_ms=1000)
    a = digest("S", [1, 2], [("x", 1), ("y", 2)])
    b = digest("S", [3], [("z", 3)])
    for position, bundle in enumerate((a, b, a), 1):
        resends.seen(bundle, position=position)
    assert resends.resent(a, 0) is None  # no takeover yet: nothing is a resend
    resends.took_over(10_000)
    assert resends.resent(a, 10_100) == 1
    assert resends.resent(a, 10_150) == 1  # its settling was refused, say: the record still takes it
    resends.answered(1, a)
    assert resends.resent(a, 10_200) == 3  # seen twice: two resends
    resends.answered(3, a)
    assert resends.resent(a, 10_300) is None  # a third copy is new input
    assert resends.resent(b, 11_000) is None  # the window is over


def test_only_the_last_bundles_are_remembered_and_content_decides() -> None:
    resends = Resends(keep=2, window_ms=1000)
    old, mid, new = (digest("S", [t], [("v", t)]) for t in (1, 2, 3))
    for position, bundle in enumerate((old, mid, new), 1):
        resends.seen(bundle, position=position)
    resends.took_over(0)
    assert resends.resent(old, 1) is None  # fell out of the last two
    assert resends.resent(new, 1) == 3
    assert digest("S", [2], [("v", 2)]) == mid and digest("T", [2], [("v", 2)]) != mid


def test_a_notifier_takes_a_bundle_relayed_soon_after_it_sequenced_it_as_a_resend() -> None:
    resends = Resends(window_ms=10_000)
    resends.seen(digest("S", [1], [("a", 1)]), at_ms=1_000, position=1)  # sequenced here, its ack lost
    resends.seen(digest("S", [2], [("b", 2)]), position=2)  # a record applied as a standby: not this node's
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
    run.journal.answered(first, "In", [("k", 6)], 6)  # its client was told it was taken
    assert run.journal.send("In", [("k", 6)], 6) > first  # identical, both sent here: both processed


def test_a_relayed_resend_is_not_processed_twice_by_the_journal(tmp_path: Path) -> None:
    run = Run(tmp_path / "a")
    run.journal.resends = Resends()
    run.journal.lead(1, None)
    first = run.journal.send("In", [("k", 5)], 5)
    run.journal.answered(first, "In", [("k", 5)], 5)  # its answer was lost on the way
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
    resends.seen(bundle, at_ms=1_000, position=1)
    resends.replace([digest("S", [0], [("z", 0)])], 1)
    assert not resends.relayed_again(bundle, 2_000)


def test_a_bundle_refused_after_it_was_sequenced_takes_its_record_when_sent_again() -> None:
    """Its client was never told it was taken (the lease could not be confirmed, say): the
    record is in the log and its outputs go in any case, so the resend takes it, at any time."""
    resends = Resends(keep=3)
    refused, other = digest("S", [1], [("a", 1)]), digest("S", [2], [("b", 2)])
    resends.seen(refused, at_ms=1_000, position=7)
    resends.seen(other, at_ms=1_001, position=8)
    resends.answered(8, other)
    assert resends.unanswered(refused, 1_002) == 7
    assert resends.unanswered(other, 1_002) is None  # answered: an identical bundle is a new one
    resends.answered(7, refused)  # the resend was acknowledged
    assert resends.unanswered(refused, 1_003) is None


def test_the_unanswered_records_are_bounded_and_end_with_the_log_they_are_in() -> None:
    resends = Resends(keep=2)
    bundles = [digest("S", [t], [("v", t)]) for t in range(3)]
    for position, bundle in enumerate(bundles, 1):
        resends.seen(bundle, at_ms=position, position=position)
    assert resends.unanswered(bundles[0], 4) is None  # the oldest fell out
    assert resends.unanswered(bundles[2], 4) == 3
    resends.replace([])  # it joined another member's log: its own records are gone
    assert resends.unanswered(bundles[2], 5) is None


def test_a_journal_takes_the_resend_of_a_refused_bundle_as_its_record(tmp_path: Path) -> None:
    run = Run(tmp_path / "a")
    run.journal.resends = Resends()
    run.journal.lead(1, None)
    refused = run.journal.send("In", [("k", 5)], 5)  # its settling refused: no `answered`
    run.journal.send("In", [("k", 6)], 6)
    outputs = len(run.out)
    assert run.journal.send("In", [("k", 5)], 5) == refused
    assert len(run.out) == outputs


def test_a_takeover_after_joining_from_a_state_knows_the_states_recent_bundles_at_its_position() -> None:
    resends = Resends(window_ms=1000)
    covered = digest("S", [1], [("a", 1)])
    resends.replace([covered], 40)  # the state covers position 40
    resends.seen(digest("S", [2], [("b", 2)]), position=41)
    resends.took_over(0)
    assert resends.resent(covered, 10) == 40


def test_answering_one_bundle_of_a_state_forgets_only_that_one() -> None:
    """The recent bundles a state covers share its position; a resend of one answered there
    leaves the others resends."""
    resends = Resends(window_ms=1000)
    one, other = digest("S", [1], [("a", 1)]), digest("S", [2], [("b", 2)])
    resends.replace([one, other], 40)
    resends.took_over(0)
    resends.answered(40, one)
    assert resends.resent(one, 10) is None and resends.resent(other, 10) == 40


def test_a_record_never_answered_takes_resends_for_a_minute_only() -> None:
    """Its client gave up: a later identical bundle is a new one."""
    resends = Resends()
    bundle = digest("S", [1], [("a", 1)])
    resends.seen(bundle, at_ms=1_000, position=7)
    assert resends.unanswered(bundle, 60_999) == 7
    assert resends.unanswered(bundle, 61_001) is None


def test_a_journal_answers_the_bundle_it_just_took_without_hashing_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.persistence import journal as journals

    run = Run(tmp_path / "a")
    run.journal.resends = Resends()
    run.journal.lead(1, None)
    hashed: list[bytes] = []

    def counted(payload: bytes) -> int:
        hashed.append(payload)
        return hash(payload)

    monkeypatch.setattr(journals, "content_digest", counted)
    rows = [("k", 7)]
    position = run.journal.send("In", rows, 7)
    run.journal.answered(position, "In", rows, 7)
    assert len(hashed) == 1
    assert run.journal.send("In", [("k", 7)], 7) > position  # answered: an identical bundle is new
