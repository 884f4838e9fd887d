"""The fault tests' hosts (`tests.support.hosts`): namespaces joined by the user-space wire,
which must do to each direction what the test asks and nothing else."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.hosts import Network, sweep
from tests.support.wire import Shape

pytestmark = pytest.mark.slow

ECHO = """
import socket, sys
server = socket.create_server((sys.argv[1], 7000))
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)
"""


@pytest.fixture
def network() -> Iterator[Network]:
    with Network(["a", "b"], seed=7) as net:
        yield net


@contextmanager
def echo_on(net: Network, name: str) -> Iterator[subprocess.Popen[str]]:
    """An echo server on port 7000 of host `name`."""
    host = net[name]
    with subprocess.Popen(
        [*host.prefix, sys.executable, "-c", ECHO, host.address], stdout=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "listening"
            yield server
        finally:
            server.kill()


def round_trips(address: str, count: int, timeout: float = 2.0) -> list[float]:
    """Seconds of each of `count` 100-byte round trips on one connection from this host."""
    times = []
    with socket.create_connection((address, 7000), timeout=timeout) as conn:
        for _ in range(count):
            start = time.monotonic()
            conn.sendall(b"x" * 100)
            got = b""
            while len(got) < 100:
                got += conn.recv(100 - len(got))
            times.append(time.monotonic() - start)
    return times


def test_a_host_reaches_another_through_the_wire_and_a_delay_holds_each_way(network: Network) -> None:
    with echo_on(network, "a"):
        plain = round_trips(network["a"].address, 20)
        network.shape(["a"], ["here"], Shape(delay=0.03))
        network.shape(["here"], ["a"], Shape(delay=0.02))
        slowed = round_trips(network["a"].address, 10)
        network.heal()
        healed = round_trips(network["a"].address, 10)
    assert statistics.median(plain) < 0.01, plain
    assert all(0.05 <= t < 0.09 for t in slowed), slowed  # 30 ms there, 20 ms back, every time
    assert statistics.median(healed) < 0.01, healed


def test_loss_is_drawn_per_frame_and_tcp_carries_on(network: Network) -> None:
    with echo_on(network, "a"):
        before = network.counts()["dropped"]
        network.between(["a", "here"], Shape(loss=0.1))
        times = round_trips(network["a"].address, 20, timeout=120)
        dropped = network.counts()["dropped"] - before
    assert len(times) == 20
    assert dropped > 2, dropped


def test_a_one_way_cut_stops_one_direction_only(network: Network) -> None:
    """From `a` nothing reaches here: a connection from here cannot complete (the SYN-ACK is
    lost), while `b` still reaches `a` both ways."""
    with echo_on(network, "a"):
        network.cut(["a"], ["here"])
        with pytest.raises(OSError):
            round_trips(network["a"].address, 1, timeout=1.0)
        result = subprocess.run(
            [*network["b"].prefix, sys.executable, "-c",
             f"import socket; c = socket.create_connection(('{network['a'].address}', 7000), timeout=2);"
             "c.sendall(b'ping'); print(c.recv(4).decode())"],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
        network.heal()
        again = round_trips(network["a"].address, 1)
    assert result.stdout.strip() == "ping", result.stderr
    assert len(again) == 1


def test_an_unplugged_host_sends_no_reset_when_its_process_dies(network: Network) -> None:
    """The peer of a connection to a host that lost its link hears nothing, not even when the
    process behind the connection dies: its reads time out instead of ending."""
    with echo_on(network, "a") as server, socket.create_connection((network["a"].address, 7000), 1.0) as conn:
        network.unplug("a")
        server.kill()
        server.wait()
        conn.sendall(b"hello")
        with pytest.raises(TimeoutError):
            conn.recv(10)


def test_closing_deletes_the_namespaces_and_a_sweep_finds_none_left() -> None:
    net = Network(["a"], seed=1)
    namespace = net["a"].namespace
    net.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert namespace is not None and namespace not in listed
    assert sweep() == 0
