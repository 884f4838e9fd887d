"""The HTTP JSON receiver: `POST /events/<name>:<version>` with a JSON list of events.

The node hands in what the receiver needs (`Streams`: look a stream up, publish rows) and
callables: `refusal` checks the request's credentials (the node's basic authentication
against the registry's users) and gives the reply for a refused one, `enabled` says whether
the receiver still takes events. A body nesting deeper than `max_json_depth` is refused
before it is parsed. The whole request is checked before any event is accepted (all or
nothing); the reply is `{"accepted": n}`, or an error object with a message naming the event
and attribute. Events the node cannot take now (`engine.errors.Busy`: an output adapter they
feed is full) get 503 with `Retry-After`; none of them was taken. A client that names itself
sends `Cepheus-From: major.minor@sender` for the body's first event (`adapters.senders`): the
events it sent before and sends again (a lost reply) are then taken once. Event formats:
`adapters.http.events`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Blueprint, Response, request

from adapters.http.events import EventFormatError, Row, StreamShape, rows_from_json
from adapters.http.json_body import JsonBodyError, load_json
from adapters.http.replies import json_error
from adapters.senders import FROM_HEADER, IdentityError, Runs, parse_from
from engine.errors import Busy


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Streams:
    """Where events go: the node's registered streams and its ingress."""

    find: Callable[[str], StreamShape | None]  # a stream by id (name:version); None when not defined
    publish: Callable[[str, list[Row], list[int], Runs], None]  # rows of a stream, timestamps (ms), senders
    now_ms: Callable[[], int] = wall_ms  # the timestamp of an event that gives none


def events_blueprint(
    streams: Streams,
    refusal: Callable[[], Response | None],
    max_request_bytes: int,
    enabled: Callable[[], bool] = lambda: True,
    max_json_depth: int = 64,
) -> Blueprint:
    """`refusal`: None when the request's credentials are accepted, else the reply to send."""
    bp = Blueprint("events", __name__)

    @bp.post("/events/<stream_id>")
    def publish(stream_id: str) -> Response:
        if not enabled():
            return json_error(503, "the HTTP receiver is stopping")
        refused = refusal()
        if refused is not None:
            return refused
        if ":" not in stream_id:
            return json_error(
                404, f"stream {stream_id!r}: give the stream as name:version, e.g. /events/orderStream:1.0.0"
            )
        if streams.find(stream_id) is None:
            return json_error(404, f"stream {stream_id} is not defined")
        length = request.content_length
        if length is not None and length > max_request_bytes:
            return json_error(413, f"the request has {length} bytes; the limit is {max_request_bytes}")
        raw = request.get_data(cache=False)
        if len(raw) > max_request_bytes:
            return json_error(413, f"the request is larger than the limit of {max_request_bytes} bytes")
        try:
            body = load_json(raw, max_json_depth)
        except JsonBodyError as exc:
            return json_error(400, str(exc))
        try:
            accepted = publish_json(streams, stream_id, body, request.headers.get(FROM_HEADER))
        except (EventFormatError, LookupError, IdentityError) as exc:
            return json_error(400, str(exc))
        except Busy as exc:  # not taken, nothing kept: the client sends the same events again
            return json_error(503, str(exc), {"Retry-After": str(max(1, math.ceil(exc.retry_after)))})
        return Response(json.dumps({"accepted": accepted}), mimetype="application/json")

    return bp


def publish_json(streams: Streams, stream_id: str, body: object, sent_from: str | None = None) -> int:
    """Events of a JSON body into `stream_id` (all or none); how many. Raises `LookupError` for a
    stream not defined, `EventFormatError` naming the event and attribute, `IdentityError` for
    a `sent_from` (the `Cepheus-From` header) that does not read."""
    stream = streams.find(stream_id)
    if stream is None:
        msg = f"stream {stream_id} is not defined"
        raise LookupError(msg)
    rows, stamps = rows_from_json(body, stream)
    senders = () if sent_from is None or not rows else (parse_from(sent_from, len(rows)),)
    now = streams.now_ms()
    streams.publish(stream_id, rows, [now if t is None else t for t in stamps], senders)
    return len(rows)
