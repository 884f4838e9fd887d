"""Events from JSON Lines and CSV files, ready for a Data Bridge client (`cepheus publish`).

```python
from adapters.thrift import DataBridgeClient
from app.publishing import read_events, stream_from_definition

stream = stream_from_definition(open("orderStream.json").read())
with DataBridgeClient("tcp://127.0.0.1:7611", username="admin", password=pw, ca_file="var/tls/cert.pem") as client:
    client.define_stream(stream.wire)
    client.publish(e for _, e in read_events("orders.jsonl", stream))
```

JSON Lines: one event per line in any form of `adapters.http.events` (array, `{"data": ...}`,
WSO2's `{"event": ...}`); lines of the replay format are accepted too: a `"stream"` key names
the stream (lines of other streams are skipped) and `{"time": ...}` lines are ignored. CSV:
the values in row order, an optional header row of attribute names. Every mistake is a
`PublishInputError` naming the file and line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from adapters.http.events import EventFormatError, Row, row_from_csv, row_from_json
from adapters.thrift import MalformedDefinition, WireEvent, parse_definition
from app.node.catalog import KnownStream, from_wire, known
from app.registry import ValidationError
from engine.errors import CEPError

FORMATS = ("jsonl", "csv")


class PublishInputError(CEPError):
    """A line of the input file that is not an event of the stream."""


def stream_from_definition(text: str) -> KnownStream:
    """A stream from a Data Bridge definition (§5.1 JSON, single quotes allowed)."""
    try:
        return known(from_wire(parse_definition(text)).checked())
    except (MalformedDefinition, ValidationError) as exc:
        msg = f"stream definition: {exc}".replace(":  ", ": ")
        raise PublishInputError(msg) from None


def file_format(path: str) -> str:
    return "csv" if path.lower().endswith(".csv") else "jsonl"


def to_wire(stream: KnownStream, row: Row, timestamp: int) -> WireEvent:
    """A row split into the meta, correlation and payload sections of a Data Bridge event."""
    d = stream.definition
    m, c = len(d.meta), len(d.correlation)
    return WireEvent(
        stream.id,
        timestamp,
        row[:m] if m else None,
        row[m : m + c] if c else None,
        row[m + c :] if d.payload else None,
    )


def read_events(
    path: str,
    stream: KnownStream,
    fmt: str | None = None,
    *,
    now: Callable[[], int],
    use_file_timestamps: bool = False,
    handle: IO[str] | None = None,
) -> Iterator[tuple[int, WireEvent]]:
    """(line number, event) for every event of `stream` in the file; timestamps from `now()`
    unless `use_file_timestamps` (then events without one get `now()` too)."""
    fmt = fmt or file_format(path)
    if fmt not in FORMATS:
        msg = f"format {fmt!r} is unknown (use {' or '.join(FORMATS)})"
        raise PublishInputError(msg)
    # utf-8-sig: drop the byte order mark Excel and Notepad put before "UTF-8" CSV and text
    f = handle if handle is not None else open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115
    try:
        records = _jsonl(f, path, stream) if fmt == "jsonl" else _csv(f, path, stream)
        for line, row, ts in records:
            stamp = ts if use_file_timestamps and ts is not None else now()
            yield line, to_wire(stream, row, stamp)
    except UnicodeDecodeError:
        msg = f"{path}: not UTF-8 text"
        raise PublishInputError(msg) from None
    finally:
        if handle is None:
            f.close()


def _jsonl(f: IO[str], path: str, stream: KnownStream) -> Iterator[tuple[int, tuple[Any, ...], int | None]]:
    for n, text in enumerate(f, 1):
        if not text.strip():
            continue
        where = f"{path}:{n}"
        try:
            item = json.loads(text)
        except ValueError as exc:
            msg = f"{where}: not JSON ({exc})"
            raise PublishInputError(msg) from None
        if isinstance(item, dict):
            if set(item) == {"time"}:
                continue
            if "stream" in item:
                item = dict(item)
                if item.pop("stream") not in (stream.definition.name, stream.id):
                    continue
                if item.get("type") in ("current", "expired"):
                    del item["type"]  # a line of `cepheus run` output
        try:
            row, ts = row_from_json(item, stream, where)
        except EventFormatError as exc:
            raise PublishInputError(str(exc)) from None
        yield n, row, ts


def _csv(f: IO[str], path: str, stream: KnownStream) -> Iterator[tuple[int, tuple[Any, ...], int | None]]:
    names = [name for name, _ in stream.attributes]
    reader = csv.reader(f)
    for record in reader:
        n = reader.line_num
        if not record:
            continue
        if n == 1 and record == names:
            continue  # header
        try:
            yield n, row_from_csv(record, stream, f"{path}:{n}"), None
        except EventFormatError as exc:
            raise PublishInputError(str(exc)) from None
