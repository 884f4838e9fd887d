"""A full-active-active standby's own copies: held until the notifier's record of the same
bundle arrives (or dropped when it came first), the rest taken over in arrival order."""

from __future__ import annotations

from pathlib import Path

from ha.resends import DirectCopies, digest
from tests.support.journals import Run


def bundle(n: int) -> tuple[str, list[tuple[object, ...]], list[int]]:
    return "S", [("v", n)], [n]


def key(n: int) -> int:
    stream, rows, ts = bundle(n)
    return digest(stream, ts, rows)


def test_copies_the_notifier_sequenced_are_dropped_whichever_came_first() -> None:
    copies = DirectCopies()
    copies.arrived(*bundle(1))
    copies.arrived(*bundle(2))
    copies.sequenced(key(1))  # the notifier's record after the copy
    copies.sequenced(key(3))  # before the copy
    copies.arrived(*bundle(3))
    assert copies.held == 1
    assert copies.take() == [bundle(2)]  # never sequenced: the new notifier processes it
    assert copies.held == 0 and copies.take() == []


def test_identical_bundles_count_one_by_one_and_the_holding_is_bounded() -> None:
    copies = DirectCopies(keep=3)
    for n in (1, 1, 2):
        copies.arrived(*bundle(n))
    copies.sequenced(key(1))
    assert copies.take() == [bundle(1), bundle(2)]
    for n in range(5):
        copies.arrived(*bundle(n))
    assert copies.held == 3 and copies.dropped == 2
    assert copies.take() == [bundle(2), bundle(3), bundle(4)]


def test_a_taken_over_node_forgets_which_records_came_before_their_copies() -> None:
    copies = DirectCopies()
    copies.sequenced(key(1))  # a record before its copy, then this node takes over
    assert copies.take() == []
    copies.arrived(*bundle(1))  # leading later, then standby again: a new copy is held, not swallowed
    assert copies.held == 1


def test_a_standby_never_relays_a_bundle_clients_sent_it_in_full_active_active(tmp_path: Path) -> None:
    run = Run(tmp_path / "a")
    relayed: list[object] = []
    run.journal.copies = DirectCopies()
    run.journal.follow(lambda stream, rows, timestamps: relayed.append(rows))
    position = run.journal.position
    assert run.journal.send("In", [("k", 1)], 1) == 0
    assert relayed == [] and run.journal.copies.held == 1 and run.journal.position == position
    run.journal.lead(2, None)  # it takes over: the copy is processed, then bundles are sequenced
    run.journal.send("In", [("k", 2)], 2)
    assert run.journal.position == position + 2 and relayed == []
