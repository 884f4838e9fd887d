"""`DataBridgeClient`: a Gen-1 style Data Bridge publisher (PROTOCOL §1.1, §4, §6, §7).

Logs in with `connect` over TLS at the authenticator endpoint, then defines streams, looks
them up and publishes bundles on the receiver endpoint (plain for `tcp://`, TLS for
`ssl://`; the server's certificate is verified unless `insecure`, see `tls.client_context`).
On `se` it logs in again once and repeats the call, as Gen-1 does. It keeps the
definitions it has defined or been given, because Python numbers need the declared types
to find their list (§6.1). Not thread-safe: one thread uses a client at a time.
`ReceiverGroups` (the URL lists of §10) is re-exported from `endpoints`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from adapters.thrift.bundle import encode_bundle
from adapters.thrift.bundle_codec import write_bundle
from adapters.thrift.connection import DEFAULT_MAX_MESSAGE_BYTES, Connection
from adapters.thrift.definitions import WireStreamDefinition, parse_definition
from adapters.thrift.endpoints import Endpoint, ReceiverGroup, ReceiverGroups, Url
from adapters.thrift.errors import SessionExpired, StreamNotFound
from adapters.thrift.events import WireEvent
from adapters.thrift.idl import PLAIN_SERVICE, SECURE_SERVICE, service
from adapters.thrift.tls import client_context
from engine.errors import AdapterError

__all__ = ["DataBridgeClient", "Endpoint", "ReceiverGroup", "ReceiverGroups", "Url"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class DataBridgeClient:
    """Publishes `WireEvent`s to one Data Bridge receiver."""

    def __init__(
        self,
        receiver_url: str,
        auth_url: str | None = None,
        *,
        username: str,
        password: str,
        bundle_size: int = 100,
        ca_file: str | None = None,
        insecure: bool = False,
        timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        definitions: Iterable[WireStreamDefinition] = (),
    ) -> None:
        self.endpoint = Endpoint.of(receiver_url, auth_url)
        self.username = username
        self._password = password
        self.bundle_size = max(1, bundle_size)
        context = client_context(ca_file, insecure=insecure)
        receiver, auth = self.endpoint.receiver, self.endpoint.auth
        data_service = service(SECURE_SERVICE if receiver.tls else PLAIN_SERVICE)
        self._data = Connection(
            receiver.host,
            receiver.port,
            data_service,
            tls=context if receiver.tls else None,
            timeout=timeout,
            max_message_bytes=max_message_bytes,
        )
        self._auth = Connection(
            auth.host,
            auth.port,
            service(SECURE_SERVICE),
            tls=context,
            timeout=timeout,
            max_message_bytes=max_message_bytes,
        )
        self._definitions = {d.stream_id: d for d in definitions}
        self.session_id: str | None = None

    def __enter__(self) -> DataBridgeClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self.session_id is not None and self._data.is_open

    def connect(self) -> str:
        """Log in at the authenticator and open the data connection; return the session id."""
        self._login()
        self._data.open()
        assert self.session_id is not None
        return self.session_id

    def add_definition(self, definition: WireStreamDefinition) -> None:
        """Know a stream the receiver already has (Gen-2 style), without `defineStream`."""
        self._definitions[definition.stream_id] = definition

    def define_stream(self, definition: WireStreamDefinition | str) -> str:
        """Send `defineStream`; return the receiver's stream id. Raises `DefinitionConflict`,
        `MalformedDefinition` or `StreamDefinitionError` as the receiver replies."""
        if isinstance(definition, str):
            text, parsed = definition, parse_definition(definition)
        else:
            text, parsed = definition.to_json(), definition
        stream_id = self._with_session(
            lambda sid: self._data.call("defineStream", sessionId=sid, streamDefinition=text)
        )
        self._definitions[str(stream_id)] = parsed
        return str(stream_id)

    def find_stream_id(self, name: str, version: str = "1.0.0") -> str | None:
        """The receiver's id of the stream, or None when it has no such stream (`tnde`)."""
        try:
            found = self._with_session(
                lambda sid: self._data.call(
                    "findStreamId", sessionId=sid, streamName=name, streamVersion=version
                )
            )
        except StreamNotFound:
            return None
        return str(found)

    def delete_stream(self, stream_id: str) -> bool:
        deleted = self._with_session(
            lambda sid: self._data.call("deleteStreamById", sessionId=sid, streamId=stream_id)
        )
        self._definitions.pop(stream_id, None)
        return bool(deleted)

    def publish(self, events: Iterable[WireEvent]) -> None:
        """Send events in bundles of up to `bundle_size`; on `se`, log in and resend once.

        Raises `EventEncodingError` before sending when an event does not fit its stream's
        definition, `UndefinedEventType` when the receiver rejects a bundle (`ue`), and
        `TransportError` when the connection fails (then nothing is known of that bundle).
        """
        batch = events if isinstance(events, Sequence) else list(events)
        for start in range(0, len(batch), self.bundle_size):
            if self.session_id is None:
                self._login()
            bundle = encode_bundle(
                self.session_id, batch[start : start + self.bundle_size], self._definitions.get
            )
            try:
                self._data.publish(write_bundle(bundle))
            except SessionExpired:
                log.debug("session %s expired; logging in again", self.session_id)
                self._login()
                bundle.session_id = self.session_id
                self._data.publish(write_bundle(bundle))

    def encode(self, events: Sequence[WireEvent]) -> bytes:
        """One bundle of `events` for this session, encoded once (to send with `send_encoded`)."""
        if self.session_id is None:
            self._login()
        return write_bundle(encode_bundle(self.session_id, events, self._definitions.get))

    def send_encoded(self, bundle: bytes) -> None:
        """Publish a bundle made by `encode` (benchmarks, replays: encode once, send many)."""
        self._data.publish(bundle)

    def disconnect(self) -> None:
        """Send `disconnect` for the session and close both connections."""
        session_id, self.session_id = self.session_id, None
        try:
            if session_id is not None:
                self._auth.call("disconnect", sessionId=session_id)
        finally:
            self._auth.close()
            self._data.close()

    def close(self) -> None:
        """`disconnect`, ignoring a receiver that is already gone."""
        try:
            self.disconnect()
        except AdapterError as exc:
            log.debug("disconnect from %s failed: %s", self.endpoint.auth, exc)

    def abandon(self) -> None:
        """Drop both connections without telling the receiver (it is unreachable or broken)."""
        self.session_id = None
        self._auth.close()
        self._data.close()

    def _login(self) -> None:
        try:
            session_id = self._auth.call("connect", userName=self.username, password=self._password)
        finally:
            self._auth.close()
        self.session_id = str(session_id)
        log.debug("logged in at %s as %s", self.endpoint.auth, self.username)

    def _with_session(self, call: Callable[[str], T]) -> T:
        if self.session_id is None:
            self._login()
        assert self.session_id is not None
        try:
            return call(self.session_id)
        except SessionExpired:
            log.debug("session %s expired; logging in again", self.session_id)
            self._login()
            assert self.session_id is not None
            return call(self.session_id)
