"""One Data Bridge call, from request bytes to reply bytes (PROTOCOL §3, §4, §8).

`Dispatcher` reads a message from a `Reader`, runs the method against the `Handler` and
the shared `Sessions`, and returns the reply. It owns the server's error semantics:
declared exceptions (`se`, `ae`, `mtd`, `ade`, `tde`, `tnde`, `ue`), UNKNOWN_METHOD for
a method the service lacks (the connection stays usable), PROTOCOL_ERROR for arguments
that cannot be decoded (the connection must close), INTERNAL_ERROR for handler bugs and
for what the node cannot take now (`Busy`: backpressure, a full input log or disk; the client
sends the bundle again, so those are logged once per interval). No sockets here, so it is tested with bytes alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from adapters.thrift.bundle import decode_bundle
from adapters.thrift.codec import STRUCT, Reader
from adapters.thrift.definitions import parse_definition
from adapters.thrift.errors import (
    AuthenticationFailed,
    DeclaredError,
    SessionExpired,
    StreamDefinitionError,
    StreamNotFound,
    ThriftProtocolError,
)
from adapters.thrift.events import Bundle
from adapters.thrift.handler import Handler
from adapters.thrift.idl import Method, Service
from adapters.thrift.messages import (
    DECLARED,
    INTERNAL_ERROR,
    PROTOCOL_ERROR,
    UNKNOWN_METHOD,
    ArgValue,
    encode_application_exception,
    encode_declared,
    encode_reply,
    read_args,
    read_message_begin,
)
from adapters.thrift.peer import Peer
from adapters.thrift.sessions import Sessions
from engine.errors import Busy, CEPError

log = logging.getLogger(__name__)

_NAME_OF = {cls: name for name, cls in DECLARED.items()}
_WARNING_INTERVAL = 10.0
Result = str | bool | None


@dataclass(frozen=True)
class Reply:
    """Bytes to send back, and whether the connection must close after them."""

    data: bytes
    close: bool = False
    reason: str = ""  # why the connection must close


class Dispatcher:
    """Serves one service (`idl.service(...)`) for one listener."""

    def __init__(self, service: Service, handler: Handler, sessions: Sessions) -> None:
        self.service = service
        self._handler = handler
        self._sessions = sessions
        self._last_warning: dict[str, float] = {}
        self._calls: dict[str, Callable[[dict[str, ArgValue], Peer], Result]] = {
            "connect": self._connect,
            "disconnect": self._disconnect,
            "defineStream": self._define_stream,
            "findStreamId": self._find_stream_id,
            "publish": self._publish,
            "deleteStreamById": self._delete_by_id,
            "deleteStreamByNameVersion": self._delete_by_name_version,
        }

    def handle(self, r: Reader, peer: Peer | None = None) -> Reply:
        """Read one call from `r` and answer it; errors in the header propagate (close).

        `peer` is the connection's client: its address goes to the login check, and it is
        marked trusted by a successful `connect` or a call with a valid session."""
        if peer is None:
            peer = Peer()
        name, _mtype, seqid = read_message_begin(r)
        method = self.service.methods.get(name)
        if method is None:
            r.skip(STRUCT)
            log.debug("%s has no method %r", self.service.name, name)
            message = f"Invalid method name: '{name}'"
            return Reply(encode_application_exception(name, seqid, UNKNOWN_METHOD, message))
        try:
            args = read_args(r, method)
        except ThriftProtocolError as exc:
            log.debug("undecodable arguments of %s: %s", name, exc)
            return Reply(
                encode_application_exception(name, seqid, PROTOCOL_ERROR, str(exc)),
                close=True,
                reason=str(exc),
            )
        return Reply(self._run(method, seqid, args, peer))

    def _run(self, method: Method, seqid: int, args: dict[str, ArgValue], peer: Peer) -> bytes:
        try:
            return encode_reply(method, seqid, self._calls[method.name](args, peer))
        except DeclaredError as exc:
            declared = _NAME_OF.get(type(exc))
            if declared in method.throws:
                if declared in ("ue", "ade", "tde"):
                    self._warn(f"{method.name}/{declared}", exc.message)
                return encode_declared(method, seqid, declared, exc.message)
            failure: Exception = exc
        except Exception as exc:  # a handler bug must not kill the connection thread
            failure = exc
        if isinstance(failure, Busy):  # retried by its client at once: a line per interval
            self._warn(f"{method.name}/busy", str(failure))
        elif isinstance(failure, CEPError):
            log.warning("%s failed: %s", method.name, failure)
        else:
            log.error("%s failed", method.name, exc_info=failure)
        message = f"Internal error processing {method.name}: {failure}"
        return encode_application_exception(method.name, seqid, INTERNAL_ERROR, message)

    def _warn(self, key: str, message: str) -> None:
        """Log a refused call at WARNING, at most once per interval per kind (a misconfigured
        publisher repeats the same mistake with every bundle), else at DEBUG."""
        now = time.monotonic()
        last = self._last_warning.get(key)
        if last is None or now - last >= _WARNING_INTERVAL:
            self._last_warning[key] = now
            log.warning("%s refused: %s", key, message)
        else:
            log.debug("%s refused: %s", key, message)

    def _session(self, session_id: ArgValue, peer: Peer) -> None:
        if not isinstance(session_id, str) or not self._sessions.valid(session_id):
            msg = f"{_text(session_id)} expired"
            raise SessionExpired(msg)
        peer.trusted = True

    def _connect(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        username, password = args["userName"], args["password"]
        if not isinstance(username, str) or not username:
            msg = "Authentication request was missing the user name "
            raise AuthenticationFailed(msg)
        if not isinstance(password, str) or not password:
            msg = "Authentication request was missing the required password"
            raise AuthenticationFailed(msg)
        self._handler.authenticate(username, password, peer.address)
        peer.trusted = True
        session_id = self._sessions.create(username)
        log.debug("user %s connected, session %s", username, session_id)
        return session_id

    def _disconnect(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        self._sessions.remove(_text(args["sessionId"]))
        return None

    def _define_stream(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        self._session(args["sessionId"], peer)
        text = args["streamDefinition"]
        definition = parse_definition(text if isinstance(text, str) else "null")
        try:
            return self._handler.define_stream(definition)
        except DeclaredError:
            raise
        except CEPError as exc:
            raise StreamDefinitionError(str(exc)) from exc

    def _find_stream_id(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        self._session(args["sessionId"], peer)
        name, version = _text(args["streamName"]), _text(args["streamVersion"])
        stream_id = self._handler.find_stream_id(name, version)
        if stream_id is None:
            msg = f"Stream definition not exist for {name} {version}"
            raise StreamNotFound(msg)
        return stream_id

    def _delete_by_id(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        self._session(args["sessionId"], peer)
        stream_id = args["streamId"]
        return isinstance(stream_id, str) and self._handler.delete_stream(stream_id)

    def _delete_by_name_version(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        self._session(args["sessionId"], peer)
        return self._handler.delete_stream(f"{_text(args['streamName'])}:{_text(args['streamVersion'])}")

    def _publish(self, args: dict[str, ArgValue], peer: Peer) -> Result:
        bundle = args["eventBundle"]
        if not isinstance(bundle, Bundle):
            bundle = Bundle()
        self._session(bundle.session_id, peer)
        events = decode_bundle(bundle, self._handler.definition)
        if events:
            self._handler.publish(events)
        return None


def _text(value: ArgValue) -> str:
    """A string argument as Java would print it: an unset one is `null`."""
    return value if isinstance(value, str) else "null"
