"""`Cluster`: this node's membership, and its role for each redundant plan, wired to real parts.

Drives the pure state machines of `ha/` with real time, sockets and the registry:
- heartbeats (`app.cluster.heartbeats`) feed `ha.membership.Membership`; a heartbeat
  connection that closes in order marks its member dead at once (its process died);
- every `renew_ms` a role loop asks `ha.roles.PlanRole` what to do for each redundant plan
  deployed here, and asks the registry's lease store (`take_over` when the holder's process is
  known dead, `acquire` otherwise; the renewals of the leases it holds in one request for all
  its plans, `renew`, so hundreds of plans keep their renewal interval on a distant registry);
- a node that holds a plan's lease leads its journal (it sequences the plan's input and
  forwards it to the standbys: `app.cluster.replication`) and delivers its outputs under a fence
  of its lease epoch (`app.cluster.fence`); the others follow the notifier, relay the bundles
  they receive to it (`app.cluster.relays`) and hold their outputs for a takeover
  (`app.cluster.gate`).

Every message between members (`ha.messages`) names a plan; a member that is not the plan's
notifier answers `NotNotifier` (or `Refused`), so a member with a stale view only ever costs a
retry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar, cast

from adapters.output.base import Fence, Origin
from app.cluster.fence import NotifierFence
from app.cluster.gate import LockedGate
from app.cluster.heartbeats import Heartbeats
from app.cluster.peers import Connection, PeerServer, connect
from app.cluster.relays import RelayMemory, Relays
from app.cluster.replication import Follower, Sequencer
from app.cluster.settings import ClusterSettings
from app.cluster.threads import Locked, forever
from app.persistence.journal import PlanJournal
from app.registry.members import RegistryMembers
from engine.errors import CEPError
from ha.gate import Emit
from ha.membership import Membership
from ha.messages import NotNotifier, Subscribe
from ha.ports import Lease, LeaseStore, LogPosition
from ha.resends import DirectCopies, Resends
from ha.roles import Action, Round, Situation, Transition
from ha.seat import PlanSeat, Report

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_P = ParamSpec("_P")

WATERMARK_FLUSH_SECONDS = 30.0  # a sink behind by seconds delays the report, it must not stop it
# A graceful stop waits this long for the adapters before it hands its plans over: a sink that
# is slower does not hold the standbys back. What is not written by then the next notifier
# delivers again (the RDBMS adapter skips what the table has; the old notifier's late writes
# are refused by the sink's fence once the next one raised it).
HANDOVER_FLUSH_SECONDS = 0.1
ACT_WORKERS = 8  # lease requests of standbys at once (the registry pool holds 12 + 24 connections)


class _Plan:
    """What this node keeps for one redundant plan deployed here."""

    def __init__(self, name: str, journal: PlanJournal, gate: LockedGate, seat: PlanSeat) -> None:
        self.name = name
        self.journal = journal
        self.gate = gate
        self.seat = seat  # its role, term and what the lease store said (`ha.seat`), under `seat_lock`
        self.seat_lock = threading.Lock()
        self.confirm_lock = threading.Lock()  # one renewal at a time serves every bundle waiting
        self.sequencer: Sequencer | None = None
        self.follower: Follower | None = None
        self.acting: Future[object] | None = None  # a lease request (and takeover) under way in the pool
        self.relayed = RelayMemory()  # bundles members relayed to this node while it notified

    @property
    def epoch(self) -> int:
        """Of the lease this node notifies under (0: standby)."""
        return self.seat.epoch


class Cluster:
    def __init__(
        self,
        settings: ClusterSettings,
        leases: LeaseStore,
        members: RegistryMembers | None,
        emit: Emit[Origin, Fence],
        install: Callable[[str, bytes], object],
        flush: Callable[[str | None, float], bool],
        fenced: Callable[[str], int],
        admit: Callable[[str, int], None] = lambda plan, events: None,
    ) -> None:
        """`flush(plan, timeout)`: whether what the plan's outputs (None: every plan's) went
        to is written within `timeout` s; `fenced(plan)`: how many records its adapters were
        refused by a fence, or dropped or abandoned: records that may not reach the sink."""
        self.settings = settings
        self.me = settings.me
        self._leases = leases
        self._members = members
        self._pins: dict[str, str] = {}
        self._draining: set[str] = set()
        self._emit = emit
        self._install = install
        self._flush = flush
        self._fenced = fenced
        self._flusher = ThreadPoolExecutor(4, thread_name_prefix="cluster-flush")  # per-plan delivered checks
        self._settler = ThreadPoolExecutor(
            2, thread_name_prefix="cluster-settle"
        )  # tails (`PlanSeat.tail_to_settle`)
        # standbys' lease requests and the takeovers they grant, side by side: a member whose
        # peer died takes over that peer's plans together, not one registry round trip after another
        self._acting = ThreadPoolExecutor(ACT_WORKERS, thread_name_prefix="cluster-act")
        self._flushing: dict[str, tuple[Future[bool], int]] = {}  # plan → its check, and what it covers
        self.membership = cast(Membership, Locked(Membership(self.me, settings.timeouts, ())))
        self._addresses: dict[str, str] = {self.me: settings.advertise}  # member → cluster address
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._round = threading.Lock()  # held by a role round
        self._nudge = threading.Event()  # a role round now: a notifier's stream ended, a member left
        self._resume_at = 0  # where the next round goes on among the plans this node does not notify
        self._started = 0.0
        self._predecessor_released = False
        self._heartbeats = Heartbeats(settings, self.membership, self._addresses, self._stop, self._left)
        self._relays = Relays(settings, self._leading, self._notifier_of, self._notifying, admit)
        self.server = PeerServer(settings.host, settings.port, self.me, settings.keys, self._serve)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._started = time.monotonic()
        self.server.start()
        for target, name in ((self._heartbeats.run, "cluster-heartbeats"), (self._roles, "cluster-roles")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        for target, name in (
            (self._watermarks, "cluster-delivered"),
            (self._registry_loop, "cluster-registry"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info(
            "cluster member %s on %s (well-known addresses: %s)",
            self.me, self.settings.advertise, ", ".join(self.settings.wka) or "none",
        )  # fmt: skip

    def stop(self) -> None:
        """Give up every lease (the standbys take over at once) and leave the cluster."""
        self._stop.set()
        self._nudge.set()
        with self._round:  # a role round under way may be renewing a lease: not after it is released
            pass
        self._acting.shutdown(wait=True, cancel_futures=True)  # nor may a takeover be under way
        self._flush(None, HANDOVER_FLUSH_SECONDS)
        self._flusher.shutdown(wait=False, cancel_futures=True)
        self._settler.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            plans = list(self._plans.values())
        for plan in plans:
            self._leave(plan, drain=True)
        self.server.stop()
        for thread in self._threads:
            thread.join(2)
        self._relays.close()

    # ---- plans -------------------------------------------------------------------------------

    def gate(self, name: str, journal: PlanJournal, mode: str | None = "failover") -> LockedGate:
        """The output gate of redundant plan `name` (made, with the plan's role, on first use:
        the plan starts as a standby until the lease says otherwise). `mode`, the plan's
        `ha_mode`: in full-active-active a standby holds the bundles clients send it instead of
        relaying them (the notifier gets its own copy)."""
        with journal.lock:
            if mode != "full-active-active":
                journal.copies = None
            elif journal.copies is None:
                journal.copies = DirectCopies()
        with self._lock:
            plan = self._plans.get(name)
            if plan is None:
                gate = LockedGate(name, self._emit)
                journal.outputs = gate.state  # its snapshots keep what is not known written
                plan = self._plans[name] = _Plan(
                    name,
                    journal,
                    gate,
                    PlanSeat(name, self.me, self.settings.timing, self.settings.failback_s),
                )
                journal.follow(self._relays.relay_for(name))
                journal.resends = Resends()
                plan.follower = self._follower(plan)
                plan.follower.start()
            return plan.gate

    def forget(self, name: str) -> None:
        """Plan `name` no longer runs here."""
        with self._lock:
            plan = self._plans.pop(name, None)
        if plan is not None:
            self._leave(plan, drain=False)

    def redeployed(self, name: str) -> None:
        """Plan `name` runs a new text here now: as a standby, take the notifier's state again once
        it runs the same text (records applied meanwhile ran through another text)."""
        with self._lock:
            plan = self._plans.get(name)
        follower = plan.follower if plan is not None else None
        if follower is not None:
            follower.resync()

    def _leave(self, plan: _Plan, *, drain: bool) -> None:
        """Stop notifying and following `plan`, and give its lease up if this node ever held it."""
        self._step_down(plan, drain=drain)
        if plan.follower is not None:
            plan.follower.stop()
        if plan.seat.role.holder.epoch is not None:
            self._release_lease(plan)

    def _release_lease(self, plan: _Plan) -> None:
        try:
            self._leases.release(plan.name, self.me)
        except Exception as exc:  # the lease then runs out on its own
            log.warning("plan %s: could not release the notifier lease: %s", plan.name, exc)

    def status(self) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            plans = list(self._plans.values())
        return {
            "member": self.me,
            "members": {m: s.value for m, s in self.membership.view(now).items()},
            "draining": sorted(self._draining),
            "pins": dict(self._pins),
            "refused_tls": self.server.refused_tls,  # cluster connections without TLS or a CA-signed cert
            "plans": {
                p.name: {
                    "role": "notifier" if p.epoch else "standby",
                    "epoch": p.epoch or None,
                    "preferred": p.seat.preferred,  # the notifier once a member that came back has settled
                    "position": p.journal.position,
                    "held_outputs": p.gate.held,
                    "standbys_in_sync": p.sequencer.in_sync() if p.sequencer else [],
                    "caught_up": p.follower.caught_up if p.follower else True,
                    "direct_copies_held": p.journal.copies.held if p.journal.copies else 0,
                }
                for p in plans
            },
        }

    def roles(self) -> dict[str, bool]:
        """Per redundant plan deployed here: True while this node is its notifier (cheaper than `status`)."""
        with self._lock:
            return {p.name: bool(p.epoch) for p in self._plans.values()}

    # ---- roles -----------------------------------------------------------------------------------

    def _roles(self) -> None:
        period = min(self.settings.timing.renew_ms / 1000 / 2, 0.05)
        forever(self._stop, period, self._role_round, "the role loop", wake=self._nudge)

    def _role_round(self) -> None:
        """First the plans this node notifies for: their renewals in one request, then what
        else their rounds decided; then the other plans, within half a renewal interval, the
        rest in the next round, which comes at once. Their lease requests (and the takeovers
        the answers grant) go to a pool of `ACT_WORKERS` threads, side by side; a plan whose
        request is still under way sits the rounds out until it is done. So a member taking
        over a hundred plans takes them over together, and still renews those it holds in time."""
        with self._round:
            if self._stop.is_set() or not self._predecessor_gone():
                return
            with self._lock:
                plans = list(self._plans.values())
            plans = [p for p in plans if p.acting is None or p.acting.done()]  # the others: next round
            notifying = [p for p in plans if p.epoch]
            renewing: list[tuple[_Plan, Round, Situation]] = []
            deciding: list[tuple[_Plan, Round, Situation]] = []
            for plan in notifying:
                decided = self._guarded(plan, self._turn, plan)
                if decided is not None:
                    (renewing if _renews(plan, decided[0]) else deciding).append((plan, *decided))
            renewals = self._renew([plan for plan, _, _ in renewing])
            for plan, turn, situation in renewing:
                self._guarded(plan, self._act, plan, turn, situation, renewals.get(plan.name))
            for plan, turn, situation in deciding:
                self._guarded(plan, self._act, plan, turn, situation, None)
            others = [p for p in plans if p not in notifying]
            if not others:
                return
            self._look_up(others)
            until = time.monotonic() + self.settings.timing.renew_ms / 1000 / 2
            start = self._resume_at % len(others)
            for k, plan in enumerate(others[start:] + others[:start]):
                if k and time.monotonic() > until:
                    self._resume_at = start + k
                    self._nudge.set()
                    return
                decided = self._guarded(plan, self._turn, plan)
                if decided is None:
                    continue
                if decided[0].action is Action.ACQUIRE:  # a round trip to the registry, maybe a takeover
                    plan.acting = self._acting.submit(self._act_then_nudge, plan, *decided)
                else:
                    self._guarded(plan, self._act, plan, *decided, None)
            self._resume_at = 0

    def _act_then_nudge(self, plan: _Plan, turn: Round, situation: Situation) -> None:
        """(In the pool.) A standby's lease request, and what its answer decides; then a round
        at once if it now notifies (its first renewal, the standbys' subscriptions)."""
        if self._stop.is_set():
            return
        self._guarded(plan, self._act, plan, turn, situation, None)
        if plan.epoch:
            self._nudge.set()

    def _look_up(self, plans: list[_Plan]) -> None:
        """Read in one request the leases of the plans whose rounds would each read theirs now:
        a member whose peer died has that many plans to look up at once, each a round trip to
        the registry, and the rounds would spend their time on those instead of on takeovers."""
        now = time.monotonic()
        due = []
        for plan in plans:
            follower = plan.follower
            if not (plan.seat.must_look_up or (follower is not None and not follower.live)):
                continue
            with plan.seat_lock:
                if plan.seat.lookup_due(now, follower.ended_at if follower is not None else None):
                    due.append(plan)
        if len(due) < 2:
            return
        try:
            leases = {lease.plan: lease for lease in self._leases.all()}
        except Exception as exc:
            log.debug("cluster: cannot read the leases: %s", exc)
            return
        for plan in due:
            with plan.seat_lock:
                plan.seat.looked_up_at(now, leases.get(plan.name))

    def _guarded(self, plan: _Plan, step: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T | None:
        """`step(*args, **kwargs)`, or None when it failed (logged: one plan's failure must not
        stop the loop)."""
        try:
            return step(*args, **kwargs)
        except Exception:
            log.exception("plan %s: the role loop failed", plan.name)
            return None

    def _renew(self, plans: list[_Plan]) -> dict[str, tuple[float, Lease | None]]:
        """Renew the leases of `plans` (whose notifier this node is) in one request: per plan
        renewed or failed, (when the request was sent, the lease it got; None: the registry did
        not answer); a plan whose lease was not renewed (it expired meanwhile) is absent, and
        its round asks `acquire` alone, as it would have without the others."""
        if not plans:
            return {}
        sent = time.monotonic()
        try:
            leases = self._leases.renew([p.name for p in plans], self.me, self.settings.timing.ttl_ms)
        except Exception as exc:
            log.debug("cluster: renewal of %d leases failed: %s", len(plans), exc)
            return {p.name: (sent, None) for p in plans}
        return {
            name: (sent, lease)
            for name, lease in leases.items()
            if lease.holder == self.me and lease.ttl_ms > 0
        }

    def _predecessor_gone(self) -> bool:
        """Whether the leases this member's name held before this process started are given up
        (`LeaseStore.release_all`); until the registry has done so, this member asks for none."""
        if self._predecessor_released:
            return True
        try:
            ended = self._leases.release_all(self.me)
        except Exception as exc:
            log.debug("cluster: cannot give up the leases of this member's previous process yet: %s", exc)
            return False
        self._predecessor_released = True
        if ended:
            log.info("cluster member %s gave up %d leases its previous process held", self.me, ended)
        return True

    def _stream_ended(self, plan: _Plan) -> None:
        """The notifier's stream to this standby ended (it stopped, died, or handed over): read
        who holds the lease and decide now, not at the next round."""
        with plan.seat_lock:
            plan.seat.stream_ended()
        self._nudge.set()

    def _turn(self, plan: _Plan) -> tuple[Round, Situation] | None:
        """What the plan's seat decides this round, and the situation it decided in; None when
        it decides nothing yet (or a follower is still stopping)."""
        now = time.monotonic()
        follower = plan.follower
        if follower is not None and follower.stopping:
            return None  # a takeover declined while it still applied the old notifier's stream
        if follower is not None and follower.ended and not self._stop.is_set() and not plan.epoch:
            plan.follower = follower = self._follower(plan)  # the stopped one's thread has ended
            follower.start()
        seat = plan.seat
        if seat.must_look_up or (follower is not None and not follower.live):
            # who holds the lease (None: it was never granted), read when due: a standby that is
            # joining (or between subscriptions) hears of no expiry from a stream, and one
            # joining a notifier whose host vanished would wait out the join's silence deadline
            self._notifier_address(plan)
            if follower is not None:
                with plan.seat_lock:
                    leaves = seat.leaves_join(follower.joined_under, follower.live)
                if leaves:
                    log.info("plan %s: the lease names another notifier now: leaving the join", plan.name)
                    follower.leave_join()
        alive = self.membership.alive(now)
        situation = Situation(
            now=now,
            alive=alive,
            dead=self.membership.departed(now),
            draining=set(self._draining),
            pins=dict(self._pins),
            settled=now - self._started >= self.settings.timeouts.dead_ms / 1000,
            followed=follower is not None and (follower.live or follower.ended_live),
            caught_up=follower is None
            or seat.caught_up(follower.live or follower.ended_live, plan.gate.complete, plan.journal.held()),
            in_sync=plan.sequencer.in_sync() if plan.sequencer is not None else [],
            vouches=follower is None or plan.gate.complete,
        )
        with plan.seat_lock:
            turn = seat.round(situation)
        if turn is None:
            return None  # the others have not been heard from yet: the view would be wrong
        return turn, situation

    def _act(
        self, plan: _Plan, turn: Round, situation: Situation, renewed: tuple[float, Lease | None] | None
    ) -> None:
        """Do what the round decided; `renewed`: (sent, answer) of the lease's renewal in bulk."""
        seat = plan.seat
        if turn.action is Action.ACQUIRE:
            sent = time.monotonic()
            held = plan.journal.held()
            try:
                if renewed is not None:
                    sent, lease = renewed
                elif turn.take_over is not None:
                    dead, epoch = turn.take_over
                    lease = self._leases.take_over(
                        plan.name, self.me, self.settings.timing.ttl_ms, dead, epoch, held
                    )
                else:
                    lease = self._leases.acquire(plan.name, self.me, self.settings.timing.ttl_ms, held)
            except Exception as exc:
                lease = None
                log.debug("plan %s: lease request failed: %s", plan.name, exc)
            with plan.seat_lock:
                transition = seat.answered(sent, lease, time.monotonic(), turn.decision)
            self._note_ineligible(plan, lease, held)
        elif turn.action is Action.RELEASE:
            self._step_down(plan, drain=True)
            # what went to the adapters under this lease is written before the next notifier starts
            self._flush(plan.name, self.settings.timing.margin_ms / 1000)
            self._release_lease(plan)
            with plan.seat_lock:
                seat.released(time.monotonic())
            log.info("plan %s: notifier role handed to %s", plan.name, ", ".join(situation.in_sync))
            return
        else:
            with plan.seat_lock:
                transition = seat.transition(time.monotonic(), turn.decision)
        if transition in (Transition.STEP_DOWN, Transition.NEW_TERM):
            self._step_down(plan)
        if transition in (Transition.TAKE_OVER, Transition.NEW_TERM):
            self._take_over(plan)

    def _confirm(self, plan: _Plan, epoch: int, since: float, require: LogPosition) -> bool:
        """Whether a renewal of this node's lease (under `epoch`) sent at `since` or later
        succeeded and made the lease require `require` or more; renews it now if none did (one
        registry request, under `confirm_lock`, serves every bundle waiting)."""
        with plan.confirm_lock:
            with plan.seat_lock:
                if not plan.seat.needs_confirmation(since, require):
                    return True
            sent = time.monotonic()
            try:
                lease: Lease | None = self._leases.acquire(
                    plan.name, self.me, self.settings.timing.ttl_ms, require=require
                )
            except Exception as exc:
                log.debug("plan %s: lease renewal failed: %s", plan.name, exc)
                lease = None
            with plan.seat_lock:
                return plan.seat.renewed(sent, lease, epoch, require)

    def _note_ineligible(self, plan: _Plan, lease: Lease | None, held: LogPosition) -> None:
        """Log, once per requirement, that the lease needs more of the plan's log than this node holds."""
        dead = lease is not None and self._dead(lease.holder, time.monotonic())
        with plan.seat_lock:
            newly = plan.seat.newly_ineligible(lease, held, dead)
        if newly and lease is not None:
            log.warning(
                "plan %s: the notifier lease requires position %s of term %s of the plan's input, which "
                "this node does not hold (it holds %d of term %d): it may not take over; a member that "
                "holds it may, or %s when it comes back",
                plan.name, lease.required.position if lease.required else "?",
                lease.required.term if lease.required else "?", held.position, held.term, lease.holder,
            )  # fmt: skip

    def _dead(self, member: str, now: float) -> bool:
        """Whether `member`'s process is known to have died: its connection to this node closed."""
        return member in self.membership.departed(now)

    def _take_over(self, plan: _Plan) -> None:
        role = plan.seat.role
        epoch = role.holder.epoch
        assert epoch is not None
        started = time.monotonic()
        ended = plan.follower is None or plan.follower.stop()
        if ended:
            plan.follower = None  # else kept, stopping: the next follower starts once its thread ended
        with plan.seat_lock:
            takes = plan.seat.takes_over(plan.gate.complete, time.monotonic(), ended)
        if not takes:
            self._release_lease(plan)
            log.warning(
                "plan %s: granted the notifier lease (epoch %d) %s: gave it back, joining again",
                plan.name, epoch,
                "while joining from the notifier's snapshot, before all the outputs it carries had arrived"
                if ended else "while the follower still applied what the old notifier sent",
            )  # fmt: skip
            if ended and not self._stop.is_set():
                plan.follower = self._follower(plan)
                plan.follower.start()
            return
        fence = self._fence(plan, epoch)
        with plan.seat_lock:
            rule = plan.seat.acknowledgements(epoch)
        plan.sequencer = Sequencer(
            plan.journal,
            plan.gate,
            holds=lambda: role.holder.holds(time.monotonic()),
            confirm=lambda since, require: self._confirm(plan, epoch, since, require),
            rule=rule,
        )
        after = plan.journal.lead(epoch, plan.sequencer)
        fenced = self._fenced(plan.name)  # refusals from here on withhold the watermark
        with plan.seat_lock:
            plan.seat.took_over(fenced)
        with plan.seat_lock:
            through, tail = plan.seat.takeover_delivery(
                after, plan.gate.delivered, plan.journal.taken_through
            )
        delivered = plan.gate.open(fence, through)
        if tail:  # the lease requires the log, then its outputs go (and copies' clients are answered)
            threading.Thread(
                target=self._settle_taken,
                args=(plan, plan.sequencer, tail),
                name=f"settle-taken-{plan.name}",
                daemon=True,
            ).start()
        log.info(
            "plan %s: this node is its notifier now (epoch %d, from position %d; %d outputs it had "
            "released delivered again, what it holds goes once its log is settled; %.0f ms)",
            plan.name, epoch, after, delivered, (time.monotonic() - started) * 1000,
        )  # fmt: skip

    @staticmethod
    def _fence(plan: _Plan, epoch: int) -> NotifierFence:
        """A fence for the outputs this node delivers under `epoch` (each refuses everything
        after its first refusal: a redelivery takes a new one)."""
        role = plan.seat.role
        return NotifierFence(plan.name, epoch, lambda: role.holder.holds(time.monotonic()))

    @staticmethod
    def _settle_taken(plan: _Plan, sequencer: Sequencer, position: int) -> None:
        """Settle the log through `position` with no client waiting: as this member takes over,
        for the records it inherited (their outputs go once the lease requires them:
        `PlanSeat.takeover_delivery`) and the full-active-active copies waiting (those it sequenced,
        and those whose record the old notifier sent without settling it: once the standbys hold
        it all, their clients are acknowledged); or for a tail of records refused after they were
        appended."""
        try:
            plan.journal.on_disk()  # not `durable`: copies waiting there are answered only after the rule
            sequencer.settle(position)  # the rule, for records of the old term as well
            plan.journal.settled(position)
        except CEPError as exc:  # retried by the watermark's tail settle (a warning each 0.4 s would flood)
            log.info(
                "plan %s: the log through position %d was not settled (its outputs wait for the next "
                "settle): %s", plan.name, position, exc,
            )  # fmt: skip

    def _step_down(self, plan: _Plan, *, drain: bool = False) -> None:
        """Stop notifying. `drain` (a hand-over while the lease still holds): first let the
        standbys receive every record sequenced, so the next notifier has them all."""
        if not plan.epoch:
            return
        plan.journal.follow(self._relays.relay_for(plan.name))  # waits for a bundle being sequenced
        if drain and plan.sequencer is not None:
            position = plan.journal.position
            if not plan.sequencer.drain(position, self.settings.timing.margin_ms / 1000):
                log.warning(
                    "plan %s: the standbys did not confirm position %d within %d ms; handing over anyway "
                    "(a standby that lacks it may not take over)",
                    plan.name, position, self.settings.timing.margin_ms,
                )  # fmt: skip
        plan.gate.close()
        if plan.sequencer is not None:
            plan.sequencer.close()
            plan.sequencer = None
        log.warning("plan %s: this node is no longer its notifier (epoch %d)", plan.name, plan.epoch)
        with plan.seat_lock:
            plan.seat.stepped_down()
        if not self._stop.is_set():
            plan.follower = self._follower(plan)
            plan.follower.start()

    def _follower(self, plan: _Plan) -> Follower:
        return Follower(
            plan.journal,
            plan.gate,
            notifier=lambda: self._known_notifier(plan),
            connect=lambda address: connect(address, self.me, "replicate", self.settings.keys),
            install=lambda blob: self._install(plan.name, blob),
            ended=lambda: self._stream_ended(plan),
        )

    def _known_notifier(self, plan: _Plan) -> tuple[str, tuple[str, int]] | None:
        """Where the plan's notifier is and the lease's (holder, epoch) naming it, as this
        member's role loop last read the lease (it reads it when due, in one request when many
        plans are due): a follower that follows nobody asks every 50 ms, and a registry request
        of its own each time would crowd the registry just when a member with many plans dies.
        None while the lease names a member whose process is known dead: a connection there
        is refused, and the lease moves within a round."""
        with plan.seat_lock:
            term = plan.seat.notifier_term
        if term is None or self._dead(term[0], time.monotonic()):
            return None
        address = self._addresses.get(term[0])
        return None if address is None else (address, term)

    def _notifier_address(self, plan: _Plan) -> str | None:
        """Where the plan's notifier is, as the registry said at most `renew_ms` ago."""
        notifier = self._notifier(plan)
        return None if notifier is None else notifier[0]

    def _notifier(self, plan: _Plan) -> tuple[str, tuple[str, int] | None] | None:
        """Where the plan's notifier is and the lease's (holder, epoch) that names it, as the
        registry said at most `renew_ms` ago."""
        now = time.monotonic()
        ended = plan.follower.ended_at if plan.follower is not None else None
        with plan.seat_lock:
            due = plan.seat.lookup_due(now, ended)
        if due:
            try:
                lease = self._leases.current(plan.name)
            except Exception:
                return None
            with plan.seat_lock:
                plan.seat.looked_up_at(now, lease)
            if lease is None:
                return None  # never granted: nobody notifies
        with plan.seat_lock:
            term = plan.seat.notifier_term
        address = None if term is None else self._addresses.get(term[0])
        return None if address is None else (address, term)

    def _registry_loop(self) -> None:
        """Once a second: this member's row in the registry (for the console), the operators'
        pins and drains (for placement)."""
        while not self._stop.wait(1.0):
            if self._members is None:
                return
            try:
                view = {m: s.value for m, s in self.membership.view(time.monotonic()).items()}
                draining = self._members.report(self.me, self.settings.advertise, view)
                self._draining = self._members.draining() | ({self.me} if draining else set())
                self._pins = self._members.pins()
            except Exception as exc:  # the registry is down: keep the last pins and drains
                log.debug("cluster: registry unreachable for the members' rows: %s", exc)

    def _watermarks(self) -> None:
        forever(self._stop, 0.2, self._watermark_round, "reporting delivered outputs")

    def _watermark_round(self) -> None:
        """Tell the standbys which outputs are written, so they forget them: per plan, from the
        adapters (and links) its outputs go to, so a sink that is down holds up only the plans
        that write to it. Nothing is reported for a plan while a fence refused any record of
        its adapters since its term began (counted when it took
        over): a refused output may have been released long before this round, and the next
        notifier must still deliver it from what it holds; unless this node holds the lease
        again (it had lapsed on its own clock), when it delivers everything not known written
        again itself and counts refusals from there."""
        with self._lock:
            leading = [(p, p.sequencer, p.gate.released) for p in self._plans.values() if p.sequencer]
        for plan, sequencer, released in leading:
            self._settle_tail(plan, sequencer, released)
            # each plan's flush runs on its own, over rounds: a plan whose sink is down holds up no other
            asked = self._flushing.get(plan.name)
            if asked is None:
                if self._stop.is_set():
                    return
                try:
                    future = self._flusher.submit(self._flush, plan.name, WATERMARK_FLUSH_SECONDS)
                except RuntimeError:  # the cluster is stopping
                    return
                self._flushing[plan.name] = (future, released)  # what was released before it was asked
                continue
            future, released = asked
            if not future.done():
                continue
            del self._flushing[plan.name]
            if future.cancelled() or not future.result():
                continue
            fenced = self._fenced(plan.name)
            if plan.sequencer is not sequencer:
                continue
            with plan.seat_lock:
                report = plan.seat.report(fenced, time.monotonic())
            if report is Report.TRIM:
                plan.gate.trim(released)
                sequencer.delivered(released)
                plan.journal.keep_delivered(released, time.monotonic(), leading=True)
            elif report is Report.REDELIVER:
                # a fence refused writes while the lease lapsed on this node's clock, and it holds
                # the lease again: no next notifier will deliver them, so this one does, again
                n = plan.gate.redeliver(self._fence(plan, plan.epoch))
                log.warning(
                    "plan %s: outputs were refused while this node's lease lapsed; it holds it again "
                    "and delivers %d held outputs again (the sink skips what it has)",
                    plan.name, n,
                )  # fmt: skip

    def _settle_tail(self, plan: _Plan, sequencer: Sequencer, released: int) -> None:
        """Settle the plan's newest record when it stayed unreleased for a round with nothing
        settling (`PlanSeat.tail_to_settle`): the outputs of records refused after they were
        appended must not hold the gate for good."""
        with plan.seat_lock:
            tail = plan.seat.tail_to_settle(released, plan.journal.position, sequencer.settling > 0)
        if tail is None or self._stop.is_set():
            return
        try:
            self._settler.submit(self._settle_taken, plan, sequencer, tail)
        except RuntimeError:  # the cluster is stopping
            return

    # ---- what the relays and heartbeats ask ---------------------------------------------------

    def _leading(self, name: str) -> bool | None:
        with self._lock:
            plan = self._plans.get(name)
        return None if plan is None else bool(plan.epoch)

    def _notifier_of(self, name: str) -> str | None:
        with self._lock:
            plan = self._plans.get(name)
        return None if plan is None else self._notifier_address(plan)

    def _notifying(self, name: str) -> tuple[PlanJournal, RelayMemory] | None:
        plan = self._plans.get(name)
        return None if plan is None or not plan.epoch else (plan.journal, plan.relayed)

    def _left(self, member: str) -> None:
        """`member`'s process is gone: decide now who notifies its plans."""
        self._nudge.set()

    # ---- serving other members ----------------------------------------------------------------

    def _serve(self, connection: Connection) -> None:
        if connection.purpose == "heartbeat":
            self._heartbeats.serve(connection)
        elif connection.purpose == "replicate":
            request = connection.recv(64 * 1024)
            plan = self._plans.get(request.plan) if isinstance(request, Subscribe) else None
            sequencer = None if plan is None else plan.sequencer
            if sequencer is None or not isinstance(request, Subscribe):
                connection.send(NotNotifier())
                return
            sequencer.serve(connection, request)
        elif connection.purpose == "relay":
            self._relays.serve(connection)


def _renews(plan: _Plan, turn: Round) -> bool:
    """Whether the round asks for a lease this node notifies under (a renewal, asked in bulk)."""
    return turn.action is Action.ACQUIRE and turn.take_over is None and plan.epoch > 0
