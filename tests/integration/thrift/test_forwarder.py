"""The WSO2Event forwarder delivers through restarts, balances and fails over (§10)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from adapters.thrift.forwarder import ForwarderSettings, Wso2EventForwarder
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from tests.support.nodes import free_port

from .conftest import PIZZA, pizza_events

pytestmark = pytest.mark.thrift

Peer = tuple[DataBridgeServer, InMemoryHandler]


def urls(*servers: DataBridgeServer, sep: str = ",") -> dict[str, str]:
    return {
        "receiverURL": sep.join(f"tcp://127.0.0.1:{s.port}" for s in servers),
        "authenticatorURL": sep.join(f"ssl://127.0.0.1:{s.tls_port}" for s in servers),
        "username": "admin",
        "password": "admin",
    }


_TRUST: dict[str, object] = {}  # the test servers' certificate, set for each test


@pytest.fixture(autouse=True)
def _trust_the_test_servers(certificate: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_TRUST, "ca_file", certificate)


def numbers(handler: InMemoryHandler) -> list[int]:
    """The order numbers `handler` received, in the order they arrived."""
    return [int(e.payload[0]) for e in handler.events if e.payload]


def forwarder(properties: dict[str, str], **options: object) -> Wso2EventForwarder:
    settings = ForwarderSettings.from_properties(
        properties, retry_initial_ms=20, retry_max_ms=200, **{**_TRUST, **options}
    )
    return Wso2EventForwarder(settings, PIZZA)


@pytest.fixture
def second(settings: ServerSettings) -> Iterator[Peer]:
    handler = InMemoryHandler({"admin": "admin"})
    with DataBridgeServer(settings, handler) as server:
        yield server, handler


def test_forwarder_defines_its_stream_and_delivers(second: Peer) -> None:
    target, handler = second
    sender = forwarder({**urls(target), "stream": "delivered", "version": "2.0.0"})
    sender.start()
    sender.publish(pizza_events(250))
    assert sender.flush(10)
    sender.stop()
    assert [e.stream_id for e in handler.events] == ["delivered:2.0.0"] * 250
    assert [e.payload for e in handler.events] == [e.payload for e in pizza_events(250)]
    assert handler.definition("delivered:2.0.0") is not None
    assert sender.stats() == {"sent": 250, "fenced": 0, "dropped": 0, "rejected": 0, "pending": 0}


def test_forwarder_survives_a_peer_restart_without_losing_buffered_events(settings: ServerSettings) -> None:
    first_handler = InMemoryHandler({"admin": "admin"})
    peer = DataBridgeServer(settings, first_handler)
    peer.start()
    fixed = ServerSettings(**{**settings.__dict__, "port": peer.port, "tls_port": peer.tls_port})
    sender = forwarder(urls(peer))
    sender.start()
    try:
        sender.publish(pizza_events(100))
        assert sender.flush(10)
        peer.stop()
        sender.publish(pizza_events(100, start=100))
        assert not sender.flush(0.3)
        restarted_handler = InMemoryHandler({"admin": "admin"})
        with DataBridgeServer(fixed, restarted_handler):
            assert sender.flush(15)
        assert numbers(first_handler) == list(range(100))  # delivered before the restart
        assert numbers(restarted_handler) == list(range(100, 200))  # buffered meanwhile, none lost
    finally:
        sender.stop(timeout=1)


def test_load_balancing_spreads_bundles_over_the_group(
    server: DataBridgeServer, handler: InMemoryHandler, second: Peer
) -> None:
    other, other_handler = second
    sender = forwarder(urls(server, other), bundle_size=50)
    sender.start()
    sender.publish(pizza_events(1000))
    assert sender.flush(10)
    sender.stop()
    # bundles of 50 in turn, the first to the first receiver: the even ones there, the odd ones here
    assert numbers(handler) == [n for b in range(0, 1000, 100) for n in range(b, b + 50)]
    assert numbers(other_handler) == [n for b in range(50, 1000, 100) for n in range(b, b + 50)]


def test_fail_over_skips_a_dead_receiver(second: Peer) -> None:
    alive, handler = second
    dead = free_port()
    properties = {
        "receiverURL": f"tcp://127.0.0.1:{dead}|tcp://127.0.0.1:{alive.port}",
        "authenticatorURL": f"ssl://127.0.0.1:{dead}|ssl://127.0.0.1:{alive.tls_port}",
        "username": "admin",
        "password": "admin",
    }
    sender = forwarder(properties)
    sender.start()
    sender.publish(pizza_events(300))
    assert sender.flush(10)
    sender.stop()
    assert numbers(handler) == list(range(300))


def test_every_group_receives_every_event(
    server: DataBridgeServer, handler: InMemoryHandler, second: Peer
) -> None:
    other, other_handler = second
    properties = {
        "receiverURL": f"{{tcp://127.0.0.1:{server.port}}},{{tcp://127.0.0.1:{other.port}}}",
        "authenticatorURL": f"{{ssl://127.0.0.1:{server.tls_port}}},{{ssl://127.0.0.1:{other.tls_port}}}",
        "username": "admin",
        "password": "admin",
    }
    sender = forwarder(properties)
    sender.start()
    sender.publish(pizza_events(120))
    assert sender.flush(10)
    sender.stop()
    assert numbers(handler) == numbers(other_handler) == list(range(120))


def test_buffer_overflow_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    dead = free_port()
    properties = {"receiverURL": f"tcp://127.0.0.1:{dead}", "username": "admin", "password": "admin"}
    sender = forwarder(properties, buffer_events=10)
    sender.start()
    with caplog.at_level(logging.WARNING, logger="adapters.thrift"):
        sender.publish(pizza_events(25))
        sender.stop(timeout=0.2)
    assert sender.stats()["dropped"] == 15
    assert any("dropped" in r.getMessage() for r in caplog.records)
    assert any("undelivered" in r.getMessage() for r in caplog.records)
