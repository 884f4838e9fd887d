"""Sender identities: every event a sender delivers in order, in bundles cut any way and sent
again any number of times until acknowledged, is taken exactly once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.senders import FROM_KEY, IdentityError, SenderMarks, SenderRun, parse_from, runs_of


def test_the_key_reads_as_a_run_and_a_bad_one_is_named() -> None:
    assert parse_from("12.3@plan/Out/f|log-1", 4) == SenderRun("plan/Out/f|log-1", 12, 3, 4)
    assert parse_from("1.0@a@b").sender == "a@b"  # the sender may hold '@'
    assert parse_from("-", 2) == SenderRun("", 0, 0, 2)
    for bad in ("12@x", "a.b@x", "1.2", "1.2@", "-1.2@x", f"1.{2**63}@x"):
        with pytest.raises(IdentityError, match="cepheus.from"):
            parse_from(bad)


def test_runs_follow_the_keys_and_the_events_after_them() -> None:
    maps = [{FROM_KEY: "5.0@a", "other": "kept"}, None, {}, {FROM_KEY: "9.2@b"}, None]
    assert runs_of(maps) == (SenderRun("a", 5, 0, 3), SenderRun("b", 9, 2, 2))
    assert runs_of([None, {FROM_KEY: "1.0@a"}]) == ()  # event 0 unnamed: a bundle without identity
    assert runs_of([]) == ()


def test_a_resent_bundle_is_left_out_and_a_longer_retry_keeps_only_its_new_tail() -> None:
    marks = SenderMarks()
    first = (SenderRun("a", 0, 0, 3),)
    assert marks.fresh(first, 3) == (None, first)
    marks.advance(first)
    assert marks.fresh(first, 3) == ([], ())  # the same bundle again
    longer = (SenderRun("a", 0, 0, 5),)  # cut again after more events were queued
    assert marks.fresh(longer, 5) == ([(3, 5)], (SenderRun("a", 0, 3, 2),))
    assert marks.fresh((SenderRun("a", 1, 0, 2),), 2)[0] is None  # a later major is new


def test_identical_events_with_other_numbers_are_both_taken() -> None:
    marks = SenderMarks()
    marks.advance((SenderRun("a", 0, 0, 1),))
    assert marks.fresh((SenderRun("a", 0, 1, 1),), 1)[0] is None


def test_anonymous_runs_and_events_past_the_runs_are_always_taken() -> None:
    marks = SenderMarks()
    marks.advance((SenderRun("a", 0, 0, 10),))
    runs = (SenderRun("", 0, 0, 2), SenderRun("a", 0, 5, 2))
    keep, kept = marks.fresh(runs, 6)
    assert keep == [(0, 2), (4, 6)]  # the anonymous pair, a's two old events left out, the unnamed tail
    assert kept == (SenderRun("", 0, 0, 2),)
    marks.advance(kept)
    assert len(marks) == 1


def test_marks_keep_the_senders_heard_of_last() -> None:
    marks = SenderMarks(keep=2)
    for sender in ("a", "b", "a", "c"):
        marks.advance((SenderRun(sender, 0, 0, 1),))
    assert [s for s, _, _ in marks.state()] == ["a", "c"]  # b was heard of longest ago
    copy = SenderMarks()
    copy.restore(marks.state())
    assert copy.state() == marks.state()
    with pytest.raises(IdentityError):
        copy.restore([["a", 1]])


@settings(max_examples=300, deadline=None)
@given(
    events=st.integers(1, 60),
    cuts=st.lists(st.tuples(st.integers(1, 12), st.booleans()), min_size=1, max_size=200),
)
def test_every_event_is_taken_once_however_the_bundles_are_cut_and_resent(
    events: int, cuts: list[tuple[int, bool]]
) -> None:
    """A sender's buffer: each attempt sends up to `size` events from its head; an attempt whose
    answer is lost (`lost`) was taken all the same and is sent again, maybe cut longer."""
    marks = SenderMarks()
    taken: list[int] = []
    head = 0
    for size, lost in cuts * (events + 1):
        if head >= events:
            break
        stop = min(events, head + size)
        runs = (SenderRun("pub", 0, head, stop - head),)
        keep, kept = marks.fresh(runs, stop - head)
        numbers = list(range(head, stop))
        taken += numbers if keep is None else [n for a, b in keep for n in numbers[a:b]]
        marks.advance(kept)
        if not lost:
            head = stop
    assert taken == list(range(len(taken)))  # each once, in order, none skipped
    if head >= events:
        assert len(taken) == events
