"""A takeover's resent bundles are recognised once each, within the window only."""

from __future__ import annotations

from app.node.resends import Resends, digest


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
