"""A simulated cluster member running one redundant plan on the real HA decisions of `ha/`.

The decisions are `ha/`'s own: membership (`ha.membership`), the role rounds and their lease
requests (`ha.roles`), when a bundle may be acknowledged (`ha.acks`), resume or snapshot
(`ha.subscription`), the output gate (`ha.gate`), resends and direct copies (`ha.resends`),
how often a standby reads the lease (`ha.lease`). What calls them, and when, follows the
member process of the node (`app.cluster.member`, `replication`, `relays`,
`app.persistence.journal`) step by step, with simulated time, network, registry and disk in
place of threads, sockets, the database and files.

The plan is a model: a bundle of `n` events yields `n` outputs, `(bundle, i)`; a record's
outputs carry the origin (log id, position, index), as the node's do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.events import Event
from ha.acks import Acknowledgements, Confirm, Drop, Refuse, Release, Standby, Wait
from ha.gate import DeliveredMark, OutputGate
from ha.lease import Timing
from ha.membership import Membership, Timeouts
from ha.messages import (
    Ack,
    CarriedOutput,
    Delivered,
    Dropped,
    Heartbeat,
    Live,
    NotNotifier,
    Record,
    Resume,
    Settled,
    State,
    Subscribe,
)
from ha.ports import Lease, LogPosition
from ha.relays import Attempt, RelayedBundles
from ha.resends import SETTLED, WAITING, DirectCopies, Resends
from ha.roles import Action, Situation, Transition
from ha.seat import PlanSeat, Report
from ha.subscription import FOLLOW_SILENCE_SECONDS as SILENCE
from ha.subscription import JOIN_SILENCE_SECONDS as JOIN_SILENCE
from ha.subscription import KEEPALIVE_SECONDS as KEEPALIVE
from ha.subscription import Subscription, resumes
from tests.sim.outside import FAILED, Adapter, Write
from tests.sim.world import FIN, RESET, Conn

if TYPE_CHECKING:
    from tests.sim.scenario import Sim

PLAN = "p"
TIMING = Timing()
TIMEOUTS = Timeouts()
ROLE_PERIOD = min(TIMING.renew_ms / 1000 / 2, 0.05)
HEARTBEAT = TIMEOUTS.heartbeat_ms / 1000
RELAY_WAIT = 5.0
FULL_WAIT = 2.0  # as the node's [adapters] full_wait_ms: how long a bundle waits for room
COPY_WAIT = 5.0  # as the journal's COPY_WAIT_SECONDS
TEXT = "the plan"


@dataclass(frozen=True)
class Bundle:
    id: int
    events: int
    digest: int  # what the node's digest of its content would be: equal contents, equal digests
    sender: str | None = None  # the client, when it names itself (`adapters.senders`); None: a foreign one
    seq: int = 0  # its number among that client's bundles


@dataclass
class Disk:
    """A member's input log: the bundles of its positions (None: a clock tick), `durable` of them fsynced."""

    log_id: str
    term: int = 0
    entries: list[Bundle | None] = field(default_factory=list)
    durable: int = 0
    logs: int = 0  # how many logs this disk has held (a new id for each)
    delivered: tuple[str, int] = ("", 0)  # (log id, position): outputs known written, as the journal keeps it

    @property
    def position(self) -> int:
        return len(self.entries)

    def taken(self, sender: str) -> int:
        """The newest of `sender`'s bundles in this log (-1: none), as the plan's sender marks
        say: kept in its snapshots and advanced as its records are replayed or applied."""
        return max((b.seq for b in self.entries if b is not None and b.sender == sender), default=-1)


Reply = Callable[[bool, str], None]  # (acknowledged, why not)


@dataclass(eq=False)
class Fence:
    """As the node's `NotifierFence`: the outputs of one term (or one redelivery in it) pass
    while this process notifies under `epoch` and its lease holds on its own clock; after its
    first refusal it refuses everything (the sink's marks would skip a refused output written
    again after a later one)."""

    member: Member
    epoch: int
    lapsed: bool = False

    def __call__(self) -> bool:
        m = self.member
        if not self.lapsed and not (m.up and m.epoch == self.epoch and m.role.holder.holds(m.world.now)):
            self.lapsed = True
        return not self.lapsed


@dataclass
class _Settle:
    position: int
    started: float
    reply: Reply | None
    rule: Acknowledgements
    bundle: Bundle | None  # None: settling records of the old term for copies waiting at a takeover
    appended: bool = True  # the bundle is the record at `position` (not a resend taken before)
    asking: bool = False


