"""`#log(...)`: Siddhi's LogStreamProcessor. Logs each event of a chunk through the
`siddhi.log` logger and passes the chunk on unchanged.

A record reads `<app name>: <message>, StreamEvent{ timestamp=..., data=[...],
isExpired=... }`; without a message the event alone follows the prefix; with
`is.event.logged` false only the message (or, with no message, `Event Arrived`) is
logged. The priority maps TRACE/DEBUG to DEBUG, INFO, WARN to WARNING, ERROR, FATAL to
CRITICAL; OFF logs nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import ProcessingError
from engine.events import EXPIRED, Chunk
from engine.runtime.windows.javacompat import java_str
from engine.types import AttrType

LOGGER = logging.getLogger("siddhi.log")
OFF = logging.CRITICAL + 10
PRIORITIES = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": OFF,
}

Row = tuple[Any, ...]
Reader = Callable[[Row], Any]


@dataclass(frozen=True)
class LogSpec:
    """The planned arguments; each reader is a constant or reads the event's row."""

    prefix: str
    priority: Reader | None  # None: INFO
    message: Reader | None  # None: no message
    event_logged: Reader | None  # None: the event is logged
    query: str = ""
    types: tuple[AttrType, ...] = ()  # the row's attribute types (a float prints as Java's)


def level_of(name: Any) -> int | None:
    return PRIORITIES.get(name.upper()) if isinstance(name, str) else None


def describe(t: int, row: Row, kind: int, types: tuple[AttrType, ...] = ()) -> str:
    kinds: list[AttrType | None] = [*types, *([None] * (len(row) - len(types)))]
    data = ", ".join(java_str(v, k) for v, k in zip(row, kinds, strict=False))
    return (
        f"StreamEvent{{ timestamp={t}, data=[{data}], isExpired={'true' if kind == EXPIRED else 'false'} }}"
    )


def log_chunk(spec: LogSpec, chunk: Chunk) -> Chunk:
    kinds = chunk.kinds
    for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
        level = logging.INFO
        if spec.priority is not None:
            found = level_of(spec.priority(row))
            if found is None:
                msg = f"#log(): unknown priority {spec.priority(row)!r}"
                raise ProcessingError(msg, spec.query)
            level = found
        if level == OFF or not LOGGER.isEnabledFor(level):
            continue
        with_event = spec.event_logged is None or spec.event_logged(row) is True
        if spec.message is None:
            text = describe(t, row, kinds[i] if kinds else 0, spec.types) if with_event else "Event Arrived"
        else:
            text = java_str(spec.message(row), None)
            if with_event:
                text += ", " + describe(t, row, kinds[i] if kinds else 0, spec.types)
        LOGGER.log(level, "%s%s", spec.prefix, text)
    return chunk
