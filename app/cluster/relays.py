"""Bundles a standby relays to its plan's notifier (failover and active-active modes).

Clients may send a redundant plan's events to any member; a member that is not the plan's
notifier relays each bundle to it over a `relay` connection (`Relays.relay_for`) and answers
its client only once the notifier took it (`Ok`) — or raises `NotLeading` when no notifier
took it within `RELAY_WAIT_SECONDS` (the client is not acknowledged and sends it again). Each
bundle carries an id that is the same on every attempt (`<member incarnation>:<n>`), so the
notifier (`Relays.serve`) answers a repeat whose first answer was lost as it answered the
first attempt, without processing it twice (`ha.relays.RelayedBundles`, behind `RelayMemory`).

Each plan relays over a connection (and a lock) of its own, so a plan whose notifier does not
answer holds up no other plan's bundles; and no attempt waits past the bundle's
`RELAY_WAIT_SECONDS`: a notifier whose host vanished without FIN or RST (its connection dead,
never read as ended) costs its clients a refusal and a resend, never a relay stuck until TCP
keepalive. An attempt that got no answer is made again, under the same id, on a new
connection; a bundle refused at the deadline that the notifier took late is known when the
client sends it again (its senders' marks, or for foreign clients the notifier's digests of
what it sequenced lately, `ha.resends.Resends.relayed_again`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from adapters.senders import Runs
from app.cluster.errors import PeerError
from app.cluster.peers import Connection, connect
from app.cluster.settings import ClusterSettings
from app.persistence.journal import BundleFailed, NotLeading, PlanJournal, Relay
from app.persistence.records import Events, decode, encode
from engine.errors import CEPError
from ha.messages import Ok, Refused, RelayedEvents
from ha.relays import Attempt, RelayedBundles

log = logging.getLogger(__name__)

RELAY_WAIT_SECONDS = 5.0  # how long a bundle for a plan without a reachable notifier waits for one


class Relays:
    """This member's relays to the notifiers, and the relays it serves as a notifier.

    `leading(plan)`: True while this member notifies for `plan`, False while it does not, None
    when the plan is not deployed here; `notifier_address(plan)`: where the plan's notifier is
    (None: not known now); `notifying(plan)`: the plan's journal and relay memory while this
    member notifies for it, else None.
    """

    def __init__(
        self,
        settings: ClusterSettings,
        leading: Callable[[str], bool | None],
        notifier_address: Callable[[str], str | None],
        notifying: Callable[[str], tuple[PlanJournal, RelayMemory] | None],
        admit: Callable[[str, int], None] = lambda plan, events: None,
    ) -> None:
        """`admit(plan, events)`: waits for room in what the plan's outputs feed, or raises
        `Busy` (the notifier's backpressure on relayed bundles, as on its own clients')."""
        self.settings = settings
        self._leading = leading
        self._notifier_address = notifier_address
        self._notifying = notifying
        self._admit = admit
        self._connections: dict[tuple[str, str], Connection] = {}  # per (notifier address, plan)
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()  # guards the two maps
        self._incarnation = uuid.uuid4().hex[:12]  # this process: relay ids never repeat across restarts
        self._ids = itertools.count(1)

    def relay_for(self, name: str) -> Relay:
        """What plan `name`'s journal calls, while this member follows, for a bundle clients sent here."""

        def relay(
            stream: str, rows: list[tuple[Any, ...]], timestamps: list[int], senders: Runs = ()
        ) -> None:
            deadline = time.monotonic() + RELAY_WAIT_SECONDS
            body = encode(Events(stream, timestamps, rows, 0, senders=senders))
            relay_id = f"{self._incarnation}:{next(self._ids)}"  # the same for every attempt
            while True:
                if self._leading(name) is not False:
                    msg = f"plan {name}: this node leads it now"
                    raise NotLeading(msg)
                address = self._notifier_address(name)
                if address is not None:
                    try:
                        self._relay(address, RelayedEvents(name, relay_id, body), deadline)
                        return
                    except PeerError as exc:
                        log.debug("plan %s: relay to %s failed: %s", name, address, exc)
                if time.monotonic() >= deadline:
                    msg = f"plan {name}: no notifier took the events within {RELAY_WAIT_SECONDS:.0f} s"
                    raise NotLeading(msg)
                time.sleep(0.05)

        return relay

    def _relay(self, address: str, message: RelayedEvents, deadline: float) -> None:
        """One attempt, answered by `deadline` (monotonic s) or `PeerError`."""
        key = (address, message.plan)
        with self._lock:
            lock = self._locks.get(key) or self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            msg = f"another relay of plan {message.plan} to {address} is still waiting for its answer"
            raise PeerError(msg)
        try:
            connection = self._connections.get(key)
            if connection is None or connection.closed:
                connection = self._connections[key] = connect(
                    address, self.settings.me, "relay", self.settings.keys
                )
            try:
                connection.send(message)
                answer = connection.recv(64 * 1024, timeout=max(0.05, deadline - time.monotonic()))
            except PeerError:
                connection.close()  # its answer may still come: a new connection for the next attempt
                raise
        finally:
            lock.release()
        if not isinstance(answer, Ok):
            raise PeerError(answer.why if isinstance(answer, Refused) else "the notifier refused the events")

    def close(self) -> None:
        with self._lock:
            connections = list(self._connections.values())
        for connection in connections:
            connection.close()

    def serve(self, connection: Connection) -> None:
        """Bundles a member relays to this one, until its connection ends."""
        while True:
            message = connection.recv()
            if not isinstance(message, RelayedEvents):
                continue
            notifying = self._notifying(message.plan)
            if notifying is None:
                connection.send(Refused(f"not the notifier of plan {message.plan}"))
                continue
            journal, relayed = notifying
            relay_id = f"{connection.peer}/{message.relay_id}"
            token, refusal = relayed.begin(relay_id, RELAY_WAIT_SECONDS)
            if not token:  # sent again: its answer was lost
                connection.send(Ok() if refusal is None else Refused(refusal))
                continue
            try:
                record = decode(message.body)
                if not isinstance(record, Events):
                    msg = "a relayed record must be events"
                    raise CEPError(msg)
                self._admit(message.plan, len(record.rows))
                try:
                    position = journal.send(
                        record.stream, record.rows, record.timestamps, forward=False, senders=record.senders
                    )
                except BundleFailed as exc:  # taken (and failed as a replay will): not to be sent again
                    log.error("plan %s failed on relayed events: %s", message.plan, exc)
                    position = exc.position
                journal.durable(position)
            except CEPError as exc:
                relayed.refused(relay_id, token)
                connection.send(Refused(str(exc)))
                continue
            except BaseException:
                relayed.refused(relay_id, token)
                raise
            relayed.taken(relay_id, token)
            # the relaying member tells its client
            journal.answered(position, record.stream, record.rows, record.timestamps, record.senders)
            connection.send(Ok())


