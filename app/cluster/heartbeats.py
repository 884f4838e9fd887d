"""`Heartbeats`: this member's heartbeats to the others, and theirs to it.

Every `heartbeat_ms` a heartbeat goes over an authenticated connection (`app.cluster.peers`)
to each well-known address and each member learned, naming the members the sender hears and
where they are (so members find each other through any one of them). What arrives feeds
`ha.membership.Membership`. A heartbeat connection closed in order (FIN) says the member's
process died or that it closed the connection itself (an error in its sender): a second
signal tells them apart. The member's cluster port is asked at once (`probe`); connection
refused means its process is gone (its kernel closed its listening socket with it), and the
member is gone at once: its plans are taken over without waiting for their leases. An
answer means it lives: a live notifier is never deposed by its own socket. A reset or failed
connection, or a probe that gets no answer, says nothing of the process (a firewall, a
partition): that member goes dead only when its heartbeats stay away.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from app.cluster.errors import PeerClosed, PeerError, PeerRefused
from app.cluster.peers import Connection, connect
from app.cluster.settings import ClusterSettings
from app.cluster.threads import forever
from ha.membership import Membership
from ha.messages import Heartbeat

log = logging.getLogger(__name__)

PROBE_SECONDS = 0.5  # how long the cluster port of a member whose connection closed may take to answer
PROBE_RETRY_SECONDS = 0.02


class Heartbeats:
    """`addresses` (member → its cluster address) is shared with the member, which reads it;
    `left(member)` is called when a member's last heartbeat connection closed in order."""

    def __init__(
        self,
        settings: ClusterSettings,
        membership: Membership,
        addresses: dict[str, str],
        stop: threading.Event,
        left: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.membership = membership
        self.addresses = addresses
        self._stop = stop
        self._left = left
        self._links: dict[str, threading.Thread] = {}  # heartbeat senders, by address
        self._inbound: dict[str, int] = {}  # open heartbeat connections per member
        self._lock = threading.Lock()

    def run(self) -> None:
        """Keep a sender going to every member and well-known address, until stopped."""
        forever(self._stop, self.settings.timeouts.heartbeat_ms / 1000, self._round, "heartbeats")

    def _round(self) -> None:
        now = time.monotonic()
        targets = set(self.settings.wka)
        for member in self.membership.targets(now):
            address = self.addresses.get(member)
            if address is not None:
                targets.add(address)
        targets.discard(self.settings.advertise)
        for address in targets:
            link = self._links.get(address)
            if link is None or not link.is_alive():
                link = threading.Thread(target=self._link, args=(address,), daemon=True)
                self._links[address] = link
                link.start()

    def _link(self, address: str) -> None:
        """Heartbeats to the member at `address` until the connection fails (a new link follows)."""
        settings = self.settings
        try:
            connection = connect(address, settings.me, "heartbeat", settings.keys, timeout=0.5)
        except PeerError:
            self._stop.wait(settings.timeouts.heartbeat_ms / 1000)
            return
        self.addresses.setdefault(connection.peer, address)
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                knows = {m: self.addresses.get(m) for m in self.membership.knows(now)}
                connection.send(Heartbeat(settings.advertise, knows))
                self._stop.wait(settings.timeouts.heartbeat_ms / 1000)
        except PeerError:
            pass
        finally:
            connection.close()

    def serve(self, connection: Connection) -> None:
        """A member's heartbeats, until its connection ends."""
        peer = connection.peer
        with self._lock:
            self._inbound[peer] = self._inbound.get(peer, 0) + 1
        died = False
        try:
            while True:
                message = connection.recv(256 * 1024)
                if isinstance(message, Heartbeat):
                    self._heard(peer, message)
        except PeerClosed:
            died = True
        finally:
            with self._lock:
                self._inbound[peer] -= 1
                last = self._inbound[peer] == 0
            if died and last and not self._stop.is_set():
                if self._process_gone(peer):
                    self.membership.lost(peer, time.monotonic())
                    self._left(peer)
                    log.info("cluster member %s left (its connection closed, its cluster port refuses)", peer)
                else:
                    log.info(
                        "cluster member %s closed its heartbeat connection; it lives (its cluster port answers)",
                        peer,
                    )

    def _process_gone(self, peer: str) -> bool:
        """Whether `peer`'s process is gone: its cluster port refuses a connection. A process
        being killed closes its sockets one by one, and its listening socket may still take a
        connection the process never answers: a probe that connects but gets no handshake is
        tried again until `PROBE_SECONDS` are over. An answer, or no refusal in time, is no
        proof of death."""
        address = self.addresses.get(peer)
        if address is None:
            return False
        deadline = time.monotonic() + PROBE_SECONDS
        while True:
            left = max(deadline - time.monotonic(), 0.05)
            try:
                connection = connect(
                    address,
                    self.settings.me,
                    "probe",
                    self.settings.keys,
                    timeout=left,
                    handshake_seconds=left,
                )
            except PeerRefused:
                return True
            except PeerError:
                if time.monotonic() + PROBE_RETRY_SECONDS >= deadline:
                    return False
                time.sleep(PROBE_RETRY_SECONDS)
                continue
            connection.close()
            return False

    def _heard(self, peer: str, heartbeat: Heartbeat) -> None:
        self.addresses[peer] = heartbeat.address
        for member, where in heartbeat.knows.items():
            if where is not None and member not in self.addresses:
                self.addresses[member] = where
        self.membership.heartbeat(peer, list(heartbeat.knows), time.monotonic())
