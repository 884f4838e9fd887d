"""The two data shapes of `publish`: `WireEvent` (one event) and `Bundle` (the struct).

`Bundle` mirrors the eight optional fields of `ThriftEventBundle` (PROTOCOL §3.3) with
absent lists as empty ones; `WireEvent` is what a receiver hands to the node and what a
client or forwarder sends. Imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    """The fields of a `ThriftEventBundle`; absent lists are empty, unset eventNum is 0."""

    session_id: str | None = None
    event_num: int = 0
    ints: Sequence[int] = ()
    longs: Sequence[int] = ()
    doubles: Sequence[float] = ()
    bools: Sequence[bool] = ()
    strings: Sequence[str] = ()
    arbitrary: dict[int, dict[str, str]] | None = None