class RelayMemory:
    """The notifier's `ha.relays.RelayedBundles` behind one lock, for the threads that serve
    relays: a repeat of an attempt still being processed waits for it to be decided."""

    def __init__(self, keep: int = 10_000) -> None:
        self._memory = RelayedBundles(keep)
        self._decided = threading.Condition()

    def begin(self, relay_id: str, wait: float) -> tuple[int, str | None]:
        """(token, None): process the attempt, then `taken` or `refused`; (0, None): an earlier
        attempt took it (answer it as taken); (0, why): answer it refused (the earlier attempt
        was refused, or is still undecided after `wait` seconds)."""
        with self._decided:
            status, token = self._memory.begin(relay_id)
            if status is Attempt.NEW:
                return token, None
            self._decided.wait_for(lambda: self._memory.status(relay_id) is not Attempt.PENDING, wait)
            status = self._memory.status(relay_id)
        if status is Attempt.TAKEN:
            return 0, None
        if status is Attempt.PENDING:
            return 0, "the first attempt at this bundle is still being processed"
        return 0, "the first attempt at this bundle was refused"

    def taken(self, relay_id: str, token: int) -> None:
        with self._decided:
            self._memory.taken(relay_id, token)
            self._decided.notify_all()

    def refused(self, relay_id: str, token: int) -> None:
        with self._decided:
            self._memory.refused(relay_id, token)
            self._decided.notify_all()
