"""A full-active-active standby's own copies: held until the notifier's record of the same
bundle arrives (or dropped when it came first), the rest taken over in arrival order."""

from __future__ import annotations

from app.node.resends import DirectCopies, digest


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
