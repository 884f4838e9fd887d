"""The data shapes of `publish`: `WireEvent` (one event), `Bundle` (the struct) and
`WireEvents` (a decoded single-stream bundle with its columns).

`Bundle` mirrors the eight optional fields of `ThriftEventBundle` (PROTOCOL §3.3) with
absent lists as empty ones; `WireEvent` is what a receiver hands to the node and what a
client or forwarder sends. Imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple


class WireEvent(NamedTuple):
    """One Data Bridge event; a section without attributes is None."""

    stream_id: str
    timestamp: int
    meta: tuple[Any, ...] | None = None
    correlation: tuple[Any, ...] | None = None
    payload: tuple[Any, ...] | None = None
    arbitrary: dict[str, str] | None = None


@dataclass(slots=True)
class Bundle:
    """The fields of a `ThriftEventBundle`; absent lists are empty, unset eventNum is 0.
    `typed`: every list holds values of exactly its Thrift type, as read from the wire (a
    bundle built in Python may hold an int among the doubles)."""

    session_id: str | None = None
    event_num: int = 0
    ints: Sequence[int] = ()
    longs: Sequence[int] = ()
    doubles: Sequence[float] = ()
    bools: Sequence[bool] = ()
    strings: Sequence[str] = ()
    arbitrary: dict[int, dict[str, str]] | None = None
    typed: bool = False


Column = tuple[type | None, Sequence[Any]]
"""One attribute's values across a bundle, with the one Python type they all have (None:
not known, e.g. a STRING attribute holding a null)."""


class WireEvents(list[WireEvent]):
    """The events of a bundle of one stream, decoded by columns: `timestamps` and
    `columns` (one per attribute: meta, correlation, payload) hold the same values as the
    events, so a consumer can take them without walking the events (or None when the
    bundle was not `typed`)."""

    __slots__ = ("columns", "timestamps")

    def __init__(
        self,
        events: Iterable[WireEvent],
        timestamps: Sequence[int],
        columns: tuple[Column, ...] | None,
    ) -> None:
        super().__init__(events)
        self.timestamps = timestamps
        self.columns = columns
