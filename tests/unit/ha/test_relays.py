"""A notifier answers a relayed bundle sent again as it answered the first attempt."""

from __future__ import annotations

from ha.relays import Attempt, RelayedBundles


def test_an_id_is_taken_once_forgotten_when_refused_and_kept_for_the_last_keep_ids() -> None:
    relayed = RelayedBundles(keep=2)
    status, first = relayed.begin("b/x:1")
    assert status is Attempt.NEW and first
    assert relayed.begin("b/x:1") == (Attempt.PENDING, 0)  # still being processed: wait for it
    relayed.taken("b/x:1", first)
    assert relayed.begin("b/x:1") == (Attempt.TAKEN, 0)
    status, second = relayed.begin("b/x:2")
    relayed.refused("b/x:2", second)
    assert relayed.status("b/x:2") is Attempt.NEW  # a refused attempt's repeat is processed anew
    status, third = relayed.begin("b/x:2")
    relayed.refused("b/x:2", second)  # a late word on an earlier processing changes nothing
    assert relayed.status("b/x:2") is Attempt.PENDING
    relayed.taken("b/x:2", third)
    relayed.begin("b/x:3")
    assert relayed.status("b/x:1") is Attempt.NEW  # past `keep`, the oldest ids are forgotten
