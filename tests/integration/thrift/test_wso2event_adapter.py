"""The wso2event output adapter: formatter records reach another Data Bridge receiver."""

from __future__ import annotations

import pytest

from adapters.output.factory import build_adapter
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from engine.events import Event
from engine.types import AttrType
from formatters.factory import build_formatter

pytestmark = pytest.mark.thrift


def test_wso2event_adapter_forwards_formatted_events(
    server: DataBridgeServer, handler: InMemoryHandler, certificate: str
) -> None:
    attributes = [
        ("meta_shop", AttrType.STRING),
        ("sumOrderId", AttrType.LONG),
        ("customerName", AttrType.STRING),
    ]
    formatter = build_formatter("wso2event", attributes, {}, stream="deliveredOrders:1.0.0")
    adapter = build_adapter(
        "wso2event",
        "peer",
        {"receiverURL": f"tcp://127.0.0.1:{server.port}", "authenticatorURL": f"ssl://127.0.0.1:{server.tls_port}",
         "username": "admin", "password": "admin", "ca_file": certificate},
    )  # fmt: skip
    adapter.register_stream(formatter.definition)  # type: ignore[attr-defined]
    adapter.start()
    records = formatter.format([Event(1000, ("s1", 1, "Tom")), Event(1001, ("s1", 2, "John"))])
    assert adapter.publish(records) == 2
    assert adapter.flush(10)
    adapter.stop(5)
    assert [(e.stream_id, e.meta, e.payload) for e in handler.events] == [
        ("deliveredOrders:1.0.0", ("s1",), (1, "Tom")),
        ("deliveredOrders:1.0.0", ("s1",), (2, "John")),
    ]
    assert adapter.stats.written == 2
