"""`PlanJournal`: a persistence-mode plan's input, logged before it is processed, and its clock.

With `[persistence] input_log` on, a plan with a snapshot interval runs on a logged clock:
every bundle is appended to the plan's input log (`app.persistence`) together with the time
the plan's clock reads when it processes it (`Events.at`), and every firing of due timers is a
`Tick` record of its own. The journal's lock orders appends and processing, so the log holds
the records in the order the runtime saw them. Replaying the log after a snapshot's position
into the restored runtime therefore does exactly what the dead process did: same clock
readings, same timers, same outputs, in the same order.

Bundles whose senders named themselves (`adapters.senders`) carry who sent each event: the
sequencer takes only the events past the plan's mark for their sender and logs the runs it
took with them, so a replay, a standby applying the record and a snapshot (its annex) all know
the same marks, and a client's resend or a forwarding node's replay is never processed twice.
Bundles without names fall back on the redundant plans' content digests (`ha.resends`).

Outputs carry their provenance: output `index` of those the record at `position` of log
`log_id` caused on one output stream (`origin`). A replay regenerates the same provenance, so
an adapter that records what it wrote (RDBMS) skips what it already has.

The clock never goes back: it reads the wall clock but never less than its last reading, so a
wall clock stepped back (NTP) stalls the plan's time instead of reversing it.

A redundant plan in a cluster has one journal per member, all holding the same log (same id,
same positions). The notifier's journal `leads`: it takes bundles and ticks, and hands each
record to its `replicas` (`app.cluster.replication`), whose `settle` waits until the standbys
hold it. A standby's journal follows: bundles sent to it go to the notifier (`relay`), its
timers fire only through the notifier's `Tick` records, and `apply` appends and processes the
notifier's records at their positions. In full-active-active mode a standby keeps its own copy
of each bundle instead of relaying it, and acknowledges it only once the notifier's record of it
was reported settled (`settled`): never while it rests in memory alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from adapters.output.base import Origin
from adapters.senders import IdentityError, Runs, SenderMarks, select
from adapters.throttle import Throttle
from app.persistence.errors import DiskFault, InputLogError
from app.persistence.input_log import Events, InputLog, Tick
from app.persistence.records import Column, Record, content_digest, decode, encode, stamped
from engine import Runtime
from engine.errors import Busy, CEPError
from ha.gate import DeliveredMark
from ha.ports import LogPosition
from ha.resends import GONE, SETTLED, DirectCopies, Resends

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 5.0
ROOM_PER_EVENT = 4096  # bytes a bundle's record is assumed to need per event, at most
ROOM_PER_BUNDLE = 64 * 1024
MAX_UNSETTLED = 100_000  # positions whose settling is remembered (each is settled once, soon)
COPY_WAIT_SECONDS = 5.0  # how long a full-active-active standby waits for the notifier to sequence a copy
DISK_RETRY_MS = 100  # how soon due timers are fired again when the disk did not take their `Tick`


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class LoggedClock:
    """The `wall_time` of a journaled plan's runtime: reads what the journal last set."""

    __slots__ = ("now",)

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Replicas(Protocol):
    """The standbys of a leading journal (`app.cluster.replication.Sequencer`)."""

    def appended(self, position: int, payload: bytes) -> None:
        """Record `position` was appended (called under the journal's lock, before it is
        processed: the standbys run it while this node does)."""

    def settle(self, position: int) -> None:
        """Return once the standbys hold `position` (or were given up on); release its outputs."""


class Relay(Protocol):
    """Hands a bundle to the plan's notifier (`app.cluster.relays`); `NotLeading` when none took it."""

    def __call__(
        self, stream: str, rows: list[tuple[Any, ...]], timestamps: list[int], senders: Runs = (), /
    ) -> None: ...


class NotLeading(Busy):
    """No notifier took the bundle (this member does not lead the plan and could not relay it),
    or a record came from a sequencer this journal does not follow, or out of order: nothing
    was taken; a client sends the bundle again."""


