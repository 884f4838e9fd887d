"""The HA simulator: it sees each known loss and duplicate path on its schedule, a seed replays
exactly, and thousands of seeded schedules meet nothing but the known paths.

`CEPHEUS_SIM_SCHEDULES` sets how many schedules the broad run takes (default 20,000, on two
processes); `make sim-long` runs a million and prints the figures."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import pytest

from engine.events import Event
from ha.acks import Acknowledgements
from ha.gate import OutputGate
from ha.lease import Holder
from ha.messages import CarriedOutput, Live, State
from ha.ports import Lease
from ha.resends import SETTLED, DirectCopies, Resends
from ha.roles import PlanRole
from ha.seat import PlanSeat
from tests.sim.known import FIXED, OPEN, RESEND_AFTER_4096, Path, classify
from tests.sim.member import Disk, Fence, Member
from tests.sim.outside import Adapter, Registry, Write
from tests.sim.run import report, run_many
from tests.sim.scenario import Config, Sim
from tests.sim.world import Net, World

SCHEDULES = int(os.environ.get("CEPHEUS_SIM_SCHEDULES", "20000"))


def test_the_simulator_sees_each_open_path_on_its_schedule() -> None:
    for path in OPEN:  # none open today: each found path is FIXED below, with its schedule
        violations = Sim(path.seed, path.config).run()
        assert any(path.matches(v) for v in violations), (path.name, violations)


def test_every_fixed_path_passes_its_schedule() -> None:
    for path in FIXED:
        violations = Sim(path.seed, path.config).run()
        if path.clean:
            assert violations == [], path.name
        else:  # a foreign client's schedule: only the content digest's open paths may show
            assert not any(path.matches(v) for v in violations), (path.name, violations)
            assert all(classify(v) is not None for v in violations), (path.name, violations)


def _heartbeat_fin_is_death(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a member whose heartbeat connection closed in order is gone at once."""

    def probed(self: Member, peer: str) -> None:
        self.membership.lost(peer, self.world.now)
        self._nudge()

    monkeypatch.setattr(Member, "_probed", probed)


def _restart_keeps_the_old_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a restarted member does not give up its predecessor's leases, and an
    expired answer naming it counts as a grant."""
    init = Member.__init__

    def started(self: Member, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.predecessor_gone = True

    asked = Holder.asked

    def expired_counts(self: Holder, sent: float, answer: Lease | None) -> bool:
        if answer is not None and answer.holder == self.node and answer.ttl_ms <= 0:
            answer = dataclasses.replace(answer, ttl_ms=1)
        return asked(self, sent, answer)

    monkeypatch.setattr(Member, "__init__", started)
    monkeypatch.setattr(Holder, "asked", expired_counts)


def _death_held_against_any_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a death seen at any time counts against whatever lease the member holds."""
    saw = PlanRole.saw

    def seen_at_the_start(self: PlanRole, lease: Lease, now: float) -> None:
        saw(self, lease, 0.0)

    monkeypatch.setattr(PlanRole, "saw", seen_at_the_start)


