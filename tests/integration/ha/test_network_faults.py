"""Faults of the network and of the processes around a redundant plan, made on loopback by the
test itself (`tests.support.proxy`), each bounded in time, on two real `cepheus server`
members running the rooms plan with MariaDB for the registry and the sink.

A client feeds readings all along (`ClusterFeeder`, about 1,000 events/s, starting at the
notifier); a `Watch` samples both members' roles and written counts and the sink's rows every
20 ms. Every test heals the fault, lets the client go on for a while and checks the sink holds
exactly one uninterrupted run's output; each prints its figures on one line.

1. the notifier paused (SIGSTOP) past its lease, then resumed: the standby takes over, the old
   notifier steps down as it wakes, and nothing it writes after waking is accepted;
2. the members partitioned from each other (both still reach the registry): the lease holder
   keeps notifying, the other never does;
3. the notifier cut off from the registry alone: it stops notifying before its lease can run
   out, the standby takes over, and their accepted writes do not overlap;
4. the registry down for both: notifications stop within a lease and resume after;
5. the sink down: no failover, the adapter buffers and delivers everything afterwards; with a
   buffer far smaller than the outage's outputs, the members stop acknowledging the client
   (backpressure) instead of dropping outputs, and the client's resends are taken afterwards.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import HA
from tests.support.cluster import ClusterFeeder, plan_status, status_of
from tests.support.databases import isolated_database
from tests.support.faults import Rig, Watch, fenced_in_log, log_size, wait_until
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import batch_count

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.mysql]

LEASE = HA().lease_ms / 1000  # the defaults of conf/cepheus.toml: lease 2 s, renewed every 0.25 s
RENEW = HA().renew_ms / 1000
FAULT = 5.0  # how long a partition or an outage lasts: past a lease and the membership's dead_ms


@pytest.fixture
def mode() -> str:
    """The plan's `ha_mode` (the lease and fence paths are the same in every mode: each test
    that does not run in all three runs in one of them, so that each mode meets each kind of fault)."""
    return "failover"


@pytest.fixture
def buffer_events() -> int:
    """The sink adapter's buffer (0: the node's default, 100,000 records)."""
    return 0


@pytest.fixture
def batch_events() -> int:
    """The rows of one sink transaction (7: batches cut often, where the faults can hit them)."""
    return 7


@pytest.fixture
def rig(tmp_path: Path, mysql_url: str, mode: str, buffer_events: int, batch_events: int) -> Iterator[Rig]:
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        rig = Rig(tmp_path, registry, sink, mode, buffer_events, batch_events)
        try:
            yield rig
        finally:
            rig.close()


def say(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n{line}")


@pytest.mark.parametrize("mode", ["failover", "active-active", "full-active-active"])
def test_a_notifier_paused_past_its_lease_steps_down_and_none_of_its_late_writes_is_accepted(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    notifier, standby = rig.start()
    watch = rig.watch
    assert watch is not None and notifier.process is not None
    old = rig.nodes.index(notifier)
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    lease_before = rig.lease()
    fence_before = rig.fence_epoch()
    since = log_size(notifier)
    paused = time.monotonic()
    notifier.process.send_signal(signal.SIGSTOP)
    try:
        takeover = wait_until(lambda: plan_status(standby).get("role") == "notifier", 10)
        lease_after = rig.lease()
        time.sleep(max(0.0, 2 * LEASE - (time.monotonic() - paused)))  # paused two leases long
    finally:
        notifier.process.send_signal(signal.SIGCONT)
    woke = time.monotonic()
    stepped_down = wait_until(lambda: plan_status(notifier).get("role") == "standby", 10)
    time.sleep(2.0)
    sent = rig.finish()
    # what the old notifier wrote after it woke, until it notified again (under a new lease); the
    # sample that first shows it notifier again may count that lease's first writes (a report
    # reads the counters before the role), so it is left out
    again = watch.first(old, "notifier", woke) or float("inf")
    first_answer = next(at for at, v in watch.written[old] if at >= woke and v is not None)
    late = [at for at in watch.increases(watch.written[old], first_answer, again) if at < again]
    written_at_wake = watch.at(watch.written[old], woke)
    before = [v for at, v in watch.written[old] if at < paused and v is not None]
    in_flight = (written_at_wake or 0) - (before[-1] if before else 0)  # seen last before, first after
    written_after = max((v for at, v in watch.written[old] if at < again and v is not None), default=0)
    fenced = fenced_in_log(notifier, since)
    say(
        capsys,
        f"[fault: SIGSTOP of the notifier {woke - paused:.1f} s] takeover {_s(takeover)} after the pause; "
        f"stepped down {_s(stepped_down)} after SIGCONT (target under 1 s); old-epoch writes accepted after waking: "
        f"{written_after - (written_at_wake or 0)} records ({len(late)} samples grew), refused by "
        f"the fence {fenced} records, written between the last look before the pause and the first "
        f"after it {in_flight} records; lease {lease_before} -> {lease_after}, sink fence epoch "
        f"{fence_before} -> {rig.fence_epoch()}; role changes {_changes(watch.changes(paused), paused)}; "
        f"both notifier {watch.overlap():.2f} s; bundles resent {feeder.resent}; "
        f"{rig.where(sent)}",
    )
    rig.check(sent)
    assert takeover is not None, "the standby did not take over while the notifier was paused"
    assert stepped_down is not None, "the old notifier did not step down after SIGCONT"  # (how fast: printed)
    assert not late, f"the old notifier wrote {written_after - (written_at_wake or 0)} records after waking"
    assert lease_before is not None and lease_after is not None
    assert lease_after[0] == standby.sections["node"]["id"] and lease_after[1] > lease_before[1]
    assert (rig.fence_epoch() or 0) >= lease_after[1]


@pytest.mark.parametrize(("how", "mode"), [("blackhole", "active-active"), ("cut", "full-active-active")])
def test_a_partition_between_the_members_changes_no_role_while_both_reach_the_registry(
    rig: Rig, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """`blackhole`: packets lost, as most partitions; `cut`: connections reset and refused, as a
    firewall that rejects (the members' processes are alive all along)."""
    notifier, standby = rig.start()
    watch = rig.watch
    assert watch is not None
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    lease_before = rig.lease()
    cut = time.monotonic()
    for proxy in rig.cluster_proxies:
        getattr(proxy, how)()
    time.sleep(FAULT)
    healed = time.monotonic()
    for proxy in rig.cluster_proxies:
        proxy.heal()
    back_in_sync = wait_until(lambda: _in_sync(rig), 20)
    lease_after = rig.lease()
    sent = rig.finish()
    changes = watch.changes(cut)
    gap = watch.gap(watch.rows, cut, healed)
    acked = [t for t in feeder.acked if cut <= t <= healed + 5]
    say(
        capsys,
        f"[fault: partition between the members ({how}) {healed - cut:.1f} s] role changes "
        f"{_changes(changes, cut)}; both notifier {watch.overlap():.2f} s; lease {lease_before} -> "
        f"{lease_after}; longest pause of sink writes during it {gap:.2f} s; bundles acknowledged "
        f"during it {sum(1 for t in acked if t <= healed)}; standby back in sync {_s(back_in_sync)} "
        f"after healing; bundles resent {feeder.resent}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert watch.overlap() == 0, f"both members notified at once for {watch.overlap():.2f} s"
    assert not changes, f"roles changed: {changes}"
    assert lease_before == lease_after
    assert back_in_sync is not None


@pytest.fixture
def chained(tmp_path: Path, mysql_url: str) -> Iterator[Rig]:
    """The rig with a second redundant plan, `landing`, between the rooms plan and the sink."""
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        rig = Rig(tmp_path, registry, sink, "failover", chained=True)
        try:
            yield rig
        finally:
            rig.close()


def _landing_on(node: NodeProcess) -> None:
    """Make `node` the notifier of the `landing` plan."""
    node.cli("cluster", "move", "landing", node.sections["node"]["id"])
    wait_for(lambda: status_of(node, "landing").get("role") == "notifier", 20, "landing to move")


def test_a_chained_plan_led_across_a_partition_gets_every_output_once_it_heals(
    chained: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rooms plan notifies on one member, the plan importing its outputs (`landing`, which
    writes the sink) on the other; the members are cut off from each other (connections reset)
    for longer than a relay waits. The outputs that could not reach `landing` meanwhile are
    handed on when the partition heals, none dropped (they were logged and dropped before)."""
    rig = chained
    notifier, standby = rig.start()
    _landing_on(standby)
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    cut = time.monotonic()
    for proxy in rig.cluster_proxies:
        proxy.cut()
    time.sleep(2 * FAULT)  # past a relay's deadline (5 s)
    roles = [(plan_status(n).get("role"), status_of(n, "landing").get("role")) for n in (notifier, standby)]
    healed = time.monotonic()
    for proxy in rig.cluster_proxies:
        proxy.heal()
    back_in_sync = wait_until(lambda: _in_sync(rig), 30)
    sent = rig.finish()
    say(
        capsys,
        f"[fault: chained plans on two members, partition {healed - cut:.1f} s] roles (rooms, landing) "
        f"at its end {roles}; standby back in sync {_s(back_in_sync)} after healing; bundles resent "
        f"{feeder.resent}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert roles == [("notifier", "standby"), ("standby", "notifier")], roles


def test_a_sink_outage_holds_up_the_delivered_reports_of_only_the_plan_that_writes_to_it(
    chained: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both plans notify on one member: the rooms plan's outputs go to `landing` (a link), and
    only `landing` writes the sink. With the sink down, the rooms plan's outputs are still
    reported delivered (its standby forgets them), while `landing`'s wait in its held outputs:
    before, one adapter that could not flush held up the reports of every plan of the node."""
    rig = chained
    notifier, standby = rig.start()
    _landing_on(notifier)
    rig.feed(notifier)
    time.sleep(1.0)
    rig.sink_proxy.cut()
    time.sleep(FAULT)
    held = (
        plan_status(standby).get("held_outputs"),
        status_of(standby, "landing").get("held_outputs"),
    )
    rig.sink_proxy.heal()
    sent = rig.finish()
    say(
        capsys,
        f"[fault: sink down {FAULT:.0f} s, two plans on one notifier] held outputs on the standby at "
        f"its end: rooms {held[0]}, landing {held[1]}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert isinstance(held[0], int) and isinstance(held[1], int), held
    assert held[1] > 2_000, f"the outage held up too little to tell: {held}"
    assert held[0] < held[1] / 4, f"the rooms plan's delivered reports waited for landing's sink: {held}"


def test_a_notifier_cut_off_from_the_registry_stops_before_its_lease_runs_out_and_the_standby_takes_over(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    notifier, standby = rig.start()
    watch = rig.watch
    assert watch is not None
    old, new = rig.nodes.index(notifier), rig.nodes.index(standby)
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    lease_before = rig.lease()
    cut = time.monotonic()
    rig.registry_proxies[old].cut()
    stepped_down = wait_until(lambda: plan_status(notifier).get("role") == "standby", 10)
    # the lease runs out in the registry at most a lease after the cut: time enough to take over
    takeover = wait_until(lambda: plan_status(standby).get("role") == "notifier", 3 * LEASE)
    taken = time.monotonic()
    time.sleep(2.0)
    lease_during = rig.lease()
    healed = time.monotonic()
    rig.registry_proxies[old].heal()
    sent = rig.finish()
    old_writes = watch.increases(watch.written[old], cut, healed)  # then it may notify again
    new_writes = watch.increases(watch.written[new], cut)
    last_old = max(old_writes, default=cut) - cut
    first_new = min(new_writes, default=float("inf")) - cut
    say(
        capsys,
        f"[fault: notifier cut off from the registry {healed - cut:.1f} s] it stepped down after "
        f"{_s(stepped_down)} (lease {LEASE:.1f} s, renewed every {RENEW:.2f} s), its last accepted write "
        f"seen {last_old:.2f} s after the cut; takeover {_s(None if takeover is None else taken - cut)} "
        f"after the cut, first write of the new notifier {first_new:.2f} s after; both notifier "
        f"{watch.overlap():.2f} s; lease {lease_before} -> {lease_during}; role changes "
        f"{_changes(watch.changes(cut), cut)}; bundles resent {feeder.resent}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert stepped_down is not None and stepped_down < LEASE - RENEW, f"stepped down after {stepped_down} s"
    assert last_old < LEASE - RENEW, f"the cut-off notifier still wrote {last_old:.2f} s after the cut"
    assert takeover is not None, "the standby did not take over from the notifier cut off from the registry"
    assert last_old < first_new, "the accepted writes of the two notifiers overlap"
    assert watch.overlap() == 0


@pytest.mark.parametrize("mode", ["full-active-active"])
def test_a_registry_outage_stops_notifications_within_a_lease_and_loses_nothing(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    notifier, _ = rig.start()
    watch = rig.watch
    assert watch is not None
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    cut = time.monotonic()
    for proxy in rig.registry_proxies:
        proxy.cut()
    time.sleep(FAULT)
    healed = time.monotonic()
    for proxy in rig.registry_proxies:
        proxy.heal()
    resumed = wait_until(lambda: watch.increases(watch.rows, healed), 20)
    rig.steady(20)
    sent = rig.finish()
    writes = watch.increases(watch.rows, cut, healed)
    stopped = max(writes, default=cut) - cut
    acked = [t for t in feeder.acked if cut < t < healed]
    say(
        capsys,
        f"[fault: registry down for both {healed - cut:.1f} s] last sink write {stopped:.2f} s after "
        f"the outage began (lease {LEASE:.1f} s); writes resumed {_s(resumed)} after it ended; bundles "
        f"acknowledged during it {len(acked)}; role changes {_changes(watch.changes(cut), cut)}; both "
        f"notifier {watch.overlap():.2f} s; bundles resent {feeder.resent}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert stopped < LEASE, f"the sink was still written {stopped:.2f} s into the registry outage"
    assert resumed is not None, "no write after the registry came back"
    assert watch.overlap() == 0


@dataclass
class _SinkDown:
    notifier: NodeProcess
    old: int  # its index
    watch: Watch
    feeder: ClusterFeeder
    lease_before: tuple[str, int] | None
    resent_before: int
    cut: float
    healed: float


def _sink_down(rig: Rig, seconds: float) -> _SinkDown:
    """Start the pair and the client; after a second, the sink down for `seconds`, then back."""
    notifier, _ = rig.start()
    assert rig.watch is not None
    feeder = rig.feed(notifier)
    time.sleep(2.0)
    lease_before, resent_before = rig.lease(), feeder.resent
    cut = time.monotonic()
    rig.sink_proxy.cut()
    time.sleep(seconds)
    healed = time.monotonic()
    rig.sink_proxy.heal()
    old = rig.nodes.index(notifier)
    return _SinkDown(notifier, old, rig.watch, feeder, lease_before, resent_before, cut, healed)


@pytest.mark.parametrize("mode", ["active-active"])
def test_a_sink_outage_fails_nothing_over_and_the_adapter_delivers_everything_after(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    down = _sink_down(rig, FAULT)
    notifier, watch, feeder, cut, healed = down.notifier, down.watch, down.feeder, down.cut, down.healed
    lease_before, old = down.lease_before, down.old
    drained = wait_until(
        lambda: watch.increases(watch.rows, healed) and plan_status(notifier).get("role") == "notifier", 20
    )
    lease_after = rig.lease()
    sent = rig.finish()
    changes = watch.changes(cut)
    acked = [t for t in feeder.acked if cut < t < healed]
    say(
        capsys,
        f"[fault: sink down {healed - cut:.1f} s] role changes {_changes(changes, cut)}; lease "
        f"{lease_before} -> {lease_after}; bundles acknowledged during it {len(acked)}; records held by "
        f"the adapter at most {watch.peak(watch.pending[old], cut, healed + 1)}; writes resumed "
        f"{_s(drained)} after it ended; bundles resent {feeder.resent}; {rig.where(sent)}",
    )
    rig.check(sent)
    assert not changes, f"roles changed: {changes}"
    assert lease_before == lease_after
    assert watch.peak(watch.pending[old], cut, healed) > 0, "the adapter held nothing while the sink was down"
    assert drained is not None


@pytest.mark.parametrize("mode", ["failover"])
def test_a_member_restarted_alone_from_its_snapshot_takes_over_and_delivers_what_the_notifier_had_not(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    """While the sink is down: the client stops, the notifier is paused (so it appends no record
    the standby lacks), the standby stops gracefully (a final snapshot) and the notifier is
    killed with its outputs unwritten. The standby then starts
    alone: no notifier to follow, but its log holds every acknowledged record, so it takes over
    (before, it waited forever for a stream to follow) and must deliver the outputs of the
    records before its snapshot, which no replay of its log makes again: only its snapshot
    kept them (before, they were lost)."""
    notifier, standby = rig.start()
    feeder = rig.feed(notifier)
    time.sleep(1.0)
    rig.sink_proxy.cut()  # from now on the notifier's outputs wait in its adapter
    time.sleep(1.5)
    sent = feeder.stop()
    wait_for(lambda: _in_sync(rig), 20, "the standby in sync with everything acknowledged")
    assert notifier.process is not None
    os.kill(notifier.process.pid, signal.SIGSTOP)
    standby.stop()
    notifier.kill()
    started = time.monotonic()
    standby.start()
    wait_for(lambda: plan_status(standby).get("role") == "notifier", 30, "the restarted member to take over")
    took = time.monotonic() - started
    held = plan_status(standby).get("held_outputs")
    rig.sink_proxy.heal()
    time.sleep(0.5)
    wait_for(lambda: batch_count(rig.sink) >= sent, 30, "every reading in a time batch")
    say(
        capsys,
        f"[fault: the sink down, the standby restarted from its snapshot, the notifier killed] it took "
        f"over {took:.1f} s after it started, holding {held} outputs; {rig.where(sent)}",
    )
    rig.check(sent)


SMALL_BUFFER = 300  # records: the rooms plan writes 2,000-6,000 a second, so a 5 s outage is 30 times more
OUTAGE = float(os.environ.get("CEPHEUS_OUTAGE_SECONDS", FAULT))  # `make outage` runs 60


@pytest.mark.parametrize("buffer_events", [SMALL_BUFFER])
@pytest.mark.parametrize(
    "batch_events", [100]
)  # batches of 7 (two statements and a fence each) top out near 4,000 rows/s
@pytest.mark.parametrize("mode", ["failover", "active-active", "full-active-active"])
def test_a_sink_outage_longer_than_the_buffer_pushes_back_on_the_client_and_loses_nothing(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    down = _sink_down(rig, OUTAGE)
    watch, feeder, cut, healed, old = down.watch, down.feeder, down.cut, down.healed, down.old
    before = [v for at, v in watch.rows if cut - 1.0 <= at <= cut and v is not None]
    rate = (before[-1] - before[0]) / 1.0 if len(before) > 1 else 0.0
    resent_before = down.resent_before
    drained = wait_until(lambda: watch.increases(watch.rows, healed), 20)
    time.sleep(1.0)  # the client's refused bundles are taken again
    memory = [node.peak_memory_mib() for node in rig.nodes]
    sent = rig.finish()
    pushed_back = sum(node.health()["pushed_back"] for node in rig.nodes)
    changes = watch.changes(cut)
    acked = [t for t in feeder.acked if cut < t < healed]
    longest = max((b - a for a, b in zip(feeder.acked, feeder.acked[1:], strict=False)), default=0.0)
    peak = watch.peak(watch.pending[old], cut, healed + 1)
    say(
        capsys,
        f"[fault: sink down {healed - cut:.1f} s, adapter buffer {SMALL_BUFFER}] load before it "
        f"{rate:,.0f} rows/s into the sink; role changes "
        f"{_changes(changes, cut)}; bundles acknowledged during it {len(acked)}; longest wait between two "
        f"acknowledgements {longest:.1f} s; the members' peak memory {memory[0]:.0f} / {memory[1]:.0f} MiB; "
        f"records held by the "
        f"adapter at most {peak}; writes resumed {_s(drained)} after it ended; events pushed back "
        f"{pushed_back}; bundles refused and resent {feeder.resent - resent_before}; {rig.where(sent)}",
    )
    rig.check(sent)  # nothing acknowledged was lost, nothing written twice
    assert not changes, f"roles changed: {changes}"
    # pushed back: refused, or (relayed by a standby that tries again) held until there was room
    assert pushed_back > 0, "no bundle was pushed back"
    # the bound holds but for what the bundles admitted before it was reached produced
    assert SMALL_BUFFER <= peak < SMALL_BUFFER + 200, f"the adapter held {peak} records"
    assert drained is not None


def _in_sync(rig: Rig) -> bool:
    try:
        rig.steady(0.1)
    except AssertionError:
        return False
    return True


def _changes(changes: list[tuple[float, str, str]], since: float) -> list[str]:
    return [f"+{at - since:.2f}s {member} {role}" for at, member, role in changes]


def _s(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.2f} s"
