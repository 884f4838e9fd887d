"""Thrift messages of the Data Bridge services: calls, replies and exceptions on the wire.

Owns the message envelope (strict and old non-strict headers, §2), reading a method's
argument struct by its IDL spec, and writing the `<method>_result` struct with either the
success value or one declared exception, plus `TApplicationException`. The client side
(`encode_call`, `read_reply`) and the server side share it. Declared exceptions are
matched to this package's errors by their result field name (`se`, `ade`, ...).
"""

from __future__ import annotations

from adapters.thrift.bundle_codec import read_bundle
from adapters.thrift.codec import (
    BOOL,
    CALL,
    EXCEPTION,
    I32,
    REPLY,
    STOP,
    STRING,
    STRUCT,
    VERSION_1,
    Reader,
    field_bool,
    field_i32,
    field_string,
    field_struct,
    message_header,
)
from adapters.thrift.errors import (
    AuthenticationFailed,
    DeclaredError,
    DefinitionConflict,
    MalformedDefinition,
    RemoteApplicationError,
    SessionExpired,
    StreamDefinitionError,
    StreamNotFound,
    ThriftProtocolError,
    UndefinedEventType,
)
from adapters.thrift.events import Bundle
from adapters.thrift.idl import Method

UNKNOWN, UNKNOWN_METHOD, INVALID_MESSAGE_TYPE, WRONG_METHOD_NAME = 0, 1, 2, 3
BAD_SEQUENCE_ID, MISSING_RESULT, INTERNAL_ERROR, PROTOCOL_ERROR = 4, 5, 6, 7

DECLARED: dict[str, type[DeclaredError]] = {
    "ade": DefinitionConflict,
    "mtd": MalformedDefinition,
    "tde": StreamDefinitionError,
    "se": SessionExpired,
    "tnde": StreamNotFound,
    "ue": UndefinedEventType,
    "ae": AuthenticationFailed,
}
ArgValue = str | Bundle | None


def read_message_begin(r: Reader) -> tuple[str, int, int]:
    """`(name, type, seqid)` of the next message, strict or non-strict header."""
    r.begin()
    size = r.i32()
    if size < 0:
        if (size & 0xFFFF0000) != VERSION_1:
            msg = (
                f"bad version {size & 0xFFFF0000:#x} in message header; is the client using TBinaryProtocol?"
            )
            raise ThriftProtocolError(msg)
        return r.string(), size & 0xFF, r.i32()
    raw = r.binary(size)
    if raw[:2] == b"\x80\x01":
        msg = "the client uses TFramedTransport; Data Bridge speaks the buffered (unframed) transport"
        raise ThriftProtocolError(msg)
    mtype = r.i8()
    return raw.decode("utf-8", "replace"), mtype, r.i32()


def read_args(r: Reader, method: Method) -> dict[str, ArgValue]:
    """The argument struct by argument name; unknown or mistyped fields are skipped."""
    args: dict[str, ArgValue] = dict.fromkeys(name for _t, name in method.args.values())
    while True:
        ftype, fid = r.field_header()
        if ftype == STOP:
            return args
        spec = method.args.get(fid)
        if spec is None or spec[0] != ftype:
            r.skip(ftype)
        elif ftype == STRING:
            value = args[spec[1]] = r.string()
            if spec[1] == "sessionId" and r.on_session is not None:
                r.on_session(value)
        elif ftype == STRUCT:
            args[spec[1]] = read_bundle(r)
        else:
            r.skip(ftype)


def encode_reply(method: Method, seqid: int, value: str | bool | None) -> bytes:
    """A REPLY carrying the success value (nothing for a void method)."""
    body = b""
    if method.success == STRING and isinstance(value, str):
        body = field_string(0, value)
    elif method.success == BOOL and isinstance(value, bool):
        body = field_bool(0, value)
    return message_header(method.name, REPLY, seqid) + body + b"\x00"


def encode_declared(method: Method, seqid: int, name: str, message: str) -> bytes:
    """A REPLY whose result struct carries the declared exception `name` (e.g. `se`)."""
    fid = method.throws[name]
    exception = field_string(1, message) + b"\x00"
    return message_header(method.name, REPLY, seqid) + field_struct(fid, exception) + b"\x00"


def encode_application_exception(name: str, seqid: int, type_: int, message: str) -> bytes:
    """An EXCEPTION message: TApplicationException {1: message, 2: type}."""
    body = field_string(1, message) + field_i32(2, type_) + b"\x00"
    return message_header(name, EXCEPTION, seqid) + body


def encode_call(method: Method, seqid: int, args: dict[str, str | bytes | None]) -> bytes:
    """A CALL; string arguments by name, the bundle as bytes from `write_bundle`."""
    parts = [message_header(method.name, CALL, seqid)]
    for fid, (ftype, name) in sorted(method.args.items()):
        value = args.get(name)
        if value is None:
            continue
        if ftype == STRING and isinstance(value, str):
            parts.append(field_string(fid, value))
        elif ftype == STRUCT and isinstance(value, bytes):
            parts.append(field_struct(fid, value))
        else:
            msg = f"argument {name} of {method.name} has the wrong type {type(value).__name__}"
            raise TypeError(msg)
    parts.append(b"\x00")
    return b"".join(parts)


def read_reply(r: Reader, method: Method, seqid: int) -> str | bool | None:
    """The success value of a reply; raise the declared exception or the application error."""
    name, mtype, got_seqid = read_message_begin(r)
    if mtype == EXCEPTION:
        raise _read_application_exception(r)
    if mtype != REPLY or name != method.name or got_seqid != seqid:
        msg = f"expected the reply to {method.name} #{seqid}, got message {name!r} type {mtype} #{got_seqid}"
        raise ThriftProtocolError(msg)
    success: str | bool | None = None
    raised: DeclaredError | None = None
    by_fid = {fid: exc for exc, fid in method.throws.items()}
    while True:
        ftype, fid = r.field_header()
        if ftype == STOP:
            break
        if fid == 0 and ftype == method.success == STRING:
            success = r.string()
        elif fid == 0 and ftype == method.success == BOOL:
            success = r.boolean()
        elif fid in by_fid and ftype == STRUCT:
            raised = DECLARED[by_fid[fid]](_read_message_struct(r))
        else:
            r.skip(ftype)
    if raised is not None:
        raise raised
    if method.success is not None and success is None:
        msg = f"{method.name} failed: the reply carries neither a result nor an exception"
        raise RemoteApplicationError(msg, MISSING_RESULT)
    return success


def _read_message_struct(r: Reader) -> str:
    message = ""
    while True:
        ftype, fid = r.field_header()
        if ftype == STOP:
            return message
        if fid == 1 and ftype == STRING:
            message = r.string()
        else:
            r.skip(ftype)


def _read_application_exception(r: Reader) -> RemoteApplicationError:
    message, type_ = "", UNKNOWN
    while True:
        ftype, fid = r.field_header()
        if ftype == STOP:
            return RemoteApplicationError(message, type_)
        if fid == 1 and ftype == STRING:
            message = r.string()
        elif fid == 2 and ftype == I32:
            type_ = r.i32()
        else:
            r.skip(ftype)
