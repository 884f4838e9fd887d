"""Events ↔ bundle value lists: the §6.1 encoder and the §6.2 decoder.

Owns the two algorithms that pack events into the five shared typed lists of a
`ThriftEventBundle` and unpack them again. Unlike WSO2, the decoder checks its work: an
unknown stream id, a list running out and values left over all raise `UndefinedEventType`
with a message saying what did not match. Single-stream bundles (the common case) take the
column-wise paths of `columns`; the event-by-event code here handles the rest and every
error. No I/O: the wire form of a bundle is `bundle_codec`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from adapters.thrift.columns import NULL, decode_uniform, encode_uniform
from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.errors import EventEncodingError, UndefinedEventType
from adapters.thrift.events import Bundle, WireEvent, WireEvents
from adapters.thrift.layout import BOOL, DOUBLE, INT, LIST_NAMES, LONG, SLOT, STRING, Layout, layout
from adapters.wording import counted

__all__ = ["NULL", "Bundle", "Lookup", "WireEvent", "WireEvents", "decode_bundle", "encode_bundle"]

Lookup = Callable[[str], WireStreamDefinition | None]
_SHIFT_HINT = "a null in a non-STRING attribute shifts every later value"


def encode_bundle(session_id: str | None, events: Iterable[WireEvent], definitions: Lookup) -> Bundle:
    """Pack events as the Java clients do (§6.1), choosing each value's list by declared type.

    Python has no Integer/Long distinction, so the declared types of `definitions` decide
    where a number goes. A None in a STRING attribute travels as `_null`; a None in any
    other attribute could not be decoded by any receiver and raises `EventEncodingError`.
    """
    events = events if isinstance(events, Sequence) else list(events)
    if not events:
        return Bundle(session_id, 0, [], [], [], [], [], None)
    first = _layout_of(definitions, events[0][0])
    bundle = encode_uniform(session_id, events, first)
    return bundle if bundle is not None else _encode_mixed(session_id, events, definitions)


def _layout_of(definitions: Lookup, sid: str) -> Layout:
    definition = definitions(sid)
    if definition is None:
        msg = f"no definition of stream {sid} is known; define the stream before publishing to it"
        raise EventEncodingError(msg)
    return layout(definition)


def _encode_mixed(session_id: str | None, events: Sequence[WireEvent], definitions: Lookup) -> Bundle:
    ints: list[int] = []
    longs: list[int] = []
    doubles: list[float] = []
    bools: list[bool] = []
    strings: list[str] = []
    arbitrary: dict[int, dict[str, str]] = {}
    append = (ints.append, longs.append, doubles.append, doubles.append, bools.append, strings.append)
    layouts: dict[str, Layout] = {}
    for k, event in enumerate(events):
        sid = event[0]
        found = layouts.get(sid)
        if found is None:
            found = layouts[sid] = _layout_of(definitions, sid)
        strings.append(sid)
        longs.append(event[1])
        for codes, values in zip(found.sections, event[2:5], strict=True):
            if len(codes) != (0 if values is None else len(values)):
                raise EventEncodingError(_arity_message(k, sid, codes, values))
            for code, value in zip(codes, values or (), strict=True):
                if value is not None:
                    append[code](value)
                elif code == STRING:
                    strings.append(NULL)
                else:
                    msg = f"event {k} (stream {sid}) has a null in a non-STRING attribute; Data Bridge cannot carry it"
                    raise EventEncodingError(msg)
        if event[5] is not None:
            arbitrary[k] = event[5]
    return Bundle(session_id, len(events), ints, longs, doubles, bools, strings, arbitrary or None)


def _arity_message(k: int, sid: str, codes: tuple[int, ...], values: Sequence[Any] | None) -> str:
    have = 0 if values is None else len(values)
    return f"event {k} (stream {sid}) has {have} values in a section whose definition has {len(codes)} attributes"


def decode_bundle(bundle: Bundle, lookup: Lookup) -> list[WireEvent]:
    """Unpack a bundle as the WSO2 receiver does (§6.2), but raise `UndefinedEventType` on
    an unknown stream id, a list that runs out, or values left over after the last event.
    A bundle of one stream whose lists fit exactly comes back as `WireEvents`."""
    n = bundle.event_num
    if n < 0:
        msg = f"eventNum {n} is negative; a bundle carries zero or more events"
        raise UndefinedEventType(msg)
    if n == 0:
        _check_consumed(bundle, n, (0, 0, 0, 0, 0))
        return []
    if not bundle.strings:
        msg = f"bundle of {counted(n, 'event')} has an empty stringAttributeList, so event 0 has no stream id"
        raise UndefinedEventType(msg)
    sid = bundle.strings[0]
    events = decode_uniform(bundle, n, sid, layout(_definition(lookup, sid, 0, n)))
    return events if events is not None else _decode_mixed(bundle, n, lookup)


def _definition(lookup: Lookup, sid: str, k: int, n: int) -> WireStreamDefinition:
    definition = lookup(sid)
    if definition is None:
        msg = (
            f"No StreamDefinition for streamId {sid} present (event {k} of a bundle of {n}); "
            "define the stream with defineStream or in the node's configuration before publishing"
        )
        raise UndefinedEventType(msg)
    return definition


def _decode_mixed(bundle: Bundle, n: int, lookup: Lookup) -> list[WireEvent]:
    """Event by event with the five shared cursors of §6.2, checking every read."""
    lists = (bundle.ints, bundle.longs, bundle.doubles, bundle.doubles, bundle.bools, bundle.strings)
    cursor = [0, 0, 0, 0, 0, 0]
    strings, longs = bundle.strings, bundle.longs
    arbitrary = bundle.arbitrary or {}
    layouts: dict[str, Layout] = {}
    events: list[WireEvent] = []
    for k in range(n):
        if cursor[STRING] >= len(strings):
            raise _ran_out(k, n, None, STRING, len(strings))
        sid = strings[cursor[STRING]]
        cursor[STRING] += 1
        if cursor[LONG] >= len(longs):
            raise _ran_out(k, n, sid, LONG, len(longs))
        timestamp = longs[cursor[LONG]]
        cursor[LONG] += 1
        found = layouts.get(sid)
        if found is None:
            found = layouts[sid] = layout(_definition(lookup, sid, k, n))
        sections: list[tuple[Any, ...] | None] = []
        for codes in found.sections:
            if not codes:
                sections.append(None)
                continue
            values = []
            for code in codes:
                slot = SLOT[code]
                source = lists[slot]
                if cursor[slot] >= len(source):
                    raise _ran_out(k, n, sid, code, len(source))
                value = source[cursor[slot]]
                cursor[slot] += 1
                values.append(None if code == STRING and value == NULL else value)
            sections.append(tuple(values))
        events.append(WireEvent(sid, timestamp, sections[0], sections[1], sections[2], arbitrary.get(k)))
    _check_consumed(bundle, n, (cursor[INT], cursor[LONG], cursor[DOUBLE], cursor[BOOL], cursor[STRING]))
    return events


def _ran_out(k: int, n: int, sid: str | None, code: int, size: int) -> UndefinedEventType:
    what = "its stream id" if sid is None else f"stream {sid}"
    msg = (
        f"event {k} of a bundle of {n} ({what}) needs more values than the {size} in "
        f"{LIST_NAMES[code]}: the bundle does not match the stream definition ({_SHIFT_HINT})"
    )
    return UndefinedEventType(msg)


def _check_consumed(bundle: Bundle, n: int, used: tuple[int, int, int, int, int]) -> None:
    lists = (bundle.ints, bundle.longs, bundle.doubles, bundle.bools, bundle.strings)
    names = (LIST_NAMES[INT], LIST_NAMES[LONG], LIST_NAMES[DOUBLE], LIST_NAMES[BOOL], LIST_NAMES[STRING])
    left = [f"{len(vs) - u} in {name}" for vs, u, name in zip(lists, used, names, strict=True) if len(vs) > u]
    if left:
        msg = (
            f"a bundle of {counted(n, 'event')} left values unread ({', '.join(left)}): "
            f"the bundle does not match the stream definitions ({_SHIFT_HINT})"
        )
        raise UndefinedEventType(msg)
