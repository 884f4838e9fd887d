"""The dispatcher answers the hand-built calls of PROTOCOL §6.3 byte for byte (§3, §4, §8)."""

from __future__ import annotations

import pytest

from adapters.thrift.codec import Reader
from adapters.thrift.definitions import WireStreamDefinition, parse_definition
from adapters.thrift.errors import (
    AuthenticationFailed,
    DefinitionConflict,
    MalformedDefinition,
    RemoteApplicationError,
    SessionExpired,
    StreamDefinitionError,
    StreamNotFound,
    UndefinedEventType,
)
from adapters.thrift.events import WireEvent
from adapters.thrift.idl import PLAIN_SERVICE, SECURE_SERVICE, service
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.messages import INTERNAL_ERROR, PROTOCOL_ERROR, UNKNOWN_METHOD, encode_call, read_reply
from adapters.thrift.service import Dispatcher
from adapters.thrift.sessions import Sessions
from engine.errors import ConfigError

from .wire_samples import (
    CONNECT_CALL,
    CONNECT_REPLY,
    PIZZA_ORDER,
    PUBLISH_CALL,
    PUBLISH_OK,
    PUBLISH_SESSION_EXPIRED,
    SESSION,
    find_stream_id_call,
    find_stream_id_not_found,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def handler() -> InMemoryHandler:
    return InMemoryHandler({"admin": "admin"}, [parse_definition(PIZZA_ORDER)])


@pytest.fixture
def sessions(clock: Clock) -> Sessions:
    return Sessions(30 * 60, new_id=lambda: SESSION, clock=clock)


@pytest.fixture
def plain(handler: InMemoryHandler, sessions: Sessions) -> Dispatcher:
    return Dispatcher(service(PLAIN_SERVICE), handler, sessions)


@pytest.fixture
def secure(handler: InMemoryHandler, sessions: Sessions) -> Dispatcher:
    return Dispatcher(service(SECURE_SERVICE), handler, sessions)


def answer(dispatcher: Dispatcher, data: bytes) -> bytes:
    reply = dispatcher.handle(Reader.of(data))
    assert not reply.close
    return reply.data


def call(dispatcher: Dispatcher, name: str, **args: str | None) -> object:
    method = dispatcher.service.methods[name]
    reply = answer(dispatcher, encode_call(method, 3, dict(args)))
    return read_reply(Reader.of(reply), method, 3)


def test_connect_replies_with_the_session_id_from_the_hook(secure: Dispatcher) -> None:
    assert answer(secure, CONNECT_CALL) == CONNECT_REPLY


def test_publish_of_the_249_byte_call_gets_the_exact_success_reply(
    secure: Dispatcher, plain: Dispatcher, handler: InMemoryHandler
) -> None:
    answer(secure, CONNECT_CALL)
    assert len(PUBLISH_CALL) == 249
    assert answer(plain, PUBLISH_CALL) == PUBLISH_OK
    assert handler.events == [
        WireEvent("pizzaOrder:1.0.0", 1700000000000, None, None, (1001, "Alice", 12.5, False), None),
        WireEvent(
            "pizzaOrder:1.0.0", 1700000000500, None, None, (1002, "Bob", 20.0, True), {"channel": "web"}
        ),
    ]


def test_publish_without_a_session_gets_the_exact_session_expired_reply(plain: Dispatcher) -> None:
    assert answer(plain, PUBLISH_CALL) == PUBLISH_SESSION_EXPIRED


def test_session_expires_a_fixed_time_after_creation(
    secure: Dispatcher, plain: Dispatcher, clock: Clock
) -> None:
    answer(secure, CONNECT_CALL)
    clock.now = 29 * 60
    assert answer(plain, PUBLISH_CALL) == PUBLISH_OK
    clock.now = 30 * 60
    assert answer(plain, PUBLISH_CALL) == PUBLISH_SESSION_EXPIRED


def test_find_stream_id_not_found_reply_is_exact(
    secure: Dispatcher, plain: Dispatcher, handler: InMemoryHandler
) -> None:
    answer(secure, CONNECT_CALL)
    handler.delete_stream("pizzaOrder:1.0.0")
    assert answer(plain, find_stream_id_call(7)) == find_stream_id_not_found(7)


def test_find_stream_id_returns_the_id_of_a_known_stream(secure: Dispatcher, plain: Dispatcher) -> None:
    answer(secure, CONNECT_CALL)
    assert call(plain, "findStreamId", sessionId=SESSION, streamName="pizzaOrder", streamVersion="1.0.0") == (
        "pizzaOrder:1.0.0"
    )


def test_connect_on_the_plain_port_is_unknown_method_and_the_connection_stays_usable(
    plain: Dispatcher,
) -> None:
    reader = Reader.of(CONNECT_CALL + PUBLISH_CALL)
    first = plain.handle(reader)
    assert not first.close
    with pytest.raises(RemoteApplicationError) as caught:
        read_reply(Reader.of(first.data), service(SECURE_SERVICE).methods["connect"], 1)
    assert caught.value.type == UNKNOWN_METHOD
    assert caught.value.message == "Invalid method name: 'connect'"
    assert first.data[:4] == b"\x80\x01\x00\x03"
    assert plain.handle(reader).data == PUBLISH_SESSION_EXPIRED


def test_non_strict_message_header_is_accepted(secure: Dispatcher) -> None:
    old_style = b"\x00\x00\x00\x07connect\x01\x00\x00\x00\x01" + CONNECT_CALL[19:]
    assert answer(secure, old_style) == CONNECT_REPLY


def test_reply_echoes_the_seqid(secure: Dispatcher) -> None:
    seqid_42 = CONNECT_CALL[:15] + (42).to_bytes(4, "big") + CONNECT_CALL[19:]
    assert answer(secure, seqid_42)[15:19] == (42).to_bytes(4, "big")


@pytest.mark.parametrize(
    ("user", "password", "message"),
    [
        ("admin", "wrong", "wrong userName or password"),
        (None, "admin", "Authentication request was missing the user name "),
        ("admin", None, "Authentication request was missing the required password"),
    ],
)
def test_failed_connect_replies_ae(
    secure: Dispatcher, user: str | None, password: str | None, message: str
) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        call(secure, "connect", userName=user, password=password)
    assert caught.value.message == message


def test_missing_session_id_is_null_expired(plain: Dispatcher) -> None:
    with pytest.raises(SessionExpired) as caught:
        call(plain, "findStreamId", streamName="pizzaOrder", streamVersion="1.0.0")
    assert caught.value.message == "null expired"


def test_disconnect_ends_the_session(secure: Dispatcher, plain: Dispatcher) -> None:
    answer(secure, CONNECT_CALL)
    assert call(secure, "disconnect", sessionId=SESSION) is None
    assert answer(plain, PUBLISH_CALL) == PUBLISH_SESSION_EXPIRED


def test_define_stream_is_idempotent_and_conflicts_reply_ade(secure: Dispatcher, plain: Dispatcher) -> None:
    answer(secure, CONNECT_CALL)
    assert call(plain, "defineStream", sessionId=SESSION, streamDefinition=PIZZA_ORDER) == "pizzaOrder:1.0.0"
    changed = PIZZA_ORDER.replace('"price","type":"DOUBLE"', '"price","type":"FLOAT"')
    with pytest.raises(DefinitionConflict, match="Similar event stream for"):
        call(plain, "defineStream", sessionId=SESSION, streamDefinition=changed)


def test_malformed_definition_replies_mtd(secure: Dispatcher, plain: Dispatcher) -> None:
    answer(secure, CONNECT_CALL)
    with pytest.raises(MalformedDefinition) as caught:
        call(plain, "defineStream", sessionId=SESSION, streamDefinition="{'version':'1.0.0'}")
    assert caught.value.message == "stream name is null"


def test_node_refusing_a_definition_replies_tde(secure: Dispatcher, sessions: Sessions) -> None:
    class Refusing(InMemoryHandler):
        def define_stream(self, definition: WireStreamDefinition) -> str:
            raise ConfigError("stream names must be identifiers")

    dispatcher = Dispatcher(service(PLAIN_SERVICE), Refusing(), sessions)
    answer(secure, CONNECT_CALL)
    with pytest.raises(StreamDefinitionError, match="identifiers"):
        call(dispatcher, "defineStream", sessionId=SESSION, streamDefinition=PIZZA_ORDER)


def test_publish_of_an_undefined_stream_replies_ue_with_the_stream_id(
    secure: Dispatcher, plain: Dispatcher, handler: InMemoryHandler
) -> None:
    answer(secure, CONNECT_CALL)
    handler.delete_stream("pizzaOrder:1.0.0")
    reply = answer(plain, PUBLISH_CALL)
    with pytest.raises(UndefinedEventType, match="pizzaOrder:1.0.0"):
        read_reply(Reader.of(reply), service(PLAIN_SERVICE).methods["publish"], 1)
    assert handler.events == []


def test_delete_stream_by_name_and_version(secure: Dispatcher, plain: Dispatcher) -> None:
    answer(secure, CONNECT_CALL)
    name = {"streamName": "pizzaOrder", "streamVersion": "1.0.0"}
    assert call(plain, "deleteStreamByNameVersion", sessionId=SESSION, **name) is True
    assert call(plain, "deleteStreamById", sessionId=SESSION, streamId="pizzaOrder:1.0.0") is False
    with pytest.raises(StreamNotFound):
        call(plain, "findStreamId", sessionId=SESSION, **name)


def test_undecodable_arguments_reply_protocol_error_and_close(plain: Dispatcher) -> None:
    negative_length = (
        b"\x80\x01\x00\x01\x00\x00\x00\x0cfindStreamId\x00\x00\x00\x05\x0b\x00\x01\xff\xff\xff\xfe"
    )
    reply = plain.handle(Reader.of(negative_length))
    assert reply.close
    with pytest.raises(RemoteApplicationError) as caught:
        read_reply(Reader.of(reply.data), service(PLAIN_SERVICE).methods["findStreamId"], 5)
    assert caught.value.type == PROTOCOL_ERROR


def test_a_field_of_the_wrong_type_is_skipped(secure: Dispatcher) -> None:
    wrong = CONNECT_CALL[:19] + b"\x08\x00\x01\x00\x00\x00\x05" + CONNECT_CALL[19:]
    assert answer(secure, wrong) == CONNECT_REPLY


def test_a_handler_bug_replies_internal_error(secure: Dispatcher, sessions: Sessions) -> None:
    class Broken(InMemoryHandler):
        def authenticate(self, username: str, password: str, address: str) -> None:
            raise RuntimeError("user store down")

    dispatcher = Dispatcher(service(SECURE_SERVICE), Broken(), sessions)
    with pytest.raises(RemoteApplicationError) as caught:
        call(dispatcher, "connect", userName="admin", password="admin")
    assert caught.value.type == INTERNAL_ERROR
    assert "Internal error processing connect" in caught.value.message
