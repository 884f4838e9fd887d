"""The events receiver on its own: a stream described by a plain `StreamShape`, rows into a list."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask, Response
from flask.testing import FlaskClient

from adapters.http.events import EventFormatError, Row
from adapters.http.receiver import Streams, events_blueprint, publish_json
from adapters.http.replies import json_error
from adapters.senders import Runs
from engine.types import AttrType


@dataclass(frozen=True)
class Shape:
    id: str
    attributes: tuple[tuple[str, AttrType], ...]
    sections: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


TEMPS = Shape(
    "temps:1.0.0",
    (("meta_room", AttrType.STRING), ("celsius", AttrType.DOUBLE)),
    (("room",), (), ("celsius",)),
)


@dataclass
class Node:
    published: list[tuple[str, list[Row], list[int]]] = field(default_factory=list)
    senders: list[Runs] = field(default_factory=list)
    open: bool = True
    refuse: bool = False

    def streams(self) -> Streams:
        return Streams({TEMPS.id: TEMPS}.get, self.publish, now_ms=lambda: 500)

    def publish(self, stream_id: str, rows: list[Row], stamps: list[int], senders: Runs = ()) -> None:
        self.published.append((stream_id, rows, stamps))
        self.senders.append(senders)

    def refusal(self) -> Response | None:
        return json_error(401, "wrong user name or password") if self.refuse else None


@pytest.fixture
def node() -> Node:
    return Node()


@pytest.fixture
def client(node: Node) -> FlaskClient:
    app = Flask(__name__)
    bp = events_blueprint(
        node.streams(), node.refusal, max_request_bytes=200, enabled=lambda: node.open, max_json_depth=4
    )
    app.register_blueprint(bp)
    return app.test_client()


def post(client: FlaskClient, body: Any, stream: str = "temps:1.0.0") -> tuple[int, Any]:
    reply = client.post(f"/events/{stream}", data=json.dumps(body))
    return reply.status_code, reply.json


def test_events_are_published_with_their_timestamp_or_now(client: FlaskClient, node: Node) -> None:
    body = [["a", 20], {"data": {"meta_room": "b", "celsius": 21.5}, "timestamp": 7}]
    assert post(client, body) == (200, {"accepted": 2})
    assert node.published == [("temps:1.0.0", [("a", 20.0), ("b", 21.5)], [500, 7])]


def test_wso2_sections_come_from_the_shape(client: FlaskClient, node: Node) -> None:
    event = {"event": {"metaData": {"room": "c"}, "payloadData": {"celsius": 3}}}
    assert post(client, event) == (200, {"accepted": 1})
    assert node.published[0][1] == [("c", 3.0)]


def test_one_bad_event_refuses_the_whole_request(client: FlaskClient, node: Node) -> None:
    status, reply = post(client, [["a", 1], ["b", "warm"]])
    assert status == 400
    assert reply["error"].startswith("event 1: attribute 'celsius': ")
    assert node.published == []


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        ("temps", "stream 'temps': give the stream as name:version, e.g. /events/orderStream:1.0.0"),
        ("rain:1.0.0", "stream rain:1.0.0 is not defined"),
    ],
)
def test_an_unknown_stream_is_a_404(client: FlaskClient, stream: str, message: str) -> None:
    assert post(client, [], stream) == (404, {"error": message})


def test_refusal_and_closing_are_answered_before_the_body(client: FlaskClient, node: Node) -> None:
    node.refuse = True
    assert post(client, []) == (401, {"error": "wrong user name or password"})
    node.open = False
    assert post(client, []) == (503, {"error": "the HTTP receiver is stopping"})


def test_size_and_depth_limits(client: FlaskClient) -> None:
    assert post(client, [["x" * 300, 1]])[0] == 413
    status, reply = post(client, [[[[[1]]]]])
    assert status == 400
    assert "nests arrays and objects 5 deep; the limit is 4" in reply["error"]


def test_publish_json_raises_for_an_unknown_stream_or_a_bad_event(node: Node) -> None:
    with pytest.raises(LookupError, match="stream rain:1.0.0 is not defined"):
        publish_json(node.streams(), "rain:1.0.0", [])
    with pytest.raises(EventFormatError, match="^event 0: temps:1.0.0 has 2 attributes, got 1 value$"):
        publish_json(node.streams(), "temps:1.0.0", [[1]])
    assert publish_json(node.streams(), "temps:1.0.0", [["a", 1]]) == 1
