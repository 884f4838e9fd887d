"""How often a standby reads who holds a plan's lease: every renewal interval, but closely
right after the notifier's stream ended, when a graceful stop has just released it."""

from __future__ import annotations

from ha.lease import LOOK_CLOSELY_SECONDS, lease_lookup_interval


def test_a_standby_reads_the_lease_every_renewal_while_the_notifier_streams() -> None:
    assert lease_lookup_interval(0.25, now=100.0, stream_ended_at=None) == 0.25
    assert lease_lookup_interval(0.25, now=100.0, stream_ended_at=100.0 - LOOK_CLOSELY_SECONDS) == 0.25


def test_right_after_the_notifiers_stream_ended_it_reads_the_lease_every_50_ms() -> None:
    assert lease_lookup_interval(0.25, now=100.0, stream_ended_at=99.9) == 0.05
    assert lease_lookup_interval(0.02, now=100.0, stream_ended_at=99.9) == 0.02  # never less often
