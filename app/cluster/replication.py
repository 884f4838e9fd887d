"""One ordered input per redundant plan: the notifier's `Sequencer` and a standby's `Follower`.

A standby subscribes to the plan's notifier with where its own log stands (log id, position,
and the lease epoch it followed last, its `term`). When that is a prefix of the notifier's log
in the notifier's current term, the notifier resumes from there; otherwise (a new node, a
node that restarted or was notifier itself, another term) it sends a snapshot of the plan's
state and the log position it covers, and the standby adopts the notifier's log from there.
Then come the records after it, in order, and `live`: from then on every record the notifier
appends is pushed at once, before the notifier runs the plan on it, and the standby
acknowledges each once it has appended it, before it runs the plan on it (the two members run
it at the same time, and the notifier's wait is one round trip). The notifier's
`settle(position)` waits for those acknowledgements (a standby that does not answer within
`ack_timeout` is dropped and must subscribe again), then releases the outputs of `position`
to the adapters: no output reaches a sink for an input a takeover
would not have. A standby counts itself able to take over once it was told `live`, and a
subscription that ends keeps it so (`Follower.caught_up`): it cannot know whether it was dropped.
So before the notifier acknowledges a position that some standby of its term may lack (it is
catching up, or its subscription ended), and before its term's first acknowledgement (standbys
of earlier terms may think themselves able too), it raises the lease's requirement to that
position in the registry (`ha.ports.LeaseStore`): the store then grants the lease only to a
member that holds it. The notifier also reports which positions' outputs are written
(`delivered`), so standbys forget the outputs they hold for a takeover.

A live stream is never quiet for long: with nothing to send for `KEEPALIVE_SECONDS`, the
notifier repeats its last `Delivered`. A live standby that hears nothing for
`FOLLOW_SILENCE_SECONDS` counts the notifier gone and ends the subscription, and so does a
joining one that gets no byte for `JOIN_SILENCE_SECONDS` (the notifier may be taking its
state): a host that vanished without FIN or RST (a power cut, a kernel panic, a cable) would
otherwise keep it waiting on a dead connection until TCP gives up (hours), following nobody
while another member notifies.

A standby subscribes only to a notifier that runs the same plan text (`PlanJournal.deployed`):
else it is told `other_text` and asks again. A standby whose plan was redeployed (an edit)
subscribes again asking for a snapshot (`fresh`): the records it applied between the two
members' redeploys ran through different texts, so its state is taken from the notifier anew.

Messages (`ha.messages`, over `app.cluster.peers`): standby → notifier `Subscribe`, `Ack`;
notifier → standby `State` (body: the state blob) and `CarriedOutput`s, or `Resume`; `Record`
(body: the encoded record), `Live`, `Delivered`, `Settled`, `NotNotifier`, `OtherText`, `Dropped`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from adapters.output.base import Origin
from app.cluster.errors import PeerClosed, PeerError, StateDoesNotFit
from app.cluster.gate import LockedGate
from app.cluster.peers import Connection
from app.persistence.errors import DiskFault, InputLogError
from app.persistence.journal import NotLeading, PlanJournal
from app.persistence.records import Events, decode, encode
from engine.events import Event
from ha.acks import Acknowledgements, Confirm, Drop, Refuse, Standby, Wait
from ha.messages import (
    Ack,
    CarriedOutput,
    Delivered,
    Dropped,
    Live,
    Message,
    NotNotifier,
    OtherText,
    Record,
    Resume,
    Settled,
    State,
    Subscribe,
)
from ha.ports import LogPosition
from ha.subscription import (
    FOLLOW_SILENCE_SECONDS,
    JOIN_SILENCE_SECONDS,
    KEEPALIVE_SECONDS,
    Subscription,
    resumes,
)

log = logging.getLogger(__name__)

MAX_QUEUED = 200_000  # records a standby may be behind before it is dropped
STATE_RETRY_SECONDS = 10.0  # before a standby asks again for a state that did not fit
DISK_RETRY_SECONDS = 1.0  # before a standby whose disk refused a record subscribes again


class _Subscriber:
    """A standby's subscription: what the acknowledgement rule knows of it (`standby`), its
    connection, and the records queued for it."""

    def __init__(self, connection: Connection, standby: Standby) -> None:
        self.connection = connection
        self.peer = connection.peer
        self.standby = standby
        self.queue: deque[Message] = deque()
        self.wakeup = threading.Condition()

    @property
    def gone(self) -> bool:
        return self.standby.gone

    def push(self, message: Message) -> None:
        with self.wakeup:
            if len(self.queue) >= MAX_QUEUED:
                self.drop(f"more than {MAX_QUEUED} records behind")
                return
            self.queue.append(message)
            self.wakeup.notify()

    def drop(self, why: str) -> None:
        if self.standby.gone:
            return
        self.standby.gone = True
        log.warning("standby %s dropped: %s; it must catch up again", self.peer, why)
        self.connection.close_with(Dropped(why))


class Sequencer:
    """The standbys of a plan this node notifies for (the journal's `replicas`): the
    acknowledgement rule of `ha.acks`, run with real time, sockets and the lease store."""

    def __init__(
        self,
        journal: PlanJournal,
        gate: LockedGate,
        ack_timeout: float = 1.0,
        holds: Callable[[], bool] = lambda: True,
        confirm: Callable[[float, LogPosition], bool] = lambda since, require: True,
        rule: Acknowledgements | None = None,
    ) -> None:
        """`holds()`: whether this node's lease holds now; `confirm(since, require)`: whether a
        renewal of it sent at `since` or later succeeded and raised the lease's requirement to
        `require` or beyond (asking the registry if need be); `rule`: the term's acknowledgement
        rule (`ha.seat.PlanSeat.acknowledgements`; by default a new term's)."""
        self.journal = journal
        self.gate = gate
        self._holds = holds
        self._confirm = confirm
        self.ack_timeout = ack_timeout
        self._rule = rule if rule is not None else Acknowledgements(journal.plan, ack_timeout)
        self._subscribers: list[_Subscriber] = []
        self._acks = threading.Condition()
        self._delivered = 0  # the last position whose outputs the standbys were told are written
        self.settling = 0  # `settle` calls under way

    # ---- the journal's side (Replicas) ------------------------------------------------------

    def appended(self, position: int, payload: bytes) -> None:
        for sub in self._subscribers:
            if not sub.gone:
                sub.push(Record(position, payload))

    def settle(self, position: int) -> None:
        """Return once `position` may be acknowledged (`ha.acks.Acknowledgements`), and release
        its outputs; `NotLeading` (not acknowledged: the client sends it again) when it may not."""
        with self._acks:
            self.settling += 1
        try:
            self._settle(position)
        finally:
            with self._acks:
                self.settling -= 1

    def _settle(self, position: int) -> None:
        start = time.monotonic()
        with self._acks:
            while True:
                journal = self.journal
                step = self._rule.decide(
                    position, start, time.monotonic(), LogPosition(journal.term, journal.position)
                )
                if isinstance(step, Wait):
                    self._acks.wait(max(0.0, step.until - time.monotonic()))
                elif isinstance(step, Drop):
                    for sub in self._subscribers:
                        if sub.standby in step.standbys:
                            sub.drop(step.why)
                else:
                    break
        if isinstance(step, Confirm):
            step = self._rule.confirmed(self._confirm(start, step.require))
        if isinstance(step, Refuse):
            raise NotLeading(step.why)  # not acknowledged: the client sends it again
        if not self._rule.closed:
            if not self._holds():
                msg = f"plan {self.journal.plan}: this node's notifier lease ran out"
                raise NotLeading(msg)
            self.gate.release(position)
        # (when closed: held by every standby in sync, acknowledged, its outputs the next notifier's)
        if self.journal.copies is not None:  # full-active-active: the standbys' copies of it too
            for sub in self._subscribers:
                if not sub.gone:
                    sub.push(Settled(position))

    # ---- status --------------------------------------------------------------------------------

    def in_sync(self) -> list[str]:
        """The standbys that hold every record and could take over now."""
        with self._acks:
            return self._rule.in_sync()

    def delivered(self, through: int) -> None:
        """The outputs of every position up to `through` are written: standbys may forget theirs."""
        self._delivered = max(self._delivered, through)
        for sub in self._subscribers:
            if not sub.gone:
                sub.push(Delivered(through))

    def drain(self, position: int, timeout: float) -> bool:
        """Wait until every standby in sync holds `position` (a graceful hand-over); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._acks:
            while not self._rule.drain_done(position):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._acks.wait(left)
        return True

    def close(self) -> None:
        """No longer the notifier: end every subscription (the standbys find the next one).
        A bundle whose `settle` has not returned yet is acknowledged only if every standby in
        sync already held it: the others are refused, and their clients send them again."""
        with self._acks:
            self._rule.close()
        for sub in list(self._subscribers):
            sub.connection.close()
            with sub.wakeup:
                sub.wakeup.notify_all()
        with self._acks:
            self._acks.notify_all()

    # ---- a standby's subscription ------------------------------------------------------------

    def serve(self, connection: Connection, request: Subscribe) -> None:
        """Serve standby `connection` that sent `request` (`sub`), until it or this node stops."""
        journal = self.journal
        with journal.lock:
            if self._rule.closed or not journal.leading:
                connection.send(NotNotifier())
                return
            first, _ = journal._log.bounds(journal.plan)
            if request.text != journal.deployed:
                connection.send(OtherText())  # one of the two redeploys is still to come
                return
            resume = resumes(request, journal.log_id, journal.term, first, journal.position)
            state = None if resume else journal.captured()
            carried, delivered, covers = self.gate.carried() if state is not None else ([], 0, 0)
            start = request.position if resume else journal.position
            log_id, term, clock = journal.log_id, journal.term, journal.clock.now
            recent = () if resume else tuple(journal.recent())
            with self._acks:
                sub = _Subscriber(connection, self._rule.subscribed(connection.peer, journal.position))
                self._subscribers = [*self._subscribers, sub]
        try:
            if state is None:
                connection.send(Resume(log_id, start, term, clock))
            else:
                connection.send(
                    State(log_id, start, term, clock, recent, delivered, covers, len(carried), state.encode())
                )
                for stream_id, events, where in carried:  # outputs not known written: it holds them too
                    out = Events(stream_id, [e.timestamp for e in events], [tuple(e.data) for e in events])
                    expired = tuple(i for i, e in enumerate(events) if e.expired)
                    connection.send(
                        CarriedOutput(where.log_id, where.position, where.index, expired, encode(out))
                    )
            for position, payload in journal._log.read_payloads(journal.plan, start):
                if position > sub.standby.joined_at:
                    break
                connection.send(Record(position, payload))
            with self._acks:
                sub.standby.live = True  # before it is told: a bundle settled from now on waits for it
            connection.send(Live())
            log.info(
                "plan %s: standby %s %s at position %d",
                journal.plan, sub.peer, "resumed" if resume else "joined from a snapshot", start,
            )  # fmt: skip
            sender = threading.Thread(target=self._send_loop, args=(sub,), daemon=True)
            sender.start()
            while not sub.gone:
                answer = connection.recv(4096)
                if isinstance(answer, Ack):
                    with self._acks:
                        self._rule.acknowledged(sub.standby, answer.position, answer.ready)
                        self._acks.notify_all()
        except (PeerError, InputLogError) as exc:
            if not sub.gone and not isinstance(exc, PeerClosed):
                log.warning("plan %s: standby %s: %s", journal.plan, sub.peer, exc)
        finally:
            with self._acks:
                self._rule.ended(sub.standby)
                self._subscribers = [s for s in self._subscribers if s is not sub]
                self._acks.notify_all()
            with sub.wakeup:
                sub.wakeup.notify_all()

    def _send_loop(self, sub: _Subscriber) -> None:
        try:
            while True:
                with sub.wakeup:
                    if not sub.queue and not sub.gone:
                        sub.wakeup.wait(KEEPALIVE_SECONDS)
                    if sub.gone:
                        return
                    batch = list(sub.queue)
                    sub.queue.clear()
                if not batch:  # quiet: say this notifier lives (`FOLLOW_SILENCE_SECONDS`)
                    batch = [Delivered(self._delivered)]
                for message in batch:
                    sub.connection.send(message)
        except PeerError:
            sub.standby.gone = True
            sub.connection.close()


class Follower:
    """A standby's subscription to its plan's notifier, kept up by a thread until `stop`.

    `notifier()` names where the notifier is reachable and the lease's (holder, epoch) naming it
    (None: none known yet), recorded with each subscription (`joined_under`) so that a join the
    lease has since moved away from is left (`leave_join`); `connect(address)`
    opens a connection to it; `install(blob)` replaces the plan's state with the notifier's;
    `ended()` is called when a subscription ends (the notifier may have handed over or died).
    """

    def __init__(
        self,
        journal: PlanJournal,
        gate: LockedGate,
        notifier: Callable[[], tuple[str, tuple[str, int] | None] | None],
        connect: Callable[[str], Connection],
        install: Callable[[bytes], Any],
        ended: Callable[[], object] = lambda: None,
    ) -> None:
        self.journal = journal
        self.gate = gate
        self._notifier = notifier
        self._connect = connect
        self._install = install
        self._ended = ended
        self.joined_under: tuple[str, int] | None = None  # the lease's (holder, epoch) at subscribing
        self._stop = threading.Event()
        self._connection: Connection | None = None
        self._connecting = False  # opening a connection to the notifier (stop does not wait for it)
        self._subscription: Subscription[Origin, State] | None = None  # the one it follows now
        self.ended_live = False  # the last subscription ended while live (the notifier died)
        self.ended_at = 0.0  # when a subscription last ended (monotonic seconds)
        self._fresh = False  # ask for the notifier's state instead of resuming (a redeploy)
        self._resyncs = 0  # how many times `resync` was asked for
        self._thread = threading.Thread(target=self._run, name=f"follow-{journal.plan}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 5.0) -> bool:
        """Stop following; whether the thread applies nothing more (`ended`), waiting up to
        `wait` seconds for it. A thread still opening a connection (a paused notifier accepts
        it and never answers the handshake) is not waited for: it sees the stop as soon as the
        connection opens, before it subscribes. False: it is still applying what the notifier
        sent (a large state being installed, a stalled disk), and this member must not notify
        from its log and state until it has ended."""
        self._stop.set()
        connection = self._connection
        if connection is not None:
            connection.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(0.1 if self._connecting else wait)
        return self.ended

    @property
    def ended(self) -> bool:
        """Whether its thread applies nothing more: it ended (or never started), or it is stopped
        while opening a connection."""
        return not self._thread.is_alive() or (self._stop.is_set() and self._connecting)

    @property
    def stopping(self) -> bool:
        """Stopped, its thread still applying what the notifier sent."""
        return self._stop.is_set() and not self.ended

    def resync(self) -> None:
        """Take the notifier's state anew (this member's plan was redeployed): end the subscription
        and subscribe again asking for a snapshot. Until it arrives this standby keeps what it
        held (it may still take over: its state ran partly through the old text)."""
        self._fresh = True
        self._resyncs += 1
        connection = self._connection
        if connection is not None:
            connection.close()

    def leave_join(self) -> None:
        """End a subscription that is not live yet (the lease names another notifier now, see
        `ha.seat.PlanSeat.leaves_join`): the thread subscribes again to whoever notifies."""
        connection = self._connection
        if connection is not None and not self.live:
            connection.close()

    @property
    def live(self) -> bool:
        """Whether it receives the notifier's records as it appends them."""
        subscription = self._subscription
        return subscription is not None and subscription.live

    @property
    def caught_up(self) -> bool:
        """Whether this standby holds every record the notifier had acknowledged (and the outputs
        a takeover must deliver)."""
        return (self.live or self.ended_live) and self.gate.complete

    def _run(self) -> None:
        while not self._stop.is_set():
            notifier = self._notifier()
            if notifier is None:
                self._stop.wait(0.05)
                continue
            address, self.joined_under = notifier
            pause = 0.05
            try:
                self._follow(address)  # returned: stopped, or that member is not the notifier (yet)
            except PeerError as exc:
                # the subscription ended (the notifier died, stopped, or the network failed): if
                # it was live, this standby holds everything the notifier acknowledged; an attempt
                # that never connected (nothing listens there any more) changes nothing of that
                if self._connection is not None:
                    subscription = self._subscription
                    self.ended_live = subscription is not None and subscription.ended()
                    self.ended_at = time.monotonic()
                    self._ended()
                if not isinstance(exc, PeerClosed):
                    log.warning("plan %s: following the notifier at %s: %s", self.journal.plan, address, exc)
            except StateDoesNotFit as exc:  # asking again at once would not help
                self.ended_live = False
                log.warning("%s (asking again in %.0f s)", exc, STATE_RETRY_SECONDS)
                self._stop.wait(STATE_RETRY_SECONDS)
            except Exception as exc:  # a record it could not apply: it has a gap
                self.ended_live = False
                if isinstance(exc, DiskFault):  # its input log says so, once an interval
                    log.debug("plan %s: following the notifier at %s: %s", self.journal.plan, address, exc)
                    pause = DISK_RETRY_SECONDS
                elif isinstance(exc, InputLogError):
                    log.warning("plan %s: following the notifier at %s: %s", self.journal.plan, address, exc)
                else:
                    log.exception("plan %s: following the notifier at %s failed", self.journal.plan, address)
            finally:
                self._subscription = None
                connection, self._connection = self._connection, None
                if connection is not None:
                    connection.close()
            self._stop.wait(pause)

    def _follow(self, address: str) -> None:
        journal = self.journal
        self._connecting = True
        try:
            connection = self._connection = self._connect(address)
        finally:
            self._connecting = False
        if self._stop.is_set():
            return
        resyncs = self._resyncs  # a state asked for before a later `resync` does not end that one
        subscription = Subscription[Origin, State](self.gate)
        self._subscription = subscription
        connection.send(
            Subscribe(
                journal.plan, journal.log_id, journal.position, journal.term, journal.deployed, self._fresh
            )
        )

        def acknowledge(position: int) -> None:
            journal.on_disk()
            connection.send(Ack(position, self.gate.complete))

        while not self._stop.is_set():
            message = connection.recv(idle=FOLLOW_SILENCE_SECONDS if self.live else JOIN_SILENCE_SECONDS)
            if isinstance(message, State | CarriedOutput):
                if isinstance(message, State):
                    self.ended_live = False
                    subscription.state(
                        message.position, message.delivered, message.covers, message.carried, message
                    )
                else:
                    subscription.carried(_carried(journal.plan, message))
                state = subscription.pending
                if state is not None:  # with every output the notifier carries with it
                    self._adopt(state, resyncs)
                    subscription.installed()
            elif isinstance(message, Record):
                # a gap raises: the subscription ends; acknowledged once appended (under fsync
                # "always", once on disk), before the plan runs it
                journal.apply(
                    message.position, message.body, acknowledge if subscription.acknowledges else None
                )
            elif isinstance(message, Resume):
                self.ended_live = False
                journal.resume(message.term)
            elif isinstance(message, Live):
                subscription.went_live()
                journal.on_disk()
                connection.send(Ack(journal.position, self.gate.complete))
            elif isinstance(message, Delivered):
                subscription.delivered(message.position)
                journal.keep_delivered(self.gate.delivered, time.monotonic(), leading=False)
                if subscription.acknowledges:
                    journal.on_disk()
                    connection.send(Ack(journal.position, self.gate.complete))
            elif isinstance(message, Settled):
                journal.settled(message.position)
            elif isinstance(message, NotNotifier | OtherText):
                return
            elif isinstance(message, Dropped):
                self.ended_live = subscription.ended(dropped=True)
                log.warning("plan %s: the notifier dropped this standby: %s", journal.plan, message.why)
                return

    def _adopt(self, state: State, resyncs: int) -> None:
        """Install the notifier's `state` and adopt its log (`resyncs`: the count of `resync`
        asks when the subscription began: a later one still wants a state)."""
        annex = self._install(state.body)
        self.journal.adopt(
            state.log_id,
            state.position,
            state.clock,
            state.term,
            list(state.recent),
            annex.get("senders", ()) if isinstance(annex, dict) else (),
        )
        if self._resyncs == resyncs:
            self._fresh = False


def _carried(plan: str, message: CarriedOutput) -> tuple[int, str, list[Event], Origin]:
    """An output the notifier held when this standby joined, as the gate holds it."""
    record = decode(message.body)
    if not isinstance(record, Events):
        msg = "a carried output must be events"
        raise InputLogError(msg)
    expired = set(message.expired)
    events = [
        Event(ts, row, i in expired)
        for i, (ts, row) in enumerate(zip(record.timestamps, record.rows, strict=True))
    ]
    return (
        message.position,
        record.stream,
        events,
        Origin(plan, message.log_id, message.position, message.index),
    )
