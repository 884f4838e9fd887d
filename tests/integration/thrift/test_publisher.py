"""The client publisher over real sockets: fail-over, load balancing, groups, a group down (§10)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from adapters.thrift.forwarder import ForwarderSettings
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.publisher import NotDelivered, Publisher
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from tests.support.nodes import free_port

from .conftest import PIZZA, PeerFactory, pizza_events

pytestmark = pytest.mark.thrift


def receiver(server: DataBridgeServer | None) -> tuple[str, str]:
    """The receiver and authenticator URL of `server`; of a port nobody listens on for None."""
    if server is None:
        dead = free_port()
        return f"tcp://127.0.0.1:{dead}", f"ssl://127.0.0.1:{dead}"
    return f"tcp://127.0.0.1:{server.port}", f"ssl://127.0.0.1:{server.tls_port}"


def publisher(certificate: str, groups: list[list[DataBridgeServer | None]], sep: str) -> Publisher:
    """A publisher to `groups` of receivers, joined with `sep` within a group."""
    urls = [[receiver(s) for s in group] for group in groups]
    if len(groups) == 1:
        receivers, auths = sep.join(r for r, _ in urls[0]), sep.join(a for _, a in urls[0])
    else:
        receivers = ",".join("{" + sep.join(r for r, _ in g) + "}" for g in urls)
        auths = ",".join("{" + sep.join(a for _, a in g) + "}" for g in urls)
    settings = ForwarderSettings(
        receivers,
        "admin",
        "admin",
        authenticator_url=auths,
        bundle_size=20,
        retry_initial_ms=20,
        retry_max_ms=200,
        ca_file=certificate,
        timeout_seconds=5.0,
    )
    return Publisher(settings, PIZZA)


def numbers(handler: InMemoryHandler) -> list[int]:
    return [int(e.payload[0]) for e in handler.events if e.payload]


def publish_all(sender: Publisher, total: int, size: int = 20, pause: float = 0.0) -> None:
    for start in range(0, total, size):
        sender.publish(pizza_events(size, start=start))
        time.sleep(pause)


def test_fail_over_sends_to_the_second_receiver_while_the_first_is_down(
    peers: PeerFactory, certificate: str
) -> None:
    alive, handler = peers()
    with publisher(certificate, [[None, alive]], "|") as sender:
        publish_all(sender, 200)
        report = sender.close(1)
    assert numbers(handler) == list(range(200))
    assert handler.definition(PIZZA.stream_id) is not None
    assert report.lost == 0
    (group,) = report.groups
    assert [r.sent for r in group.receivers] == [0, 200]
    assert group.receivers[0].down and "cannot open a TLS connection" in str(group.receivers[0].error)


def test_fail_over_loses_nothing_when_the_first_receiver_is_killed_mid_stream(
    peers: PeerFactory, certificate: str
) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    killed = threading.Event()

    def kill_after_300() -> None:
        first_handler.wait_for(300, 10)
        first.stop(timeout=2)
        killed.set()

    killer = threading.Thread(target=kill_after_300)
    killer.start()
    with publisher(certificate, [[first, second]], "|") as sender:
        publish_all(sender, 600, size=10, pause=0.005)
        report = sender.close(1)
    killer.join()
    assert killed.is_set()
    # the first receiver got a prefix, the second the rest from where the first stopped, or from
    # the start of the one bundle (of up to 20) that was in flight at the kill, which then arrived
    # at both (at least once): nothing lost, nothing out of order, nothing else twice
    first_numbers, second_numbers = numbers(first_handler), numbers(second_handler)
    stopped = len(first_numbers)
    assert first_numbers == list(range(stopped)) and 300 <= stopped < 600
    resumed = second_numbers[0] if second_numbers else 600
    assert second_numbers == list(range(resumed, 600))
    assert stopped - 20 <= resumed <= stopped, f"first got 0..{stopped - 1}, second {resumed}..599"
    assert second_handler.definition(PIZZA.stream_id) is not None
    assert report.lost == 0 and report.events == 600


def test_fail_over_stays_on_the_first_receiver_while_it_answers(peers: PeerFactory, certificate: str) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    with publisher(certificate, [[first, second]], "|") as sender:
        publish_all(sender, 100)
    assert numbers(first_handler) == list(range(100)) and second_handler.events == []


def test_load_balancing_spreads_the_bundles(peers: PeerFactory, certificate: str) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    with publisher(certificate, [[first, second]], ",") as sender:
        publish_all(sender, 400)
        report = sender.close(1)
    assert sorted(numbers(first_handler) + numbers(second_handler)) == list(range(400))
    assert len(first_handler.events) == len(second_handler.events) == 200
    assert [r.sent for r in report.groups[0].receivers] == [200, 200]
    assert first_handler.definition(PIZZA.stream_id) and second_handler.definition(PIZZA.stream_id)


def test_every_group_gets_every_event(peers: PeerFactory, certificate: str) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    with publisher(certificate, [[first], [second]], ",") as sender:
        publish_all(sender, 120)
        report = sender.close(5)
    assert numbers(first_handler) == numbers(second_handler) == list(range(120))
    assert [g.sent for g in report.groups] == [120, 120] and report.lost == 0


def test_a_group_that_is_down_is_not_fatal_and_is_reported(peers: PeerFactory, certificate: str) -> None:
    alive, handler = peers()
    with publisher(certificate, [[alive], [None]], ",") as sender:
        publish_all(sender, 100)
        started = time.monotonic()
        report = sender.close(0.3)
    assert time.monotonic() - started < 3
    assert numbers(handler) == list(range(100))
    assert report.lost == 0 and report.reached == 100
    up, down = report.groups
    assert (up.sent, up.pending) == (100, 0)
    assert (down.sent, down.pending) == (0, 100)
    assert "0 delivered, 100 pending; tcp://127.0.0.1:" in down.describe()
    assert "down: cannot open a TLS connection to 127.0.0.1:" in down.describe()


def test_a_group_that_comes_back_gets_the_events_it_missed(
    settings: ServerSettings, certificate: str
) -> None:
    early, late = InMemoryHandler({"admin": "admin"}), InMemoryHandler({"admin": "admin"})
    with DataBridgeServer(settings, early) as alive:
        later = DataBridgeServer(settings, late)
        later.start()
        port, tls_port = later.port, later.tls_port
        later.stop(timeout=2)
        with publisher(certificate, [[alive], [later]], ",") as sender:
            publish_all(sender, 60)
            fixed = ServerSettings(**{**settings.__dict__, "port": port, "tls_port": tls_port})
            with DataBridgeServer(fixed, late):
                report = sender.close(10)
    assert numbers(early) == numbers(late) == list(range(60))
    assert [g.pending for g in report.groups] == [0, 0]


def test_no_group_accepting_is_an_error_naming_each_receiver(certificate: str) -> None:
    with publisher(certificate, [[None, None]], "|") as sender:
        started = time.monotonic()
        with pytest.raises(
            NotDelivered, match=r"no receiver group acknowledged 20 events: tcp://127\.0\.0\.1:"
        ):
            sender.publish(pizza_events(20))
        assert time.monotonic() - started < 3
        report = sender.close(0)
    assert report.lost == 20 and report.groups[0].pending == 20
    assert len(report.groups[0].receivers) == 2 and all(r.down for r in report.groups[0].receivers)


def test_a_full_buffer_drops_and_counts_for_the_group_that_is_down(
    peers: PeerFactory, certificate: str
) -> None:
    alive, handler = peers()
    urls = [receiver(alive), receiver(None)]
    settings = ForwarderSettings(
        ",".join("{" + r + "}" for r, _ in urls),
        "admin",
        "admin",
        authenticator_url=",".join("{" + a + "}" for _, a in urls),
        buffer_events=50,
        retry_initial_ms=20,
        retry_max_ms=200,
        ca_file=certificate,
    )
    with Publisher(settings, PIZZA) as sender:
        publish_all(sender, 100)
        report = sender.close(0)
    assert report.lost == 0 and len(handler.events) == 100
    assert (report.groups[1].pending, report.groups[1].dropped) == (50, 50)
    assert "50 dropped (buffer full)" in report.groups[1].describe()


def test_fail_over_when_the_first_receiver_does_not_answer(peers: PeerFactory, certificate: str) -> None:
    (login, _), (alive, handler) = peers(), peers()
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never answers
        settings = ForwarderSettings(
            f"tcp://127.0.0.1:{silent.getsockname()[1]}|tcp://127.0.0.1:{alive.port}",
            "admin",
            "admin",
            authenticator_url=f"ssl://127.0.0.1:{login.tls_port}|ssl://127.0.0.1:{alive.tls_port}",
            retry_initial_ms=20,
            ca_file=certificate,
            timeout_seconds=0.5,
        )
        started = time.monotonic()
        with Publisher(settings, PIZZA) as sender:
            sender.publish(pizza_events(10))
            report = sender.close(1)
    assert time.monotonic() - started < 3
    assert numbers(handler) == list(range(10)) and report.lost == 0
    assert "timed out" in str(report.groups[0].receivers[0].error)
