"""The HTTP JSON receiver: `POST /events/<name>:<version>` with a JSON list of events.

Basic authentication against the registry's users (`app.node.http_api`). A body nesting
deeper than `max_json_depth` is refused before it is parsed. The whole request is checked
before any event is accepted (all or nothing); the reply is `{"accepted": n}`, or an error
object with a message naming the event and attribute. Event formats: `app.node.event_input`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import Blueprint, Response, request

from app.node.auth import Credentials
from app.node.catalog import StreamCatalog
from app.node.event_input import EventFormatError, rows_from_json
from app.node.http_api import json_error, login_refusal
from app.node.ingress import Ingress
from app.node.journal import wall_ms
from app.node.json_body import JsonBodyError, load_json


def events_blueprint(
    catalog: StreamCatalog,
    ingress: Ingress,
    credentials: Credentials,
    max_request_bytes: int,
    enabled: Callable[[], bool] = lambda: True,
    max_json_depth: int = 64,
) -> Blueprint:
    bp = Blueprint("events", __name__)

    @bp.post("/events/<stream_id>")
    def publish(stream_id: str) -> Response:
        if not enabled():
            return json_error(503, "the HTTP receiver is stopping")
        refusal = login_refusal(credentials)
        if refusal is not None:
            return refusal
        if ":" not in stream_id:
            return json_error(
                404, f"stream {stream_id!r}: give the stream as name:version, e.g. /events/orderStream:1.0.0"
            )
        if catalog.get(stream_id) is None:
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
            accepted = publish_json(catalog, ingress, stream_id, body)
        except (EventFormatError, LookupError) as exc:
            return json_error(400, str(exc))
        return Response(json.dumps({"accepted": accepted}), mimetype="application/json")

    return bp


def publish_json(catalog: StreamCatalog, ingress: Ingress, stream_id: str, body: object) -> int:
    """Events of a JSON body into `stream_id` (all or none); how many. Raises `LookupError` for a
    stream not defined, `EventFormatError` naming the event and attribute."""
    stream = catalog.get(stream_id)
    if stream is None:
        msg = f"stream {stream_id} is not defined"
        raise LookupError(msg)
    rows, stamps = rows_from_json(body, stream)
    now = wall_ms()
    ingress.publish_rows(stream_id, rows, [now if t is None else t for t in stamps])
    return len(rows)
