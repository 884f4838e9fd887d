"""A client logs in over TLS and publishes in clear text to a real server (§1.1, §4, §6)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.errors import AuthenticationFailed, DefinitionConflict, UndefinedEventType
from adapters.thrift.events import WireEvent
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer

from .conftest import PIZZA, ClientFactory, arrived, pizza_events

pytestmark = pytest.mark.thrift

DELIVERY = parse_definition(
    "{'name':'deliveryStream','version':'1.0.0','metaData':[{'name':'deliveryNo','type':'STRING'}],"
    "'payloadData':[{'name':'orderNo','type':'STRING'},{'name':'areaName','type':'STRING'},"
    "{'name':'time','type':'LONG'},{'name':'totalBill','type':'DOUBLE'},{'name':'deliveredBy','type':'STRING'}]}"
)


def test_tls_connect_then_plain_define_and_publish(
    make_client: ClientFactory, server: DataBridgeServer, handler: InMemoryHandler
) -> None:
    client = make_client()
    session = client.connect()
    assert len(session) == 36
    assert client.find_stream_id("deliveryStream", "1.0.0") is None
    assert client.define_stream(DELIVERY) == "deliveryStream:1.0.0"
    assert client.define_stream(DELIVERY.to_json()) == "deliveryStream:1.0.0"
    event = WireEvent(
        "deliveryStream:1.0.0", 5, ("Delivery1",), None, ("Order1", "Colombo", 100, 50.0, "Mohan")
    )
    client.publish([event])
    assert arrived(handler, 1) == [event]
    assert len(server.sessions) == 1
    client.disconnect()
    assert len(server.sessions) == 0


def test_publish_splits_into_bundles_and_all_events_arrive(
    make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    client = make_client(bundle_size=7, definitions=[PIZZA])
    client.connect()
    client.publish(pizza_events(100))
    assert arrived(handler, 100) == pizza_events(100)


def test_expired_session_is_renewed_and_the_bundle_resent_once(
    make_client: ClientFactory, server: DataBridgeServer, handler: InMemoryHandler
) -> None:
    client = make_client(definitions=[PIZZA])
    first = client.connect()
    server.sessions.remove(first)
    client.publish(pizza_events(3))
    assert arrived(handler, 3) == pizza_events(3)  # the refused bundle was sent again, once
    assert client.session_id not in (None, first)


def test_ssl_receiver_url_sends_everything_over_tls(
    server: DataBridgeServer, handler: InMemoryHandler, certificate: str
) -> None:
    with DataBridgeClient(
        f"ssl://127.0.0.1:{server.tls_port}",
        username="admin",
        password="admin",
        ca_file=certificate,
        definitions=[PIZZA],
    ) as client:
        assert client.find_stream_id("pizzaOrder") == "pizzaOrder:1.0.0"
        client.publish(pizza_events(5))
    assert arrived(handler, 5) == pizza_events(5)


def test_client_verifies_the_server_certificate_with_a_ca_file(
    make_client: ClientFactory, data_dir: Path, handler: InMemoryHandler
) -> None:
    client = make_client(ca_file=str(data_dir / "tls" / "cert.pem"), definitions=[PIZZA])
    client.connect()
    client.publish(pizza_events(1))
    assert arrived(handler, 1) == pizza_events(1)


def test_wrong_password_is_refused(make_client: ClientFactory) -> None:
    with pytest.raises(AuthenticationFailed, match="wrong userName or password"):
        make_client(password="nope").connect()


def test_conflicting_definition_reaches_the_client(make_client: ClientFactory) -> None:
    client = make_client()
    client.connect()
    changed = parse_definition(PIZZA.to_json().replace('"INT"', '"LONG"'))
    with pytest.raises(DefinitionConflict):
        client.define_stream(changed)


def test_bundle_of_a_stream_the_server_lost_is_refused_with_ue(
    make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    client = make_client(definitions=[PIZZA])
    client.connect()
    handler.delete_stream(PIZZA.stream_id)
    with pytest.raises(UndefinedEventType, match="No StreamDefinition for streamId pizzaOrder:1.0.0"):
        client.publish(pizza_events(2))
    handler.define_stream(PIZZA)
    client.publish(pizza_events(2))
    assert arrived(handler, 2) == pizza_events(2)  # the refused bundle left nothing behind


def test_fifty_concurrent_clients_publish(make_client: ClientFactory, handler: InMemoryHandler) -> None:
    clients = [make_client(bundle_size=50, definitions=[PIZZA]) for _ in range(50)]
    errors: list[BaseException] = []

    def run(client: DataBridgeClient, index: int) -> None:
        try:
            client.connect()
            client.publish(pizza_events(200, start=index * 1000))
            client.disconnect()
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c, i)) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    received = arrived(handler, 50 * 200, 10)
    for i in range(50):  # each client's events, all of them once, in the order it sent them
        assert [e for e in received if e.payload and e.payload[0] // 1000 == i] == pizza_events(200, i * 1000)
    assert len(received) == 50 * 200
