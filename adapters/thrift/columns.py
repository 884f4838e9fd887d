"""Column-wise fast paths for bundles whose events all belong to one stream.

In such a bundle each typed list is the events' values interleaved with a fixed stride, so
decoding is slicing and encoding is zipping, done in C rather than per value. Each function
returns None when its preconditions do not hold exactly; the event-by-event code in
`bundle` then does the work and produces the precise error. A bundle read from the wire is
decoded into `WireEvents` that keep its columns and their types, for consumers that want
columns rather than events (the input log). Imports `events` and `layout`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from adapters.thrift.events import Bundle, Column, WireEvent, WireEvents
from adapters.thrift.layout import BOOL, DOUBLE, INT, LONG, STRING, Layout

NULL = "_null"
_KINDS: tuple[type, ...] = (int, int, float, float, bool, str)  # by slot: what struct and the reader make
_new_tuple: Any = tuple.__new__
_STREAM_ID, _TIMESTAMP, _ARBITRARY = itemgetter(0), itemgetter(1), itemgetter(5)


def decode_uniform(bundle: Bundle, n: int, sid: str, layout: Layout) -> WireEvents | None:
    """Decode by slicing when every event is of stream `sid` and every list fits exactly."""
    ni, nl, nd, nb, ns = layout.counts
    ints, longs, doubles, bools, strings = (
        bundle.ints,
        bundle.longs,
        bundle.doubles,
        bundle.bools,
        bundle.strings,
    )
    if (
        len(strings) != n * (ns + 1)
        or len(longs) != n * (nl + 1)
        or len(ints) != n * ni
        or len(doubles) != n * nd
        or len(bools) != n * nb
        or strings[:: ns + 1].count(sid) != n
    ):
        return None
    rows: list[Iterable[Any]] = []
    typed: list[Column] = []
    for section in layout.columns:
        if not section:
            rows.append(repeat(None, n))
            continue
        columns: list[Sequence[Any]] = []
        for slot, p in section:
            kind: type | None = _KINDS[slot]
            if slot == INT:
                columns.append(ints[p::ni])
            elif slot == LONG:
                columns.append(longs[1 + p :: nl + 1])
            elif slot == DOUBLE:
                columns.append(doubles[p::nd])
            elif slot == BOOL:
                columns.append(bools[p::nb])
            else:
                column: Sequence[str | None] = strings[1 + p :: ns + 1]
                if NULL in column:
                    column, kind = [None if v == NULL else v for v in column], None
                columns.append(column)
            typed.append((kind, columns[-1]))
        rows.append(zip(*columns, strict=True))
    arbitrary = bundle.arbitrary
    extras = [arbitrary.get(k) for k in range(n)] if arbitrary else repeat(None, n)
    timestamps = longs[:: nl + 1]
    fields = zip(repeat(sid, n), timestamps, rows[0], rows[1], rows[2], extras, strict=True)
    events = map(_new_tuple, repeat(WireEvent), fields)
    return WireEvents(events, timestamps, tuple(typed) if bundle.typed else None)


def encode_uniform(session_id: str | None, events: Sequence[WireEvent], layout: Layout) -> Bundle | None:
    """Encode by zipping columns when all events share the first one's stream id and every
    section has exactly its declared number of values (None only in STRING attributes)."""
    n = len(events)
    sid = events[0][0]
    if list(map(_STREAM_ID, events)).count(sid) != n:
        return None
    by_slot: list[list[Sequence[Any]]] = [[], [], [], [], [], []]
    for index, section in enumerate(layout.columns, start=2):
        values = list(map(itemgetter(index), events))
        if not section:
            if any(values):
                return None
            continue
        if None in values or set(map(len, values)) != {len(section)}:
            return None
        for (slot, _p), column in zip(section, zip(*values, strict=True), strict=True):
            if None in column:
                if slot != STRING:
                    return None
                column = tuple(NULL if v is None else v for v in column)
            by_slot[slot].append(column)
    strings = _interleave([[sid] * n, *by_slot[STRING]])
    longs = _interleave([list(map(_TIMESTAMP, events)), *by_slot[LONG]])
    extras = list(map(_ARBITRARY, events))
    arbitrary = None if extras.count(None) == n else {k: a for k, a in enumerate(extras) if a is not None}
    return Bundle(
        session_id,
        n,
        _interleave(by_slot[INT]),
        longs,
        _interleave(by_slot[DOUBLE]),
        _interleave(by_slot[BOOL]),
        strings,
        arbitrary,
    )


def _interleave(columns: list[Sequence[Any]]) -> list[Any]:
    if not columns:
        return []
    if len(columns) == 1:
        return list(columns[0])
    return list(chain.from_iterable(zip(*columns, strict=True)))