class BundleFailed(CEPError):
    """The plan raised while processing a bundle that is logged at `position` (a replay meets
    the same error there): the bundle is taken, and must still be made `durable`."""

    def __init__(self, position: int, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.position = position
        self.error = error


class PlanJournal:
    """The input log and clock of one plan; its `runtime` is set (and switched on redeploy) by
    the plan manager. Thread-safe."""

    def __init__(self, plan: str, input_log: InputLog, wall: Callable[[], int] = wall_ms) -> None:
        self.plan = plan
        self._log = input_log
        self._wall = wall
        self.lock = threading.Lock()
        self._copies_settled = threading.Condition(self.lock)  # full-active-active copies (`DirectCopies`)
        self.log_id = input_log.log_id(plan)
        self.runtime: Runtime | None = None
        self.replaying = False
        self._emitted: dict[str, int] = {}  # per output stream: outputs of `_emitted_at` so far
        self._emitted_at = 0
        self._failures = Throttle(10.0)
        self.leading = True  # False: a standby of a redundant plan (its notifier sequences)
        self.replicas: Replicas | None = None
        self.relay: Relay | None = None
        self.term = 0  # the lease epoch of the sequencer of the newest record (0: not replicated)
        self._log_term = input_log.term(plan)  # the term whose log the local log copies, kept on disk
        self._settlers: dict[int, Replicas] = {}  # position → the standbys of the term that sequenced it
        # per thread, (position, rows, digest) of the foreign client's bundle `send` took last:
        # its `answered`, on the same thread, finds the digest there instead of hashing again
        self._taken = threading.local()
        self.resends: Resends | None = None  # a redundant plan's: records a client may send again
        self.copies: DirectCopies | None = None  # full-active-active: a standby's own copies of bundles
        self.taken_through = 0  # where `lead` left the log with copies waiting (to be settled), or 0
        self.deployed: str | None = None  # the fingerprint of the plan text its runtime runs
        self.senders = SenderMarks()  # the last event taken from each sender that named itself
        self._delivered_mark = DeliveredMark()  # when `keep_delivered` writes
        self.outputs: Callable[[], Any] | None = None  # a redundant plan's held outputs, for its snapshots
        first, last = input_log.bounds(plan)
        self.position = last  # the newest record appended (and processed)
        self.clock = LoggedClock(self._first_time(first, last))

    def _first_time(self, first: int, last: int) -> int:
        """The time the plan started at: a new log begins with a `Tick` of it, so that a replay
        of the whole log starts the plan's clock (and its triggers' phase) where it started."""
        if first == 1 and last >= 1:
            for _, record in self._log.read(self.plan, 0):
                return record.time_ms if isinstance(record, Tick) else record.at
        now = self._wall()
        if last == 0:
            self.position = self._log.append(self.plan, Tick(now))
        return now

    # ---- live ----------------------------------------------------------------------------

    def send(
        self,
        stream: str,
        rows: list[tuple[Any, ...]],
        timestamps: Sequence[int] | int,
        columns: tuple[Column, ...] | None = None,
        *,
        forward: bool = True,
        senders: Runs = (),
    ) -> int:
        """Log, then process, a bundle; its position. Call `durable(position)` before
        acknowledging it. An error of the plan propagates after the bundle is logged (a replay
        meets the same error at the same point). `columns`: the rows by attribute with their
        types, when the receiver has them (see `Events`). The bundle is encoded before the
        lock is taken (only the clock reading is filled in under it), so that other
        receivers' bundles for the plan wait for the append, not for the encoding.
        `forward=False` (a bundle another member relayed here): sequence it only while this
        journal leads, else raise `NotLeading` (the relaying member tries again, and takes it
        itself if it wins the lease; passed on from here it could reach the new notifier twice).
        `senders`: who sent the events (`adapters.senders`): those already taken are skipped."""
        ts = [timestamps] * len(rows) if isinstance(timestamps, int) else list(timestamps)
        if self.copies is not None and forward:
            # full-active-active: never relayed (the notifier has its own copy); decided under the
            # lock, so a step-down in between cannot send it to the next notifier as well
            unstamped = self._log.encode(self.plan, Events(stream, ts, rows, 0, columns, senders))
            with self.lock:
                if self.copies is not None:
                    if not self.leading:
                        bundle = content_digest(unstamped)
                        ticket = self.copies.arrived(bundle, stream, rows, ts, senders)
                        return self._await_copy(self.copies, ticket)
                    return self._sequence(stream, rows, ts, unstamped, senders=senders)
        while forward:
            relay = self._relay_or_none()
            if relay is None:
                break
            try:
                relay(stream, rows, ts, senders)  # the notifier took them: nothing left to wait for here
                return 0
            except NotLeading:
                if not self.leading:
                    raise
                # this node became the notifier meanwhile: it takes them itself
        unstamped = self._log.encode(self.plan, Events(stream, ts, rows, 0, columns, senders))
        with self.lock:
            if self.leading:
                return self._sequence(stream, rows, ts, unstamped, relayed=not forward, senders=senders)
        if not forward:
            msg = f"plan '{self.plan}': this node no longer leads it"
            raise NotLeading(msg)
        return self.send(stream, rows, ts, columns, senders=senders)  # it stopped leading meanwhile

    def _await_copy(self, copies: DirectCopies, ticket: int) -> int:
        """(Under the lock.) Wait until a full-active-active standby's copy is as safe as a
        record the notifier acknowledges (`DirectCopies`): 0, for the caller to acknowledge it.
        `NotLeading` when it will not be, or not within `COPY_WAIT_SECONDS` (the notifier
        refused the bundle, say): the copy is no longer held, and its client sends it again."""
        deadline = time.monotonic() + COPY_WAIT_SECONDS
        while True:
            outcome = copies.outcome(ticket) if self.copies is copies else GONE
            if outcome == SETTLED:
                return 0
            remaining = deadline - time.monotonic()
            if outcome == GONE or remaining <= 0:
                if copies.withdraw(ticket):
                    return 0
                msg = (
                    f"plan '{self.plan}': the notifier did not acknowledge this bundle within "
                    f"{COPY_WAIT_SECONDS:g} s; send it again"
                )
                raise NotLeading(msg)
            self._copies_settled.wait(remaining)

    def settled(self, position: int) -> None:
        """Every record up to `position` is acknowledged (the notifier said so, or this journal
        leads and settled it): full-active-active copies sequenced there may be acknowledged."""
        with self.lock:
            if self.copies is not None:
                self.copies.settle(position)
                self._copies_settled.notify_all()

    def _sequence(
        self,
        stream: str,
        rows: list[tuple[Any, ...]],
        ts: list[int],
        unstamped: bytes,
        *,
        relayed: bool = False,
        senders: Runs = (),
    ) -> int:
        """Append and process a bundle as the plan's sequencer (under the lock); its position.
        `relayed`: another member relayed it (it may be a resend of one this node took).
        `senders`: who sent its events; those this plan took before are left out (all of
        them: the bundle was taken before, and its position is the newest record's)."""
        at = max(self.clock.now, self._wall())
        bundle: int | None = None  # its digest, for a client that does not name itself
        if senders:
            keep, senders = self.senders.fresh(senders, len(rows))
            if keep is not None:
                if not keep:
                    log.info("plan %s: a bundle its sender sent again was not processed twice", self.plan)
                    return self._taken_at(self.position)
                rows, ts = select(rows, keep), select(ts, keep)
                unstamped = self._log.encode(self.plan, Events(stream, ts, rows, 0, None, senders))
        elif self.resends is not None:
            bundle = content_digest(unstamped)
            taken = self.resends.unanswered(bundle, at)
            if taken is not None:
                log.info(
                    "plan %s: a bundle sent again after it was refused was not processed twice", self.plan
                )
            else:
                taken = self.resends.resent(bundle, at)
                if taken is not None:
                    log.info(
                        "plan %s: a bundle sent again after a takeover was not processed twice", self.plan
                    )
            if taken is not None:  # its record settles under this term, and answers the resend
                self._taken.last = (taken, rows, bundle)
                return self._taken_at(taken)
            if relayed and self.resends.relayed_again(bundle, at):
                log.info(
                    "plan %s: a bundle sent again through another member was not processed twice", self.plan
                )
                self._taken.last = (self.position, rows, bundle)
                return self._taken_at(self.position)
            if not relayed and self.resends.sent_after_its_relay(bundle, at):
                log.info(
                    "plan %s: a bundle sent again after its relay was refused was not processed twice",
                    self.plan,
                )
                self._taken.last = (self.position, rows, bundle)
                return self._taken_at(self.position)
        payload = stamped(unstamped, at)
        position = self._log.append(self.plan, payload, wait=False)
        self.clock.now = at
        self.position = position
        if bundle is not None and self.resends is not None:
            self.resends.seen(bundle, at, relayed, position)
            self._taken.last = (position, rows, bundle)
        if senders:
            self.senders.advance(senders)
        if self.replicas is not None:
            self._settlers[position] = self.replicas
            while len(self._settlers) > MAX_UNSETTLED:
                del self._settlers[next(iter(self._settlers))]
            self.replicas.appended(position, payload)  # the standbys process it while this node does
        try:
            self._process(lambda runtime: runtime.send(stream, rows, ts))
        except Exception as exc:  # logged: it must still be settled before it is acknowledged
            raise BundleFailed(position, exc) from exc
        return position

    def _taken_at(self, position: int) -> int:
        """(Under the lock, leading.) A resend is answered with the record at `position`, which
        settles under this term's standbys (a record of an earlier term, or one whose settling
        its closed sequencer refused, would otherwise be acknowledged unsettled or never)."""
        if position and self.replicas is not None:
            self._settlers[position] = self.replicas
        return position

    def _relay_or_none(self) -> Relay | None:
        """Where bundles go while this journal follows; None while it leads."""
        if self.leading:
            return None
        relay = self.relay
        if relay is None:
            msg = f"plan '{self.plan}' has no notifier to take these events"
            raise NotLeading(msg)
        return relay

    def tick(self) -> int | None:
        """Fire the timers due by now, as a logged `Tick`; the next due time (ms) or None. A
        `Tick` the disk does not take (`DiskFault`) is tried again `DISK_RETRY_MS` later."""
        with self.lock:
            runtime = self._runtime()
            due = runtime.next_timer()
            if due is None or not self.leading:
                return None
            now = max(self.clock.now, self._wall())
            if due > now:
                return due
            payload = encode(Tick(now))
            try:
                position = self._log.append(self.plan, payload)
            except DiskFault:  # the input log says so, once an interval: the timers fire once it takes them
                return now + DISK_RETRY_MS
            self.clock.now = now
            self.position = position
            replicas = self.replicas
            try:
                self._process(lambda r: r.tick())
            finally:
                if replicas is not None:
                    replicas.appended(position, payload)
            due = self._runtime().next_timer()
        if replicas is not None:
            try:
                replicas.settle(position)
            except NotLeading:
                pass  # a tick is no one's bundle: the next notifier's clock fires the timers
        return due

    def check_room(self, rows: int) -> None:
        """`InputLogFull` when a bundle of `rows` events might not fit in the plan's log (a
        generous estimate: the exact check comes with the append)."""
        self._log.check_room(self.plan, ROOM_PER_EVENT * rows + ROOM_PER_BUNDLE)

    def durable(self, position: int) -> None:
        """Return once the record at `position` is as durable as the fsync policy makes it
        (and, leading a redundant plan, held by its standbys). Position 0: relayed, nothing to do."""
        if position:
            self._log.durable(self.plan, position)
            replicas = self._settlers.get(position)  # the standbys of the term that sequenced it
            if replicas is not None:
                replicas.settle(position)
            if self.copies is not None:  # copies this member took over settle with it
                self.settled(position)

    def answered(
        self,
        position: int,
        stream: str,
        rows: list[tuple[Any, ...]],
        timestamps: Sequence[int] | int,
        senders: Runs = (),
    ) -> None:
        """The client of a bundle `send` took at `position` was told it was taken (after
        `durable`): a bundle identical to it is no longer its resend (`ha.resends.Resends`).
        Nothing to do for a bundle whose sender names itself."""
        if self.resends is None or senders or not position:
            return
        last = getattr(self._taken, "last", None)
        if last is not None and last[0] == position and last[1] is rows:
            bundle = last[2]
        else:  # (not the bundle this thread sent last: its payload again, from its rows)
            ts = [timestamps] * len(rows) if isinstance(timestamps, int) else list(timestamps)
            bundle = content_digest(self._log.encode(self.plan, Events(stream, ts, rows)))
        with self.lock:
            if self.resends is not None:
                self.resends.answered(position, bundle)

    # ---- replication -----------------------------------------------------------------------

    def on_disk(self) -> None:
        """Return once every record this journal holds is as durable as the fsync policy makes
        it (a standby, before it acknowledges them: under "always", on disk)."""
        self._log.durable(self.plan, self.position)

    def apply(self, position: int, payload: bytes, held: Callable[[int], object] | None = None) -> None:
        """Append and process record `position` of the notifier (this journal follows it).
        `held(position)` is called once it is appended, before it is processed: a standby
        acknowledges it there, so the notifier's wait for the standby does not include the
        standby's run of the plan. (Its state then lags its log by this record until the call
        returns; nothing sees that: the lock is held throughout, and the record is processed even
        if the acknowledgement fails.)"""
        record = decode(payload)
        with self.lock:
            if self.leading or position != self.position + 1:
                msg = f"plan '{self.plan}': record {position} does not follow {self.position} here"
                raise NotLeading(msg)
            self._log.append(self.plan, payload, wait=False)
            self.position = position
            try:
                if held is not None:
                    held(position)
            finally:
                self._run_applied(position, record, payload)

    def _run_applied(self, position: int, record: Record, payload: bytes) -> None:
        try:
            if isinstance(record, Tick):
                self.clock.now = record.time_ms
                self._process(lambda r: r.tick())
            else:
                self.clock.now = record.at
                self.senders.advance(record.senders)
                bundle = content_digest(payload)
                if self.resends is not None:
                    self.resends.seen(bundle, position=position)
                if self.copies is not None:
                    self.copies.sequenced(bundle, position)
                self._process(lambda r: r.send(record.stream, record.rows, record.timestamps))
        except Exception as exc:  # the notifier met the same error here and went on
            self._log_failure(position, exc)

    def adopt(
        self,
        log_id: str,
        position: int,
        clock_now: int,
        term: int,
        recent: Sequence[int] = (),
        senders: Sequence[Sequence[object]] = (),
    ) -> None:
        """Continue the notifier's log `log_id` after `position`: the runtime was just given the
        state that covers it (so this journal's own records no longer count). `recent`: the
        digests of the bundles the notifier sequenced last (`ha.resends`); `senders`: its
        sender marks (`SenderMarks.state`)."""
        with self.lock:
            self.senders.restore(senders)
            if self.resends is not None:
                self.resends.replace(recent, position)
            if self.copies is not None:
                self.copies.renumbered()
                for bundle in recent:  # in the state's log, at or before its position
                    self.copies.sequenced(bundle, position)
                self._copies_settled.notify_all()
            self._log.adopt(self.plan, log_id, position)
            self.log_id, self.position = log_id, position
            self._set_term(term)
            self.clock.now = clock_now
            self._emitted.clear()
            self._emitted_at = 0

    def lead(self, term: int, replicas: Replicas | None) -> int:
        """Sequence from now on, under lease epoch `term`; the position the term starts after.
        A full-active-active standby's copies the old notifier never sequenced come first (the
        log then at `taken_through` while copies wait: the caller settles it, so their clients
        are answered)."""
        with self.lock:
            self._set_term(term)
            self.leading, self.replicas = True, replicas
            self.clock.now = max(self.clock.now, self._wall())
            after = self.position
            if self.copies is not None:
                taken = self.copies.take()
                for ticket, (stream, rows, ts, senders) in taken:
                    try:
                        position = self._sequence(
                            stream,
                            rows,
                            ts,
                            self._log.encode(self.plan, Events(stream, ts, rows, 0, None, senders)),
                            senders=senders,
                        )
                    except BundleFailed as exc:  # logged and taken, as a replay will: the others still count
                        log.error("plan %s failed on a bundle it held for a takeover: %s", self.plan, exc)
                        position = exc.position
                    self.copies.wait_at(position, ticket)  # acknowledged once this member settles it
                if taken:
                    log.info(
                        "plan %s: %d bundles clients sent to this node that the old notifier never sequenced "
                        "are processed now",
                        self.plan, len(taken),
                    )  # fmt: skip
            if self.resends is not None:  # after the copies: a client's resend of one is known
                self.resends.took_over(self.clock.now)
            # copies taken, or whose record came from the old notifier unsettled, wait for this
            # member's settling: no later bundle may come to bring it
            self.taken_through = self.position if self.copies is not None and self.copies.waiting else 0
            return after

    @property
    def delivered(self) -> int:
        """The position up to which this log's records' outputs are known written, as last kept
        (`keep_delivered`; 0: none, or kept for another log)."""
        return self._log.delivered(self.plan)

    def keep_delivered(self, position: int, now: float, *, leading: bool) -> None:
        """Keep on disk, at most once a second (`now`: monotonic seconds), that the outputs of
        this log's records up to `position` are known written: a restart's replay then holds
        only the outputs after it, where it would otherwise hold every output of its log (and,
        past its gate's bound, drop some and be unable to take over). `position` must count in
        this journal's log: read by the thread that changes the log (a standby's follower:
        `leading` False), or read while this node notifies (`leading`: kept only if it still
        does, for its log changes only once it follows)."""
        with self.lock:
            if leading and not self.leading:
                return
            log_id = self.log_id
            if not self._delivered_mark.due(log_id, position, now):
                return
            try:
                self._log.set_delivered(self.plan, position)
            except (OSError, InputLogError) as exc:  # a restart then holds more: the sink skips what it has
                log.debug("plan %s: could not keep the delivered position: %s", self.plan, exc)
                return
            self._delivered_mark.kept(log_id, position, now)

    def resume(self, term: int) -> None:
        """This node's log is a prefix of the log of lease term `term` (a standby resumed in it)."""
        with self.lock:
            self._set_term(term)

    def _set_term(self, term: int) -> None:
        self.term = term
        if term != self._log_term:
            self._log.set_term(self.plan, term)
            self._log_term = term

    def held(self) -> LogPosition:
        """Where this node's copy of the plan's ordered input stands, as the notifier lease's
        requirement counts it (`ha.ports.LeaseStore`). The term survives restarts with the log:
        a member restarted with its log holds what it held."""
        return LogPosition(self._log_term, self.position)

    def follow(self, relay: Relay | None) -> None:
        """Stop sequencing: bundles go to the notifier through `relay` from now on."""
        with self.lock:
            self.leading, self.replicas, self.relay = False, None, relay

    def capture(self) -> tuple[Any, str, int]:
        """The plan's state (its sender marks in the annex, and a redundant plan's outputs not
        known written: `outputs`) and the log position it covers, consistent with each other."""
        with self.lock:
            capture = self.captured()
            if self.outputs is not None:
                capture.annex["outputs"] = self.outputs()
            return capture, self.log_id, self.position

    def captured(self) -> Any:
        """(Under the lock.) The plan's state, its sender marks (and a redundant plan's recent
        digests) in the annex."""
        capture = self._runtime().capture()
        capture.annex["senders"] = self.senders.state()
        if self.resends is not None:
            capture.annex["recent"] = [list(item) for item in self.resends.recent_at()]
        return capture

    def restore_senders(self, annex: dict[str, Any]) -> None:
        """Take the sender marks of a restored snapshot's annex (none in one taken before they
        were kept: resends of what it covers are then known only to the digests), and a
        redundant plan's recent digests (`recent`: a takeover after a restart recognises a
        foreign client's resend of what the state covers)."""
        with self.lock:
            try:
                self.senders.restore(annex.get("senders", ()))
            except IdentityError as exc:
                log.warning("plan %s: the snapshot's sender marks are not used: %s", self.plan, exc)
                self.senders.clear()
            recent = annex.get("recent")
            if self.resends is not None and isinstance(recent, list):
                try:
                    self.resends.replace([(int(bundle), int(position)) for bundle, position in recent])
                except (TypeError, ValueError) as exc:
                    log.warning("plan %s: the snapshot's recent bundles are not used: %s", self.plan, exc)

    def origin(self, stream: str, n: int) -> Origin:
        """The origin of the next `n` outputs on `stream` (its source: the plan); called while a
        record is processed."""
        if self._emitted_at != self.position:
            self._emitted.clear()
            self._emitted_at = self.position
        index = self._emitted.get(stream, 0)
        self._emitted[stream] = index + n
        return Origin(self.plan, self.log_id, self.position, index)

    def _runtime(self) -> Runtime:
        if self.runtime is None:
            msg = f"plan '{self.plan}' has no runtime yet"
            raise CEPError(msg)
        return self.runtime

    def _process(self, step: Callable[[Runtime], object]) -> None:
        runtime = self._runtime()
        try:
            step(runtime)
        except CEPError:
            if self.runtime is runtime or self.runtime is None:
                raise
            step(self.runtime)  # redeployed meanwhile: the new runtime holds the state now

    # ---- recovery --------------------------------------------------------------------------

    def recent(self) -> list[int]:
        """Digests of the bundles sequenced last (with the state a joining standby gets)."""
        return [] if self.resends is None else self.resends.recent()

    def recover(
        self,
        restored: bool,
        log_id: str | None = None,
        position: int | None = None,
        *,
        replica: bool = False,
        written: Callable[[int], object] | None = None,
    ) -> int:
        """After the runtime was restored from a snapshot covering `position` of log `log_id`
        (`restored` False: no snapshot), replay what the log holds after it; how many records.
        Before a replay, `written` is told up to which position the log's outputs are known
        written (`delivered`: a redundant plan's gate then holds only those after it). When
        the log cannot continue that state (a snapshot taken without the log, another node's
        or an older log, a truncated or shorter log), the log is reset: the state restored is
        all there is."""
        first, last = self._log.bounds(self.plan)
        if not restored:
            if first == 1:
                return self._replay(0, written)
            why = f"it starts at position {first} and no snapshot covers the records before"
        elif log_id is None or position is None:
            why = "the snapshot restored was taken without the input log"
        elif log_id != self.log_id:
            why = "the snapshot restored was taken on another node or before the log was reset"
        elif position > last:
            why = f"the snapshot restored covers position {position} but the log ends at {last}"
        elif position + 1 < first:
            why = f"the snapshot restored covers position {position} but the log starts at {first}"
        else:
            return self._replay(position, written)
        if last >= first and replica:  # a member's copy of a notifier's log: it catches up from the notifier
            log.info(
                "plan %s: its local copy of the input log (records %d to %d) cannot be replayed (%s); "
                "it catches up from the notifier",
                self.plan, first, last, why,
            )  # fmt: skip
        elif last >= first:
            log.warning(
                "plan %s: its input log does not continue the state restored (%s): "
                "its records %d to %d are not replayed",
                self.plan, why, first, last,
            )  # fmt: skip
        self.reset()
        return 0

    def reset(self) -> None:
        """Start a new, empty log for the plan (`--discard-state`, a log that cannot be used)."""
        with self.lock:
            self.log_id = self._log.reset(self.plan)
            self.term = self._log_term = 0  # a new log: no term's records
            self._emitted.clear()
            self._emitted_at = 0
            self._settlers.clear()
            if self.resends is not None:  # the positions it knew are the old log's
                self.resends.replace([])
            self.clock.now = max(self.clock.now, self._wall())
            self.position = self._log.append(self.plan, Tick(self.clock.now))

    def _replay(self, after: int, written: Callable[[int], object] | None = None) -> int:
        if written is not None:  # this log is replayed: its outputs up to there are known written
            written(self.delivered)
        runtime = self._runtime()
        _, last = self._log.bounds(self.plan)
        if last <= after:
            return 0
        total = last - after
        log.info("plan %s: replaying %d input log records after position %d", self.plan, total, after)
        started = shown = time.monotonic()
        done = failed = 0
        with self.lock:
            self.replaying = True
            try:
                for position, record, payload in self._log.read_both(self.plan, after):
                    self.position = position
                    try:
                        if isinstance(record, Tick):
                            self.clock.now = record.time_ms
                            runtime.tick()
                        else:
                            self.clock.now = record.at
                            self.senders.advance(record.senders)
                            if self.resends is not None:  # a takeover may meet its client's resend
                                self.resends.seen(content_digest(payload), position=position)
                            runtime.send(record.stream, record.rows, record.timestamps)
                    except Exception as exc:  # the live run met the same error here and went on
                        failed += 1
                        self._log_failure(position, exc)
                    done += 1
                    if time.monotonic() - shown >= PROGRESS_SECONDS:
                        shown = time.monotonic()
                        log.info("plan %s: replayed %d of %d input log records", self.plan, done, total)
            finally:
                self.replaying = False
        log.info(
            "plan %s: replayed %d input log records in %.1f s%s",
            self.plan,
            done,
            time.monotonic() - started,
            f" ({failed} failed, as they did when they arrived)" if failed else "",
        )
        return done

    def _log_failure(self, position: int, exc: Exception) -> None:
        allowed, held = self._failures.allow()
        if allowed:
            log.warning(
                "plan %s: input log record %d failed in replay: %s%s",
                self.plan,
                position,
                exc,
                f" ({held} similar not shown)" if held else "",
            )


class Journals:
    """The journals of the plans that have one, by plan name; each made on first use, and the
    input log (`open_log()`) opened with the first."""

    def __init__(self, open_log: Callable[[], InputLog], wall: Callable[[], int] = wall_ms) -> None:
        self._open_log = open_log
        self._input_log: InputLog | None = None
        self._wall = wall
        self._journals: dict[str, PlanJournal] = {}
        self._lock = threading.Lock()

    @property
    def input_log(self) -> InputLog:
        with self._lock:
            if self._input_log is None:
                self._input_log = self._open_log()
            return self._input_log

    def of(self, plan: str) -> PlanJournal:
        input_log = self.input_log
        with self._lock:
            journal = self._journals.get(plan)
            if journal is None:
                journal = self._journals[plan] = PlanJournal(plan, input_log, self._wall)
            return journal

    def get(self, plan: str) -> PlanJournal | None:
        return self._journals.get(plan)

    def truncate(self, plan: str, log_id: str, upto: int) -> int:
        """Drop the records of `plan`'s log up to `upto` if it is log `log_id`; segments deleted."""
        if self._journals.get(plan) is None:
            return 0
        return self.input_log.truncate(plan, upto, log_id)

    def sizes(self) -> dict[str, int]:
        return {} if self._input_log is None else self._input_log.sizes()

    def faults(self) -> dict[str, dict[str, Any]]:
        """Per plan whose log the disk does not take now (`InputLog.faults`)."""
        return {} if self._input_log is None else self._input_log.faults()

    def close(self) -> None:
        if self._input_log is not None:
            self._input_log.close()
