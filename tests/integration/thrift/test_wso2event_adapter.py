"""The wso2event output adapter: formatter records reach another Data Bridge receiver."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.output.base import Origin
from adapters.output.factory import build_adapter
from adapters.senders import Runs, SenderMarks, runs_of
from adapters.thrift.events import WireEvent
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
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


class Marking(InMemoryHandler):
    """A receiver that takes each named event once, as a Cepheus node does, and whose answer to
    every other bundle is lost (the bundle taken all the same)."""

    def __init__(self) -> None:
        super().__init__({"admin": "admin"})
        self.marks = SenderMarks()
        self.bundles: list[Runs] = []
        self.calls = self.received = 0

    def publish(self, events: list[WireEvent]) -> None:
        with self._lock:
            self.calls += 1
            self.received += len(events)
            runs = runs_of([e.arbitrary for e in events])
            keep, kept = self.marks.fresh(runs, len(events))
            self.events.extend(events if keep is None else [e for a, b in keep for e in events[a:b]])
            self.marks.advance(kept)
            self.bundles.append(runs)
            self.published.notify_all()
            lost = self.calls % 2 == 1
        if lost:
            msg = "the answer is lost"
            raise RuntimeError(msg)


def _adapter(server: DataBridgeServer, certificate: str, **extra: object) -> Any:
    formatter = build_formatter("wso2event", [("n", AttrType.LONG)], {}, stream="counted:1.0.0")
    adapter = build_adapter(
        "wso2event",
        "peer",
        {"receiverURL": f"tcp://127.0.0.1:{server.port}", "authenticatorURL": f"ssl://127.0.0.1:{server.tls_port}",
         "username": "admin", "password": "admin", "ca_file": certificate, "retry_initial_ms": 10, **extra},
    )  # fmt: skip
    adapter.register_stream(formatter.definition)
    adapter.start()
    return adapter, formatter


def test_every_event_names_its_origin_and_a_lost_answer_repeats_nothing(
    settings: ServerSettings, certificate: str
) -> None:
    marking = Marking()
    with DataBridgeServer(settings, marking) as server:
        adapter, formatter = _adapter(server, certificate, bundle_size=3)
        logged = formatter.format([Event(1000 + n, (n,)) for n in range(10)])
        adapter.publish(logged, origins=Origin("p/Out/f", "log-1", 7, 0))  # one plan's outputs of record 7
        adapter.publish(formatter.format([Event(2000 + n, (10 + n,)) for n in range(4)]))  # no origin
        assert adapter.flush(10)
        adapter.stop(5)
    assert [e.payload for e in marking.events] == [(n,) for n in range(14)]  # each once, in order
    assert marking.received >= 2 * 14 and all(marking.bundles)  # every bundle came twice, each named
    senders = {run.sender for runs in marking.bundles for run in runs}
    assert "p/Out/f|log-1" in senders and len(senders) == 2
    first = marking.bundles[0][0]
    assert (first.major, first.minor) == (7, 0)


def test_a_fence_that_stops_holding_stops_what_is_still_queued(
    server: DataBridgeServer, handler: InMemoryHandler, certificate: str
) -> None:
    class Lapsing:
        calls = 0

        def __call__(self, transaction: object) -> None:
            self.calls += 1
            if self.calls > 1:  # held when the records were queued, not when they are to be sent
                msg = "this node no longer holds the notifier lease"
                raise RuntimeError(msg)

    adapter, formatter = _adapter(server, certificate)
    fence = Lapsing()
    assert adapter.publish(formatter.format([Event(1, (1,)), Event(2, (2,))]), fence) == 2
    assert adapter.flush(10)
    adapter.stop(5)
    assert handler.events == [] and fence.calls >= 2
    assert adapter.stats.fenced == 2 and adapter.stats.written == 0
