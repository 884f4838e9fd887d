"""A full-active-active standby's own copies: held until the notifier's record of the same
bundle arrives (or dropped when it came first), the rest taken over in arrival order; each
acknowledged only once settled, withdrawn when its client is refused."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.persistence import journal as journal_module
from app.persistence.journal import NotLeading
from ha.resends import GONE, SETTLED, WAITING, DirectCopies
from tests.support.journals import Run, digest


def bundle(n: int) -> tuple[str, list[tuple[object, ...]], list[int]]:
    return "S", [("v", n)], [n]


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.005)


def taken(copies: DirectCopies) -> list[tuple[str, list[tuple[object, ...]], list[int]]]:
    return [copy[:3] for _, copy in copies.take()]


def key(n: int) -> int:
    stream, rows, ts = bundle(n)
    return digest(stream, ts, rows)


def copy(n: int) -> tuple[int, str, list[tuple[object, ...]], list[int]]:
    return (key(n), *bundle(n))


def test_copies_the_notifier_sequenced_are_dropped_whichever_came_first() -> None:
    copies = DirectCopies()
    copies.arrived(*copy(1))
    copies.arrived(*copy(2))
    copies.sequenced(key(1))  # the notifier's record after the copy
    copies.sequenced(key(3))  # before the copy
    copies.arrived(*copy(3))
    assert copies.held == 1
    assert taken(copies) == [bundle(2)]  # never sequenced: the new notifier processes it
    assert copies.held == 0 and copies.take() == []


def test_identical_bundles_count_one_by_one_and_the_holding_is_bounded() -> None:
    copies = DirectCopies(keep=3)
    for n in (1, 1, 2):
        copies.arrived(*copy(n))
    copies.sequenced(key(1))
    assert taken(copies) == [bundle(1), bundle(2)]
    for n in range(5):
        copies.arrived(*copy(n))
    assert copies.held == 3 and copies.dropped == 2
    assert taken(copies) == [bundle(2), bundle(3), bundle(4)]


def test_a_taken_over_node_forgets_which_records_came_before_their_copies() -> None:
    copies = DirectCopies()
    copies.sequenced(key(1))  # a record before its copy, then this node takes over
    assert copies.take() == []
    copies.arrived(*copy(1))  # leading later, then standby again: a new copy is held, not swallowed
    assert copies.held == 1


def test_a_copy_is_settled_once_a_position_at_or_after_its_record_is_settled() -> None:
    copies = DirectCopies()
    one, two, three = (copies.arrived(*copy(n)) for n in (1, 2, 3))
    assert copies.outcome(one) == WAITING  # in memory only: not yet
    copies.sequenced(key(1), 7)
    assert copies.outcome(one) == WAITING  # applied here, not yet held by every other standby
    copies.settle(6)
    assert copies.outcome(one) == WAITING
    copies.settle(8)  # everything up to 8 is acknowledged
    assert copies.outcome(one) == SETTLED and copies.outcome(one) == GONE  # said once
    copies.sequenced(key(4), 9)
    four = copies.arrived(*copy(4))  # its record came first: it waits for the same settling
    assert copies.outcome(four) == WAITING
    copies.settle(9)
    assert copies.outcome(four) == SETTLED
    copies.sequenced(key(3), 10)  # applied, not yet reported settled when this member takes over
    got = copies.take()
    assert [copy[:3] for _, copy in got] == [bundle(2)] and got[0][0] == two
    copies.wait_at(11, two)  # this member sequenced it at 11
    assert copies.outcome(two) == WAITING and copies.outcome(three) == WAITING
    copies.settle(11)  # this member, now the notifier, settles 11: both are held by its standbys
    assert copies.outcome(two) == SETTLED and copies.outcome(three) == SETTLED


def test_a_copy_arriving_after_its_record_was_settled_is_settled_at_once() -> None:
    copies = DirectCopies()
    copies.sequenced(key(1), 3)  # the record first (no copy yet), and its settling
    copies.settle(3)
    late = copies.arrived(*copy(1))
    assert copies.outcome(late) == SETTLED


def test_copies_waiting_at_positions_of_a_log_this_member_left_are_gone() -> None:
    copies = DirectCopies()
    one = copies.arrived(*copy(1))
    copies.sequenced(key(1), 5)
    copies.renumbered()  # it adopted the notifier's state: position 5 of its old log means nothing
    copies.settle(5)
    assert copies.outcome(one) == GONE


def test_a_copy_whose_record_is_not_known_where_is_gone() -> None:
    copies = DirectCopies()
    one = copies.arrived(*copy(1))
    copies.sequenced(key(1))  # no position
    assert copies.outcome(one) == GONE and copies.held == 0


def test_the_repeat_of_a_refused_copy_whose_record_is_here_waits_for_it_and_is_never_held() -> None:
    copies = DirectCopies()
    first = copies.arrived(*copy(1))
    copies.sequenced(key(1), 4)  # the notifier's record (a state at 4 said so, or a record at 4)
    assert copies.withdraw(first) is False  # not settled in time: its client is refused
    again = copies.arrived(*copy(1))  # the client sends it again
    assert copies.held == 0 and copies.take() == []  # a takeover would not process it twice
    copies.settle(4)
    assert copies.outcome(again) == SETTLED


def test_a_withdrawn_copy_is_no_longer_held_unless_it_was_settled_meanwhile() -> None:
    copies = DirectCopies()
    one, two, again = copies.arrived(*copy(1)), copies.arrived(*copy(2)), copies.arrived(*copy(1))
    assert copies.withdraw(one) is False  # refused: not held, not taken over later
    copies.sequenced(key(1), 3)  # the notifier's record is the other copy's of the same bundle
    copies.settle(3)
    assert copies.outcome(again) == SETTLED
    copies.sequenced(key(2), 4)
    assert copies.withdraw(two) is False  # applied but not settled: refused, and forgotten
    copies.settle(4)
    assert copies.outcome(two) == GONE
    three = copies.arrived(*copy(3))
    copies.sequenced(key(3), 5)
    copies.settle(5)
    assert copies.withdraw(three) is True  # settled before the refusal: acknowledge it
    assert copies.held == 0 and copies.take() == []


def test_copies_dropped_past_the_bound_are_never_settled() -> None:
    copies = DirectCopies(keep=1)
    first = copies.arrived(*copy(1))
    copies.arrived(*copy(2))
    assert copies.dropped == 1
    assert copies.outcome(first) == GONE


def test_a_standby_never_relays_a_bundle_clients_sent_it_in_full_active_active(tmp_path: Path) -> None:
    run = Run(tmp_path / "a")
    relayed: list[object] = []
    run.journal.copies = DirectCopies()
    run.journal.follow(lambda stream, rows, timestamps, senders=(): relayed.append(rows))
    position = run.journal.position
    answers: list[object] = []

    def send() -> None:
        try:
            answers.append(run.journal.send("In", [("k", 1)], 1))
        except NotLeading as exc:
            answers.append(exc)

    sender = threading.Thread(target=send)
    sender.start()  # it waits: the copy is in memory alone
    wait_until(lambda: run.journal.copies is not None and run.journal.copies.held == 1)
    assert relayed == [] and answers == [] and run.journal.position == position
    run.journal.lead(2, None)  # it takes over: the copy is processed, then bundles are sequenced
    assert run.journal.position == position + 1 and answers == []  # not settled yet
    run.journal.durable(run.journal.position)  # settled as the notifier (no standbys here)
    sender.join(5)
    assert answers == [0]
    assert run.journal.resends is None
    run.journal.send("In", [("k", 2)], 2)
    assert run.journal.position == position + 2 and relayed == []


def test_a_copy_the_notifier_never_sequences_is_refused_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "COPY_WAIT_SECONDS", 0.05)
    run = Run(tmp_path / "a")
    run.journal.copies = DirectCopies()
    run.journal.follow(lambda stream, rows, timestamps, senders=(): None)
    with pytest.raises(NotLeading, match="did not acknowledge this bundle within 0.05 s; send it again"):
        run.journal.send("In", [("k", 1)], 1)
    assert run.journal.copies.held == 0  # a takeover will not process what its client was refused
    assert run.journal.lead(2, None) == run.journal.position  # nothing taken over
