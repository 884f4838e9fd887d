"""Real Data Bridge servers on 127.0.0.1 (free ports) for the Thrift integration tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import WireStreamDefinition, parse_definition
from adapters.thrift.events import WireEvent
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from adapters.thrift.tls import self_signed

PIZZA = parse_definition(
    "{'name':'pizzaOrder','version':'1.0.0','payloadData':[{'name':'orderNo','type':'INT'},"
    "{'name':'customerName','type':'STRING'},{'name':'price','type':'DOUBLE'},{'name':'delivered','type':'BOOL'}]}"
)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node data directory whose generated certificate all test servers share."""
    directory = tmp_path_factory.mktemp("node")
    self_signed(directory / "tls")
    return directory


@pytest.fixture
def settings(data_dir: Path) -> ServerSettings:
    return ServerSettings(host="127.0.0.1", port=0, tls_port=0, data_dir=str(data_dir))


@pytest.fixture
def handler() -> InMemoryHandler:
    return InMemoryHandler({"admin": "admin"}, [PIZZA])


@pytest.fixture
def server(settings: ServerSettings, handler: InMemoryHandler) -> Iterator[DataBridgeServer]:
    with DataBridgeServer(settings, handler) as running:
        yield running


ClientFactory = Callable[..., DataBridgeClient]
Peer = tuple[DataBridgeServer, InMemoryHandler]
PeerFactory = Callable[[], Peer]


@pytest.fixture
def peers(settings: ServerSettings) -> Iterator[PeerFactory]:
    """Start receivers (each with an empty in-memory handler) that are stopped after the test."""
    started: list[DataBridgeServer] = []

    def start() -> Peer:
        handler = InMemoryHandler({"admin": "admin"})
        server = DataBridgeServer(settings, handler)
        server.start()
        started.append(server)
        return server, handler

    yield start
    for server in started:
        server.stop(timeout=2)


@pytest.fixture(scope="session")
def certificate(data_dir: Path) -> str:
    """The test servers' certificate, for clients to trust."""
    return str(data_dir / "tls" / "cert.pem")


@pytest.fixture
def make_client(server: DataBridgeServer, certificate: str) -> Iterator[ClientFactory]:
    clients: list[DataBridgeClient] = []

    def make(username: str = "admin", password: str = "admin", **options: Any) -> DataBridgeClient:
        if not options.get("insecure"):
            options.setdefault("ca_file", certificate)
        client = DataBridgeClient(
            f"tcp://127.0.0.1:{server.port}",
            f"ssl://127.0.0.1:{server.tls_port}",
            username=username,
            password=password,
            timeout=10.0,
            **options,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def arrived(handler: InMemoryHandler, count: int, seconds: float = 5.0) -> list[WireEvent]:
    """The events `handler` holds once `count` have arrived, or once `seconds` have passed: the
    test compares them with exactly what must arrive, so one missing, one extra (a bundle sent
    twice, say) or one changed fails it."""
    handler.wait_for(count, seconds)
    with handler.published:
        return list(handler.events)


def pizza_events(n: int, start: int = 0, stream: WireStreamDefinition = PIZZA) -> list[WireEvent]:
    return [
        WireEvent(
            stream.stream_id, 1_700_000_000_000 + i, None, None, (i, f"customer{i}", i * 1.5, i % 2 == 0)
        )
        for i in range(start, start + n)
    ]
