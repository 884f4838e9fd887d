"""A heartbeat connection that closes in order is a member's death only when its cluster port
refuses a connection too: a live member closing its own socket is never taken for dead."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from app.cluster.heartbeats import Heartbeats
from app.cluster.peers import Connection, PeerServer, connect
from app.cluster.settings import ClusterSettings
from app.cluster.tls import ClusterKeys
from ha.lease import Timing
from ha.membership import Membership, Timeouts
from ha.messages import Heartbeat

SECRET = b"a-test-cluster-secret-of-some-length"
TIMEOUTS = Timeouts()


def settings(me: str, port: int = 0) -> ClusterSettings:
    return ClusterSettings(
        me, f"127.0.0.1:{port}", "127.0.0.1", port, (), ClusterKeys(SECRET), TIMEOUTS, Timing()
    )


class Watcher:
    """Member b's side: its heartbeats serving what a member sends it."""

    def __init__(self) -> None:
        self.membership = Membership("b", TIMEOUTS, ())
        self.left: list[str] = []
        self.served = threading.Event()
        self.addresses: dict[str, str] = {}
        self.heartbeats = Heartbeats(
            settings("b"), self.membership, self.addresses, threading.Event(), self.left.append
        )
        self.server = PeerServer("127.0.0.1", 0, "b", SECRET, self.serve)
        self.server.start()

    def serve(self, connection: Connection) -> None:
        try:
            self.heartbeats.serve(connection)
        finally:
            self.served.set()


@pytest.fixture
def watcher() -> Iterator[Watcher]:
    made = Watcher()
    yield made
    made.server.stop()


def a_member(port_of_b: int) -> tuple[PeerServer, Connection]:
    """Member a: its own cluster port, and a heartbeat connection to b."""
    server = PeerServer("127.0.0.1", 0, "a", SECRET, lambda connection: None)
    server.start()
    connection = connect(f"127.0.0.1:{port_of_b}", "a", "heartbeat", SECRET)
    connection.send(Heartbeat(f"127.0.0.1:{server.port}", {}))
    return server, connection


def wait_heard(watcher: Watcher) -> None:
    deadline = time.monotonic() + 5
    while "a" not in watcher.membership.alive(time.monotonic()):
        assert time.monotonic() < deadline, "a's heartbeat never arrived"
        time.sleep(0.01)


def test_a_live_member_closing_its_heartbeat_connection_is_not_taken_for_dead(watcher: Watcher) -> None:
    server, connection = a_member(watcher.server.port)
    try:
        wait_heard(watcher)
        connection.close()  # an error in a's sender: its process and cluster port live on
        assert watcher.served.wait(5)
        assert watcher.left == []
        assert not watcher.membership.lost_connection("a")
    finally:
        server.stop()


def test_a_member_whose_cluster_port_refuses_after_the_close_is_gone_at_once(watcher: Watcher) -> None:
    server, connection = a_member(watcher.server.port)
    wait_heard(watcher)
    server.stop()  # as its kernel does when the process dies: the port refuses ...
    connection.close()  # ... and the connection closes in order
    assert watcher.served.wait(5)
    assert watcher.left == ["a"]
    assert watcher.membership.lost_connection("a")


def test_a_port_that_takes_the_probe_but_never_answers_and_then_refuses_is_a_dying_process() -> None:
    """A process being killed may close its heartbeat connection before its listening socket:
    the probe that connects then is answered by no one, and the next one is refused."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    watcher = Heartbeats(
        settings("b"), Membership("b", TIMEOUTS, ()), {"a": f"127.0.0.1:{port}"}, threading.Event(), print
    )
    threading.Timer(0.1, listener.close).start()  # the kernel gets to the listening socket 100 ms later
    assert watcher._process_gone("a")


def test_a_port_that_takes_the_probe_and_stays_silent_is_no_proof_of_death() -> None:
    """SIGSTOP: the kernel takes the connection, the process answers nothing: not dead (yet)."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        watcher = Heartbeats(
            settings("b"),
            Membership("b", TIMEOUTS, ()),
            {"a": f"127.0.0.1:{listener.getsockname()[1]}"},
            threading.Event(),
            print,
        )
        assert not watcher._process_gone("a")
    finally:
        listener.close()