def _copies_acknowledged_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a full-active-active standby acknowledges its copy as soon as it holds it."""
    monkeypatch.setattr(DirectCopies, "outcome", lambda self, ticket: SETTLED)


def _full_buffers_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a full adapter refuses outputs, and nothing pushes back on the input."""
    init = Adapter.__init__

    def dropping(self: Adapter, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.block = False

    monkeypatch.setattr(Adapter, "__init__", dropping)
    monkeypatch.setattr(Member, "has_room", property(lambda self: True))


def _refused_outputs_wait_for_a_next_notifier(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a notifier that holds its lease again after a lapse does not deliver again
    what the fence refused meanwhile."""
    monkeypatch.setattr(OutputGate, "redeliver", lambda self, fence=None: 0)


def _power_cut_keeps_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a log that lost its unsynced tail keeps its id and its term."""

    def cut(self: Sim, name: str, disk: Disk) -> None:
        del disk.entries[disk.durable :]

    monkeypatch.setattr(Sim, "_power_cut", cut)


def _identities_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: every client's resends are told by the content digest alone."""
    monkeypatch.setattr(Member, "named", staticmethod(lambda bundle: False))


def _streams_without_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a quiet replication stream sends nothing, and a standby waits on it forever."""
    monkeypatch.setattr(Member, "_keepalive_loop", lambda self: None)
    monkeypatch.setattr(Member, "_silence_check", lambda self, conn: None)


def _caught_up_only_by_a_live_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: only a live stream (or one that ended live) makes a member able to ask."""
    monkeypatch.setattr(PlanSeat, "caught_up", lambda self, streamed, complete, held: streamed and complete)


def _a_term_taken_up_again_starts_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: every term a member starts notifying in gets a new acknowledgement rule."""
    monkeypatch.setattr(
        PlanSeat,
        "acknowledgements",
        lambda self, epoch, ack_timeout=1.0: Acknowledgements(self.plan, ack_timeout),
    )


def _refused_records_wait_for_a_later_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: only a client's bundle settles records, and releases their outputs."""
    monkeypatch.setattr(PlanSeat, "tail_to_settle", lambda self, released, appended, settling: None)


def _fences_pass_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: every output's lease check is its own, so a write refused while the lease
    lapsed does not keep later ones out once it holds again, and a redelivery goes under the
    term's fence."""

    def emit(
        self: Member, stream: str, events: list[Event], origin: tuple[str, int, int], fence: Fence
    ) -> None:
        log_id, position, index = origin
        writes = [
            Write(self.name, fence.epoch, (log_id, position, index + i), (e.data[0], e.data[1]))
            for i, e in enumerate(events)
        ]

        def holds() -> bool:
            return self.up and self.epoch == fence.epoch and self.role.holder.holds(self.world.now)

        self.tx.publish(writes, holds)
        self.plain.publish(writes, holds)

    monkeypatch.setattr(Member, "_emit", emit)
    redeliver = OutputGate.redeliver
    monkeypatch.setattr(OutputGate, "redeliver", lambda self, fence=None: redeliver(self))


def _a_grant_mid_join_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a standby granted the lease notifies, whatever its gate holds by then."""
    monkeypatch.setattr(PlanSeat, "takes_over", lambda self, complete, now: True)


def _inherited_outputs_go_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a new notifier delivers every output it holds as it takes over, and
    settles only for full-active-active copies waiting."""

    def at_once(self: PlanSeat, after: int, delivered: int, taken_through: int) -> tuple[int, int]:
        return after, taken_through if taken_through == after else 0

    monkeypatch.setattr(PlanSeat, "takeover_delivery", at_once)


def _refused_records_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a foreign client's bundle is a resend only after a takeover or a relay."""
    monkeypatch.setattr(Resends, "unanswered", lambda self, bundle, now_ms: None)


def _identities_and_refusals_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before either fix: every client is told by content, and only after a takeover or a relay."""
    _identities_ignored(monkeypatch)
    _refused_records_forgotten(monkeypatch)


def _joining_reads_no_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a round reads the lease only when it was never read or a stream ended."""
    monkeypatch.setattr(Member, "_reads_lease", lambda self: self.seat.must_look_up)


def _joins_outlast_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a join is left only when its stream ends (its silence deadline, 10 s)."""
    monkeypatch.setattr(PlanSeat, "leaves_join", lambda self, joined_under, live: False)


def _states_replace_the_copy_on_arrival(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a standby installs a state as it arrives, and its gate vouches for what
    the state covers only once the stream is live (the carried outputs all came)."""
    follow = Member._follow
    covers: dict[int, int] = {}

    def eager(self: Member, conn: Any, message: Any, extra: Any) -> None:
        if conn is self.follow_conn and isinstance(message, State | CarriedOutput):
            self.heard_at = self.world.now
        if conn is self.follow_conn and isinstance(message, State):
            self.ended_live = False
            self._adopt(message, extra)
            self.gate.reset(message.position, message.delivered)
            covers[id(self.subscription)] = message.covers
        elif conn is self.follow_conn and isinstance(message, CarriedOutput):
            position, stream, events = extra
            self.gate.hold(position, stream, events, (message.log_id, message.position, message.index))
        else:
            if conn is self.follow_conn and isinstance(message, Live) and id(self.subscription) in covers:
                self.gate.carried_in(covers.pop(id(self.subscription)))
            follow(self, conn, message, extra)

    monkeypatch.setattr(Member, "_follow", eager)


def _joins_read_no_lease_and_outlast_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before both fixes of a join stuck on a vanished notifier: its member reads the lease
    only when a stream ended (it may take over), and it leaves the join only at its deadline."""
    _joining_reads_no_lease(monkeypatch)
    _joins_outlast_the_lease(monkeypatch)


def _a_grant_mid_join_is_taken_on_a_torn_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before both fixes: a state replaces the standby's copy as it arrives, and a grant while
    the outputs carried with it are still on their way is taken."""
    _a_grant_mid_join_is_taken(monkeypatch)
    _states_replace_the_copy_on_arrival(monkeypatch)


def _delivered_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before its fix: a restart knows nothing written, and holds every output of its log."""
    monkeypatch.setattr(Member, "_keep_delivered", lambda self, position: None)


def _refused_records_wait_for_a_later_one_after_a_full_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its schedule fills the gate by a restart's replay: undone with the delivered mark too."""
    _refused_records_wait_for_a_later_one(monkeypatch)
    _delivered_never_kept(monkeypatch)


UNDO: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "a member restarted with its log replays every output of it into its gate, past the gate's "
    "bound: it drops the oldest, cannot vouch for them, and when no other member can take over "
    "neither can it (met by two members killed together)": _delivered_never_kept,
    "a standby installs the notifier's state as it arrives: a join cut before the outputs carried "
    "with it came leaves a member that holds acknowledged records but not their outputs (and "
    "replaced any whole copy it had), and the plan waits for an operator": (
        _states_replace_the_copy_on_arrival
    ),
    "a standby joining a notifier whose host vanished stays on that dead connection for the "
    "join's 10 s after a new notifier took over: in full-active-active its clients wait for its "
    "answers, and the schedule ends before they all got one": _joins_outlast_the_lease,
    "a standby joining a notifier whose host vanished reads the lease only once the join's "
    "silence deadline ends it: the plan has no notifier for 10 s": _joins_read_no_lease_and_outlast_it,
    "a foreign client's bundle refused after it was logged and processed is processed again when resent": (
        _refused_records_forgotten
    ),
    "a standby granted the lease while it joins from the notifier's state, before the outputs "
    "the notifier carries after it have arrived, notifies without them": _a_grant_mid_join_is_taken_on_a_torn_copy,
    "a new notifier delivers the outputs of records it inherited before the lease requires them: "
    "a member lacking them is granted the lease next and processes the client's resend again": (
        _inherited_outputs_go_at_once
    ),
    "a notifier's fence that refused a write while its lease lapsed lets later outputs pass once "
    "it holds again: the sink's marks then skip the refused ones when they are delivered again": _fences_pass_again,
    "outputs of records refused after they were appended hold the gate until a later record "
    "settles: with the gate full none comes, and the plan refuses every bundle for good": (
        _refused_records_wait_for_a_later_one_after_a_full_replay
    ),
    "a notifier that renewed its own lapsed lease forgets which standbys of the term may lack "
    "what it acknowledges next": _a_term_taken_up_again_starts_afresh,
    "a member holding every acknowledged record never asks for the lease if its last subscription "
    "ended before it was live": _caught_up_only_by_a_live_stream,
    "standbys stay subscribed to a notifier whose host vanished without FIN and came back": (
        _streams_without_deadline
    ),
    "a resend of a client that names itself is processed twice, after 4,096 other bundles": _identities_ignored,
    "a bundle of a client that names itself, refused after it was processed, is processed again when resent": (
        _identities_and_refusals_ignored
    ),
    "a notifier whose writes the fence refused while its lease lapsed on its own clock, and who "
    "then renewed the same lease, never delivers those outputs again": _refused_outputs_wait_for_a_next_notifier,
    "an output buffer (an adapter's, or a gate's held outputs) overflows: outputs are lost": _full_buffers_drop,
    "a full-active-active standby acknowledges a copy it holds only in memory": _copies_acknowledged_from_memory,
    "a member's death is held against its next process: a lease it took after restarting is taken over early": (
        _death_held_against_any_process
    ),
    "a live notifier is deposed by its own heartbeat connection closing (FIN)": _heartbeat_fin_is_death,
    "a member restarted with a log that lost acknowledged records takes over": _restart_keeps_the_old_lease,
    "a log that lost its unsynced tail in a power cut keeps its id and term: its member counts as "
    "holding what it lost, and positions are used again": _power_cut_keeps_the_log,
}


@pytest.mark.parametrize("path", FIXED, ids=lambda p: p.name)
def test_every_fixed_path_fails_its_schedule_with_its_fix_undone(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    UNDO[path.name](monkeypatch)
    violations = Sim(path.seed, path.config).run()
    assert any(path.matches(v) for v in violations), violations


def test_a_foreign_clients_resend_past_the_digests_memory_is_counted_apart_and_nothing_else() -> None:
    """One client streams 6,000 bundles through the other's member pause: that client's resend
    comes after more than the digest remembers, and is processed again. The judge counts it
    as outside a foreign client's contract, never as passing unseen; with a memory that
    outlasts the pause the same schedule repeats nothing."""
    short = Sim(1, RESEND_AFTER_4096)
    assert short.run() == [] and short.outside_contract
    roomy = Sim(1, dataclasses.replace(RESEND_AFTER_4096, resend_keep=100_000))
    assert roomy.run() == [] and not roomy.outside_contract


def test_a_foreign_clients_duplicate_within_its_contract_is_a_violation() -> None:
    """Counting duplicates apart must not hide one the contract covers: the refused-record path
    of a foreign client (resent after a refusal, no attempt overlapping) still fails with its
    fix undone."""
    path = next(p for p in FIXED if p.name.startswith("a foreign client's bundle refused"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        UNDO[path.name](monkeypatch)
        sim = Sim(path.seed, path.config)
        assert any(path.matches(v) for v in sim.run()) and not sim.outside_contract


def test_a_stream_keeps_its_order_across_a_partition() -> None:
    """TCP retransmits what a partition holds, and what was sent after it waits behind it."""
    world = World(5)
    net = Net(world)
    conn = net.connect("m0", "m1", "replicate")
    got: list[object] = []
    conn.handlers["m1"] = lambda c, message: got.append(message)
    net.blocked.add(("m0", "m1"))
    for i in range(200):
        world.at(i * 0.0037, net.send, conn, "m0", i)
    world.at(1.0, net.blocked.discard, ("m0", "m1"))
    world.run(2.0)
    assert got == list(range(200))


def test_the_stores_clock_stepped_back_keeps_a_released_lease_released() -> None:
    """The store's clock counts from 1970, as a database's: seconds stepped back never reach
    `RELEASED`, the expiry of a released lease (before this, a restarted member's released
    lease came back to life, and it notified on an empty log)."""
    world = World(5)
    registry = Registry(world)
    registry.table.acquire("p", "m0", 2000, registry.now_ms())
    registry.skew -= 6.0
    registry.table.release("p", "m0", registry.now_ms())
    lease = registry.table.current("p", registry.now_ms())
    assert lease is not None and lease.ttl_ms == 0


def test_a_seed_replays_exactly() -> None:
    first, again = Sim(4242, trace=True), Sim(4242, trace=True)
    assert first.run() == again.run()
    assert first.world.lines == again.world.lines and len(first.world.lines) > 10


def test_a_schedule_without_faults_is_exact_in_every_mode() -> None:
    for mode in ("failover", "active-active"):
        for members in (2, 3):
            sim = Sim(7, Config(members=members, mode=mode, clients=2, bundles=20))
            assert sim.run() == [], (mode, members)
            assert len(sim.acked) == 40
            assert len(sim.tx_sink.rows) == sum(b.events for b in sim.bundles.values())


def test_many_schedules_meet_nothing_but_the_known_paths() -> None:
    import time

    started = time.monotonic()
    tally = run_many(0, SCHEDULES, workers=2)
    print("\n" + report(tally, time.monotonic() - started))
    assert tally.schedules == SCHEDULES
    assert tally.unknown == []
    assert all(
        tally.faults[kind] > SCHEDULES / 20 for kind in ("kill", "vanish", "pause", "partition", "slow")
    )