class Member:
    def __init__(self, sim: Sim, name: str, disk: Disk, mode: str, incarnation: int) -> None:
        self.sim = sim
        self.world = sim.world
        self.net = sim.net
        self.name = name
        self.disk = disk
        self.mode = mode
        self.incarnation = incarnation
        self.up = True
        self.orderly = False
        self.paused_until = 0.0
        self._backlog: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self.started = self.world.now
        self.membership = Membership(name, TIMEOUTS, ())
        self.seat = PlanSeat(PLAN, name, TIMING)
        self.role = self.seat.role
        self.leading = False
        self.rule: Acknowledgements | None = None
        self.subscribers: dict[int, tuple[Conn, Standby]] = {}
        self.settles: list[_Settle] = []
        self.gate: OutputGate[tuple[str, int, int], Fence] = OutputGate(PLAN, self._emit, sim.gate_capacity)
        self.resends = Resends(keep=sim.resend_keep)
        self.copies = DirectCopies(keep=sim.copy_keep) if mode == "full-active-active" else None
        self.lookup_pending = False
        self.granted = False  # the store's last answer naming this member gave it a lease with time left
        self.predecessor_gone = False  # the leases its name held before this process started are given up
        self.round_pending = False
        self.nudged = False
        # following
        self.follow_conn: Conn | None = None
        self.heard_at = 0.0  # when the followed notifier last sent anything
        self.subscription: Subscription[tuple[str, int, int], tuple[State, Any]] | None = (
            None  # the one it follows now (`ha.subscription`)
        )
        self.joined_under: tuple[str, int] | None = None  # the lease's (holder, epoch) when it subscribed
        self.delivered_through = 0  # as notifier: the last position its standbys were told is written
        self.ended_live = False
        self.ended_at: float | None = None
        self.heartbeats: dict[str, Conn] = {}
        self.inbound: dict[str, int] = {}
        self.relay_conn: Conn | None = None
        self.relays: dict[str, tuple[Bundle, Reply, float]] = {}
        self.copy_waits: dict[int, tuple[Bundle, Reply]] = {}  # full-active-active copies by ticket
        self.relay_ids = 0
        self.relayed = RelayedBundles()  # as notifier: what became of each relay id (`ha.relays`)
        self.tx = Adapter(self.world, name, sim.tx_sink, sim.adapter_capacity)
        self.plain = Adapter(self.world, name, sim.plain_sink, sim.adapter_capacity)
        self.outputs_of: dict[int, list[Bundle | None]] = {}
        self.world.after(0.0, self._guard, self._heartbeat_loop)
        self.world.after(0.0, self._guard, self._role_loop)
        self.world.after(0.0, self._guard, self._watermark_loop)
        self.world.after(0.0, self._guard, self._keepalive_loop)
        self.following = False  # the follow loop is scheduled
        self._keep_following()
        self._delivered_mark = DeliveredMark()  # as `PlanJournal.keep_delivered`
        if disk.delivered[0] == disk.log_id:  # as `PlanJournal.recover(written=...)`
            self.gate.trim(disk.delivered[1])
        for position, bundle in enumerate(disk.entries, 1):  # recovery replays the log: its outputs again
            if bundle is not None:
                self._hold(position, bundle)
                self.resends.seen(bundle.digest, position=position)  # as the journal's replay

    # ---- the process: alive, paused, dead ------------------------------------------------------

    def _guard(self, step: Callable[..., None], *args: Any) -> None:
        """Run `step` as this process would: not at all once it died, later if it is paused."""
        if not self.up:
            return
        if self.world.now < self.paused_until:
            self._backlog.append((step, args))
            return
        step(*args)

    def resume(self) -> None:
        backlog, self._backlog = self._backlog, []
        for step, args in backlog:
            self._guard(step, *args)

    def die(self, orderly: bool) -> None:
        """kill -9 (`orderly`: the kernel closes its connections with FIN) or a host that vanishes."""
        self.up = False
        self.orderly = orderly  # its host refuses connections to its port (a vanished one says nothing)
        self.tx.crash()
        self.plain.crash()
        for conn in list(self.net.conns.values()):
            if conn.open and self.name in (conn.a, conn.b) and conn.handlers.get(self.name) is not None:
                if orderly:
                    self.net.close(conn, self.name)
                else:
                    self.net.vanish(conn)
                conn.handlers.pop(self.name, None)

    def _hear(self, conn: Conn, message: object) -> None:
        self._guard(self._on_message, conn, message)

    def _connect(self, peer: str, purpose: str) -> Conn | None:
        other = self.sim.members.get(peer)
        if other is None or not other.up or (self.name, peer) in self.net.blocked:
            return None
        conn = self.net.connect(self.name, peer, purpose)
        conn.handlers[self.name] = self._hear
        conn.handlers[peer] = other._hear
        return conn

    def now_ms(self) -> int:
        return int(self.world.now * 1000)

    # ---- heartbeats ----------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        now = self.world.now
        knows = {m: m for m in self.membership.knows(now)}
        for peer in self.sim.members:
            if peer == self.name:
                continue
            conn = self.heartbeats.get(peer)
            if conn is None or not conn.open:
                conn = self._connect(peer, "heartbeat")
                if conn is None:
                    continue
                self.heartbeats[peer] = conn
                other = self.sim.members[peer]
                other.inbound[self.name] = other.inbound.get(self.name, 0) + 1
            self.net.send(conn, self.name, Heartbeat(self.name, knows))
        self.world.after(HEARTBEAT, self._guard, self._heartbeat_loop)

    def drop_heartbeats(self) -> None:
        """A fault: this live process closes its heartbeat connections (an error in its sender)."""
        for conn in self.heartbeats.values():
            self.net.close(conn, self.name)
        self.heartbeats.clear()

    # ---- role rounds ---------------------------------------------------------------------------

    def _role_loop(self) -> None:
        if not self.round_pending:
            self._round()
        self.world.after(ROLE_PERIOD, self._guard, self._role_loop)

    @property
    def epoch(self) -> int:
        return self.seat.epoch

    def _nudge(self) -> None:
        self.seat.stream_ended()
        if not self.round_pending:
            self.world.after(0.0, self._guard, self._round)

    def _round(self) -> None:
        if self.round_pending:
            return
        if not self.predecessor_gone:  # as `Cluster._predecessor_gone`: no lease asked before
            self.round_pending = True

            def released(answer: Lease | None) -> None:
                self.round_pending = False
                self.predecessor_gone = answer is not FAILED

            self.sim.registry.ask("release_all", lambda answer: self._guard(released, answer), self.name)
            return
        if self._reads_lease():
            self.round_pending = True
            self._lookup(then=self._round_decide)
            return
        self._round_decide()

    def _reads_lease(self) -> bool:
        """Whether the round reads who holds the lease first: never read, or the notifier's
        stream ended; and, as the node's round, when due for a standby that is not live (joining
        a notifier whose host vanished, it hears of no expiry from the stream)."""
        return self.seat.must_look_up or (
            not self.leading
            and not self.live
            and not self.lookup_pending
            and self.seat.lookup_due(self.world.now, self.ended_at)
        )

    def _round_decide(self) -> None:
        self.round_pending = False
        now = self.world.now
        conn = self.follow_conn
        if conn is not None and self.seat.leaves_join(self.joined_under, self.live):
            self.world.trace(f"{self.name} leaves its join: the lease names another notifier now")
            self.net.close(conn, self.name)  # as the node's `Follower.leave_join`
            self._ended(conn, True)
        situation = Situation(
            now=now,
            alive=self.membership.alive(now),
            dead=self.membership.departed(now),
            draining=(),
            pins={},
            settled=now - self.started >= TIMEOUTS.dead_ms / 1000,
            followed=self.live or self.ended_live,
            caught_up=self.leading or self.caught_up,
            in_sync=self.rule.in_sync() if self.rule is not None else [],
            vouches=self.leading or self.gate.complete,
        )
        turn = self.seat.round(situation)
        if turn is None:
            return
        if turn.action is Action.ACQUIRE:
            sent = now
            held = self.held()
            self.round_pending = True

            take_over = turn.take_over

            def answered(lease: Lease | None) -> None:
                lease = None if lease is FAILED else lease
                if take_over is not None and lease is not None and lease.holder == self.name:
                    self.sim.note_take_over(self, take_over[0])
                self._guard(self._round_answered, sent, held, lease, turn.decision)

            if take_over is not None:
                dead, epoch = take_over
                self.sim.registry.ask(
                    "take_over", answered, PLAN, self.name, TIMING.ttl_ms, dead, epoch, held
                )
            else:
                self.sim.registry.ask("acquire", answered, PLAN, self.name, TIMING.ttl_ms, held, None)
            return
        if turn.action is Action.RELEASE:
            self._step_down()
            self.sim.registry.ask("release", lambda _: None, PLAN, self.name)
            self.seat.released(now)
            return
        self._transition(self.seat.transition(self.world.now, turn.decision))

    def _round_answered(self, sent: float, held: LogPosition, lease: Lease | None, decision: Any) -> None:
        self.round_pending = False
        if lease is not None and lease.holder == self.name:
            self.granted = lease.ttl_ms > 0
        self._transition(self.seat.answered(sent, lease, self.world.now, decision))

    def _transition(self, transition: Transition) -> None:
        if transition in (Transition.STEP_DOWN, Transition.NEW_TERM):
            self._step_down()
        if transition in (Transition.TAKE_OVER, Transition.NEW_TERM):
            if not self.granted:
                self.sim.note_ungranted(self)
            self._take_over()

    def _lookup(self, then: Callable[[], None] | None = None) -> None:
        def answered(lease: Lease | None) -> None:
            self.lookup_pending = False
            if lease is not FAILED:
                self.seat.looked_up_at(self.world.now, lease)
            if then is not None:
                then()

        self.lookup_pending = True
        self.sim.registry.ask("current", lambda lease: self._guard(answered, lease), PLAN)

    def notifier_address(self) -> str | None:
        """Where the notifier is, by what the registry said lately (asking again when due)."""
        if self.seat.lookup_due(self.world.now, self.ended_at) and not self.lookup_pending:
            self._lookup()
        return self.seat.notifier

    def held(self) -> LogPosition:
        return LogPosition(self.disk.term, self.disk.position)

    @property
    def live(self) -> bool:
        """Whether it receives the notifier's records as it appends them."""
        return self.subscription is not None and self.subscription.live

    @property
    def caught_up(self) -> bool:
        return self.seat.caught_up(self.live or self.ended_live, self.gate.complete, self.held())

    # ---- notifying -----------------------------------------------------------------------------

    def _take_over(self) -> None:
        epoch = self.role.holder.epoch
        assert epoch is not None
        self._stop_following()
        if not self.seat.takes_over(self.gate.complete, self.world.now):
            self.world.trace(f"{self.name} gives back the lease of epoch {epoch}: its gate is not whole")
            self.sim.registry.ask("release", lambda _: None, PLAN, self.name)
            return
        self.rule = self.seat.acknowledgements(epoch)
        self.disk.term = epoch
        self.leading = True
        after = self.disk.position
        if self.copies is not None:
            # bundles clients sent here the old notifier never sequenced: acknowledged once settled here
            for ticket, (_, rows, _, _) in self.copies.take():
                self.copies.wait_at(self.disk.position + 1, ticket)  # the position it is appended at
                self._sequence(self.sim.bundles[rows[0][0]], None)
        self.resends.took_over(self.now_ms())  # after the copies: a client's resend of one is known
        taken_through = self.disk.position if self.copies is not None and self.copies.waiting else 0
        self.seat.took_over(self.refused)
        through, tail = self.seat.takeover_delivery(after, self.gate.delivered, taken_through)
        self.gate.open(Fence(self, epoch), through)
        self.sim.note_notifier(self, epoch)
        self.world.trace(f"{self.name} notifier at epoch {epoch} from position {after}")
        if tail:
            self.settles.append(_Settle(tail, self.world.now, None, self.rule, None, appended=False))
            self._settle_all()

    def _step_down(self) -> None:
        if not self.epoch:
            return
        self.leading = False
        self.gate.close()
        if self.rule is not None:
            self.rule.close()
            for conn, _ in list(self.subscribers.values()):
                self.net.close(conn, self.name)
            self.subscribers.clear()
            self._settle_all()
        self.rule = None
        self.world.trace(f"{self.name} no longer notifier (epoch {self.epoch})")
        self.seat.stepped_down()
        self._keep_following()

    def receive(self, bundle: Bundle, reply: Reply) -> None:
        """A client's bundle arrives at this member's receiver."""
        self._guard(self._receive, bundle, reply)

    @property
    def refused(self) -> int:
        """As the node's `fenced(plan)`: records its adapters were refused by a fence, or dropped."""
        return sum(a.fenced + a.overflow for a in (self.tx, self.plain))

    @property
    def has_room(self) -> bool:
        """Backpressure, as the node's ingress: room in the adapters and in the plan's held outputs."""
        return self.tx.has_room and self.plain.has_room and self.gate.has_room

    def _receive(self, bundle: Bundle, reply: Reply, deadline: float | None = None) -> None:
        if not self.has_room:
            deadline = self.world.now + FULL_WAIT if deadline is None else deadline
            if self.world.now >= deadline:
                reply(False, "outputs full")
            else:
                self.world.after(0.05, self._guard, self._receive, bundle, reply, deadline)
            return
        if self.copies is not None and not self.leading:
            # acknowledged once the notifier's record of it is here (or this member sequenced it)
            ticket = self.copies.arrived(bundle.digest, "S", [(bundle.id, bundle.events)], [0])
            self.copy_waits[ticket] = (bundle, reply)
            self._copies_settled()
            self.world.after(COPY_WAIT, self._guard, self._copy_timeout, ticket)
            return
        if not self.leading:
            self._relay(bundle, reply)
            return
        self._sequence(bundle, reply)

    def _copies_settled(self) -> None:
        """Answer the copies whose outcome is known (`DirectCopies`), as the journal does."""
        if self.copies is None:
            return
        for ticket in list(self.copy_waits):
            outcome = self.copies.outcome(ticket)
            if outcome == WAITING:
                continue
            bundle, reply = self.copy_waits.pop(ticket)
            if outcome == SETTLED or self.copies.withdraw(ticket):
                self.sim.copies_acked.add(bundle.id)
                reply(True, "")
            else:
                reply(False, "its settling will not be heard of")

    def _copy_timeout(self, ticket: int) -> None:
        entry = self.copy_waits.pop(ticket, None)
        if entry is None or self.copies is None:
            return
        bundle, reply = entry
        if self.copies.withdraw(ticket):
            self.sim.copies_acked.add(bundle.id)
            reply(True, "")
        else:
            reply(False, "the notifier did not sequence it")

    def _sequence(self, bundle: Bundle, reply: Reply | None, relayed: bool = False) -> None:
        at = self.now_ms()
        taken: int | None = None
        if self.named(bundle):  # as the journal: by the sender's mark, and no digest is kept
            assert bundle.sender is not None
            resent, relayed_again = self.disk.taken(bundle.sender) >= bundle.seq, False
        else:
            taken = self.resends.unanswered(bundle.digest, at)
            if taken is None:
                taken = self.resends.resent(bundle.digest, at)
            resent = taken is not None
            relayed_again = not resent and (
                self.resends.relayed_again(bundle.digest, at)
                if relayed
                else self.resends.sent_after_its_relay(bundle.digest, at)
            )
        if resent or relayed_again:
            # taken before: acknowledged once its record (a refused one) or the newest is
            # settled, as the journal does
            position = taken if taken is not None else self.disk.position
        else:
            if not self.named(bundle) and bundle.id in self.sim.appended:
                recent = self.resends.recent()
                if len(recent) >= self.sim.resend_keep and bundle.digest not in recent:
                    self.sim.beyond_memory.add(bundle.id)  # the documented limit of the content digest
            position = self._append(bundle)
            if not self.named(bundle):
                self.resends.seen(bundle.digest, at, relayed, position)
            self.sim.note_append(self, position, bundle)
            for conn, standby in list(self.subscribers.values()):
                if not standby.gone:
                    self.net.send(conn, self.name, (Record(position), (self.disk.term, bundle)))
        rule = self.rule
        assert rule is not None
        self.settles.append(
            _Settle(position, self.world.now, reply, rule, bundle, appended=not (resent or relayed_again))
        )
        self._settle_all()

    @staticmethod
    def named(bundle: Bundle) -> bool:
        """Whether the journal tells `bundle`'s resends by its sender's identity."""
        return bundle.sender is not None

    def _append(self, bundle: Bundle | None) -> int:
        disk = self.disk
        disk.entries.append(bundle)
        if self.sim.fsync == "always":
            disk.durable = disk.position
        position = disk.position
        if bundle is not None:
            self._hold(position, bundle)
        return position

    def _hold(self, position: int, bundle: Bundle) -> None:
        """The plan processed the record at `position`: its outputs, into the gate."""
        events = [Event(0, (bundle.id, i)) for i in range(bundle.events)]
        self.gate.hold(position, "out", events, (self.disk.log_id, position, 0))

    def _settle_all(self) -> None:
        for settle in list(self.settles):
            if settle in self.settles:
                self._settle(settle)

    def _settle(self, settle: _Settle) -> None:
        if settle.asking:
            return
        rule = settle.rule
        while True:
            step = rule.decide(settle.position, settle.started, self.world.now, self.held())
            if isinstance(step, Wait):
                self.world.at(step.until, self._guard, self._settle_all)
                return
            if isinstance(step, Drop):
                for cid, (_, standby) in list(self.subscribers.items()):
                    if standby in step.standbys:
                        self._drop(cid, step.why)
                continue
            break
        if isinstance(step, Confirm):
            self._confirm(settle, step.require)
            return
        assert isinstance(step, Release | Refuse)
        self._settled(settle, step)

    def _confirm(self, settle: _Settle, require: LogPosition) -> None:
        if not self.seat.needs_confirmation(settle.started, require):
            self._settled(settle, settle.rule.confirmed(True))
            return
        settle.asking = True
        sent, epoch = self.world.now, self.epoch

        def answered(lease: Lease | None) -> None:
            lease = None if lease is FAILED else lease
            settle.asking = False
            if settle not in self.settles:
                return
            ok = self.seat.renewed(sent, lease, epoch, require)
            self._settled(settle, settle.rule.confirmed(ok))

        self.sim.registry.ask(
            "acquire",
            lambda lease: self._guard(answered, lease),
            PLAN,
            self.name,
            TIMING.ttl_ms,
            None,
            require,
        )

    def _settled(self, settle: _Settle, step: object) -> None:
        if settle in self.settles:
            self.settles.remove(settle)
        if isinstance(step, Refuse):
            if settle.bundle is not None:
                self.sim.refused.add(settle.bundle.id)
            if settle.reply is not None:
                settle.reply(False, step.why)
            return
        if not settle.rule.closed:
            if not self.role.holder.holds(self.world.now):
                if settle.bundle is not None:
                    self.sim.refused.add(settle.bundle.id)
                if settle.reply is not None:
                    settle.reply(False, "lease ran out")
                return
            self.gate.release(settle.position)
        if (
            self.copies is not None
        ):  # full-active-active: copies of it (and all before) here and on the standbys
            self.copies.settle(settle.position)
            self._copies_settled()
            for conn, standby in list(self.subscribers.values()):
                if not standby.gone:
                    self.net.send(conn, self.name, (Settled(settle.position), None))
        if settle.reply is not None:
            if settle.appended and settle.bundle is not None:
                self.sim.note_acked(self, settle.position, settle.bundle)
            if settle.bundle is not None and not self.named(settle.bundle):  # as the ingress and the relays
                self.resends.answered(settle.position, settle.bundle.digest)
            settle.reply(True, "")

    def _drop(self, cid: int, why: str) -> None:
        conn, standby = self.subscribers.pop(cid)
        standby.gone = True
        if self.rule is not None:
            self.rule.ended(standby)
        self.net.send(conn, self.name, (Dropped(why), None))
        self.net.close(conn, self.name)

    def _emit(
        self, stream: str, events: list[Event], origin: tuple[str, int, int], fence: Fence | None
    ) -> None:
        assert fence is not None, "only a notifier delivers"
        log_id, position, index = origin
        writes = [
            Write(self.name, fence.epoch, (log_id, position, index + i), (e.data[0], e.data[1]))
            for i, e in enumerate(events)
        ]
        self.tx.publish(writes, fence)
        self.plain.publish(writes, fence)

    def _watermark_loop(self) -> None:
        if self.leading and self.rule is not None and self.tx.flushed and self.plain.flushed:
            report = self.seat.report(self.refused, self.world.now)
            if report is Report.TRIM:
                released = self.delivered_through = self.gate.released
                self.gate.trim(released)
                self._keep_delivered(released)
                for conn, standby in self.subscribers.values():
                    if not standby.gone:
                        self.net.send(conn, self.name, (Delivered(released), None))
            elif report is Report.REDELIVER:  # as the node: deliver again what was refused, afresh
                self.gate.redeliver(Fence(self, self.epoch))
        if self.leading and self.rule is not None:
            tail = self.seat.tail_to_settle(self.gate.released, self.disk.position, bool(self.settles))
            if tail is not None:
                self.settles.append(_Settle(tail, self.world.now, None, self.rule, None, appended=False))
                self._settle_all()
        self.world.after(0.2, self._guard, self._watermark_loop)

    def _keep_delivered(self, position: int) -> None:
        """As `PlanJournal.keep_delivered`: at most once a second, on disk with its log's id."""
        log_id = self.disk.log_id
        if self._delivered_mark.due(log_id, position, self.world.now):
            self.disk.delivered = (log_id, position)
            self._delivered_mark.kept(log_id, position, self.world.now)

    # ---- relaying ------------------------------------------------------------------------------

    def _relay(self, bundle: Bundle, reply: Reply) -> None:
        self.relay_ids += 1
        relay_id = f"{self.name}.{self.incarnation}:{self.relay_ids}"
        self.relays[relay_id] = (bundle, reply, self.world.now + RELAY_WAIT)
        self._relay_try(relay_id)

    def _relay_try(self, relay_id: str) -> None:
        entry = self.relays.get(relay_id)
        if entry is None:
            return
        bundle, reply, deadline = entry
        if self.leading:
            del self.relays[relay_id]
            self._sequence(bundle, reply)
            return
        address = self.notifier_address()
        if address is not None:
            conn = self.relay_conn
            if conn is None or not conn.open or conn.b != address:
                conn = self.relay_conn = self._connect(address, "relay")
            if conn is not None:
                self.net.send(conn, self.name, ("relay", relay_id, bundle))
                self.world.after(0.3, self._guard, self._relay_retry, relay_id)
                return
        self._relay_retry(relay_id)

    def _relay_retry(self, relay_id: str) -> None:
        entry = self.relays.get(relay_id)
        if entry is None:
            return
        if self.world.now >= entry[2]:
            del self.relays[relay_id]
            entry[1](False, "no notifier took it")
            return
        self.world.after(0.05, self._guard, self._relay_try, relay_id)

    def _serve_relay(self, conn: Conn, relay_id: str, bundle: Bundle) -> None:
        key = f"{conn.a}/{relay_id}"
        new = self.relayed.status(key) is Attempt.NEW
        if not self.leading or (not self.has_room and new):  # backpressure: new ones only
            self.net.send(conn, self.name, ("relayed", relay_id, False))
            return
        status, token = self.relayed.begin(key)
        if status is Attempt.TAKEN:
            self.net.send(conn, self.name, ("relayed", relay_id, True))
        if status is not Attempt.NEW:
            return  # still settling: its answer comes

        def reply(ok: bool, why: str) -> None:
            if ok:
                self.relayed.taken(key, token)
            else:
                self.relayed.refused(key, token)
            self.net.send(conn, self.name, ("relayed", relay_id, ok))

        self._sequence(bundle, reply, relayed=True)

    # ---- following -----------------------------------------------------------------------------

    def _keep_following(self) -> None:
        if not self.following:
            self.following = True
            self.world.after(0.0, self._guard, self._follow_loop)

    def _follow_loop(self) -> None:
        """Every 50 ms while this member neither notifies nor follows: subscribe to the notifier."""
        self.following = False
        if self.leading or self.follow_conn is not None:
            return
        address = self.notifier_address()
        if address is not None:
            conn = self._connect(address, "replicate")
            if conn is not None:
                self.follow_conn = conn
                self.heard_at = self.world.now
                self.subscription = Subscription(self.gate)
                self.joined_under = self.seat.notifier_term
                self.world.after(KEEPALIVE, self._guard, self._silence_check, conn)
                disk = self.disk
                self.net.send(
                    conn,
                    self.name,
                    (Subscribe(PLAN, disk.log_id, disk.position, disk.term, TEXT, False), None),
                )
                return
        self.following = True
        self.world.after(0.05, self._guard, self._follow_loop)

    def _keepalive_loop(self) -> None:
        """As the notifier's send loop: a stream with nothing to send repeats the last `Delivered`."""
        for conn, standby in list(self.subscribers.values()):
            if not standby.gone:
                self.net.send(conn, self.name, (Delivered(self.delivered_through), None))
        self.world.after(KEEPALIVE, self._guard, self._keepalive_loop)

    def _silence_check(self, conn: Conn) -> None:
        """As the follower's receive deadline: a notifier silent for `SILENCE` (`JOIN_SILENCE`
        before the stream is live) is gone (its host vanished without FIN or RST)."""
        if conn is not self.follow_conn:
            return
        if self.world.now - self.heard_at >= (SILENCE if self.live else JOIN_SILENCE):
            self.net.close(conn, self.name)
            self._ended(conn, True)
            return
        self.world.after(KEEPALIVE, self._guard, self._silence_check, conn)

    def _stop_following(self) -> None:
        conn, self.follow_conn = self.follow_conn, None
        if conn is not None:
            self.net.close(conn, self.name)
        self.subscription = None
        self._keep_following()

    def _ended(self, conn: Conn, was_open: bool) -> None:
        if conn is not self.follow_conn:
            return
        self.follow_conn = None
        self._keep_following()
        if was_open:
            self.ended_live = self.subscription is not None and self.subscription.ended()
            self.ended_at = self.world.now
            self._nudge()
        self.subscription = None

    def _follow(self, conn: Conn, message: Any, extra: Any) -> None:
        if conn is not self.follow_conn:
            return  # a subscription it left: as the node's follower, which reads one connection at a time
        disk = self.disk
        self.heard_at = self.world.now
        subscription = self.subscription
        assert subscription is not None
        if isinstance(message, State | CarriedOutput):
            if isinstance(message, State):
                self.ended_live = False
                subscription.state(
                    message.position, message.delivered, message.covers, message.carried, (message, extra)
                )
            else:
                position, stream, events = extra
                subscription.carried(
                    (position, stream, events, (message.log_id, message.position, message.index))
                )
            pending = subscription.pending
            if pending is not None:  # as the node's follower: with every output carried with it
                self._adopt(*pending)
                subscription.installed()
            return
        if isinstance(message, Record):
            term, bundle = extra
            if not subscription.follows(message.position, disk.position):  # a gap: it cannot apply it
                self.ended_live = False
                self._stop_following()
                return
            self._append(bundle)
            if bundle is not None:
                self.resends.seen(bundle.digest, position=disk.position)
                if self.copies is not None:
                    self.copies.sequenced(bundle.digest, disk.position)
            self.sim.note_append(self, disk.position, bundle)
            if subscription.acknowledges:
                self.net.send(conn, self.name, (Ack(disk.position, self.gate.complete), None))
        elif isinstance(message, Resume):
            self.ended_live = False
            disk.term = message.term
        elif isinstance(message, Live):
            subscription.went_live()
            self.net.send(conn, self.name, (Ack(disk.position, self.gate.complete), None))
        elif isinstance(message, Settled):
            if self.copies is not None:
                self.copies.settle(message.position)
                self._copies_settled()
        elif isinstance(message, Delivered):
            subscription.delivered(message.position)
            self._keep_delivered(self.gate.delivered)
            if subscription.acknowledges:
                self.net.send(conn, self.name, (Ack(disk.position, self.gate.complete), None))
        elif isinstance(message, NotNotifier):
            self._stop_following()
        elif isinstance(message, Dropped):
            self.ended_live = subscription.ended(dropped=True)
            self._stop_following()

    def _adopt(self, message: State, extra: Any) -> None:
        disk = self.disk
        entries, log_id = extra
        disk.entries = list(entries)
        disk.log_id = log_id
        disk.durable = disk.position if self.sim.fsync == "always" else min(disk.durable, disk.position)
        disk.term = message.term
        self.resends.replace(message.recent, message.position)
        if self.copies is not None:
            self.copies.renumbered()
            for digest in message.recent:  # in the state's log, at or before its position
                self.copies.sequenced(digest, message.position)
            self._copies_settled()

    def _serve(self, conn: Conn, request: Subscribe) -> None:
        if not self.leading or self.rule is None:
            self.net.send(conn, self.name, (NotNotifier(), None))
            return
        disk = self.disk
        resume = resumes(request, disk.log_id, disk.term, 1, disk.position)
        start = request.position if resume else disk.position
        if resume:
            self.net.send(conn, self.name, (Resume(disk.log_id, start, disk.term, self.now_ms()), None))
        else:
            carried, delivered, covers = self.gate.carried()
            recent = tuple(self.resends.recent())
            state = State(
                disk.log_id, start, disk.term, self.now_ms(), recent, delivered, covers, len(carried)
            )
            self.net.send(conn, self.name, (state, (tuple(disk.entries), disk.log_id)))
            for stream, events, (log_id, position, index) in carried:
                self.net.send(
                    conn, self.name, (CarriedOutput(log_id, position, index), (position, stream, events))
                )
        for position in range(start + 1, disk.position + 1):
            self.net.send(conn, self.name, (Record(position), (disk.term, disk.entries[position - 1])))
        standby = self.rule.subscribed(conn.a, disk.position)
        standby.live = True
        self.subscribers[conn.id] = (conn, standby)
        self.net.send(conn, self.name, (Live(), None))

    def _probed(self, peer: str) -> None:
        other = self.sim.members.get(peer)
        if other is not None and not other.up and other.orderly and self.inbound.get(peer, 0) <= 0:
            self.membership.lost(peer, self.world.now)
            self._nudge()

    # ---- messages ------------------------------------------------------------------------------

    def _on_message(self, conn: Conn, message: Any) -> None:
        if message is FIN or message is RESET:
            was_open = conn.open
            conn.open = False
            if conn.purpose == "heartbeat" and conn.b == self.name:
                peer = conn.a
                self.inbound[peer] = self.inbound.get(peer, 1) - 1
                if message is FIN and self.inbound[peer] <= 0:
                    # as `Heartbeats._process_gone`: its cluster port refuses only if its process is gone
                    self.world.after(2 * self.net.latency[1], self._guard, self._probed, peer)
                return
            if conn.purpose == "replicate":
                if conn.b == self.name:
                    entry = self.subscribers.pop(conn.id, None)
                    if entry is not None and self.rule is not None:
                        self.rule.ended(entry[1])
                        self._settle_all()
                else:
                    self._ended(conn, was_open)
            return
        if isinstance(message, Heartbeat):
            self.membership.heartbeat(conn.a, list(message.knows), self.world.now)
            return
        if isinstance(message, tuple) and message and message[0] == "relay":
            self._serve_relay(conn, message[1], message[2])
            return
        if isinstance(message, tuple) and message and message[0] == "relayed":
            _, relay_id, ok = message
            relay = self.relays.get(relay_id)
            if relay is not None and ok:
                del self.relays[relay_id]
                relay[1](True, "")
            return
        kind, extra = message
        if isinstance(kind, Subscribe):
            self._serve(conn, kind)
        elif isinstance(kind, Ack):
            entry = self.subscribers.get(conn.id)
            if entry is not None and self.rule is not None:
                self.rule.acknowledged(entry[1], kind.position, kind.ready)
                self._settle_all()
        else:
            self._follow(conn, kind, extra)
