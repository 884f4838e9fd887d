"""The `wso2event` output adapter: WSO2Event records (from the wso2event formatter) to
other Data Bridge receivers through the Thrift forwarder (load balancing, fail-over,
reconnection, bounded buffer). One forwarder per outgoing stream, created when the node
registers the stream's definition.

Every event leaves with its sender identity (`adapters.senders`): a record with an origin
as `position.index@route|log`, the same on every member of an HA group and on every replay,
so a receiving Cepheus node takes each output once however often it is sent (after a
restart, a takeover, a lost acknowledgement); a record without one (a plan without input
log) numbered by this adapter for as long as it runs. A stock WSO2 receiver keeps the key
in the event's arbitrary data. A notifier's fence is asked when a record is queued and
again before each bundle is sent, so a deposed notifier sends nothing more.
Imports `formatters` and `adapters.thrift`.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from adapters.output.base import (
    AdapterConfigError,
    AdapterStats,
    AdapterStopped,
    Fence,
    Origins,
    RecordError,
    Run,
    check_origins,
)
from adapters.output.buffered import ON_FULL
from adapters.senders import marked
from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.events import WireEvent
from adapters.thrift.forwarder import ForwarderSettings, Wso2EventForwarder
from engine.errors import ConfigError
from formatters.config import Settings
from formatters.wso2event import WSO2Event, WSO2StreamDefinition

log = logging.getLogger(__name__)

_PROPERTY_KEYS = ("receiverURL", "authenticatorURL", "username", "password", "stream", "version")


class Wso2EventAdapter:
    kind = "wso2event"

    def __init__(self, name: str, settings: Settings) -> None:
        self.name = name
        properties = {key: settings.string(key, "") for key in _PROPERTY_KEYS}
        options: dict[str, Any] = {
            "buffer_events": settings.integer("buffer_events", 100_000),
            "bundle_size": settings.integer("bundle_size", 100),
            "retry_initial_ms": settings.integer("retry_initial_ms", 100),
            "retry_max_ms": settings.integer("retry_max_ms", 10_000),
            "ca_file": settings.string("ca_file", "") or None,
            "insecure": not settings.boolean("verify_tls", True),
            "block": settings.string("on_full", "block", choices=ON_FULL) == "block",
        }
        if options["insecure"]:
            log.warning(
                "output adapter %s does not verify the receivers' TLS certificates (verify_tls = false)", name
            )
        try:
            self.settings = ForwarderSettings.from_properties(
                {k: v for k, v in properties.items() if v}, **options
            )
        except ConfigError as exc:
            msg = f"output adapter {name!r}: {exc}"
            raise AdapterConfigError(msg, "receiverURL") from None
        self._forwarders: dict[str, Wso2EventForwarder] = {}
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._published = 0
        self._fenced = 0
        self._sender = f"{name}~{uuid.uuid4().hex[:16]}"  # names the records without origin
        self._numbers = itertools.count()

    def register_stream(self, definition: WSO2StreamDefinition) -> None:
        """The outgoing stream a formatter feeds into this adapter."""
        wire = WireStreamDefinition(
            name=definition.name,
            version=definition.version,
            meta=definition.meta,
            correlation=definition.correlation,
            payload=definition.payload,
        )
        with self._lock:
            if definition.stream_id not in self._forwarders:
                forwarder = Wso2EventForwarder(self.settings, wire)
                self._forwarders[definition.stream_id] = forwarder
                if self._started:
                    forwarder.start()

    def start(self) -> None:
        with self._lock:
            if not self._started:
                for forwarder in self._forwarders.values():
                    forwarder.start()
                self._started = True

    def publish(
        self, records: Sequence[Any], fence: Fence | None = None, origins: Origins | None = None
    ) -> int:
        if self._stopped:
            msg = f"output adapter {self.name!r} is stopped"
            raise AdapterStopped(msg)
        runs = check_origins(self.name, records, origins)
        by_stream: dict[str, list[WireEvent]] = {}
        follows: dict[str, tuple[str, int, int]] = {}  # per stream: the identity the next event continues
        for record, (sender, major, minor) in zip(records, self._identities(runs, len(records)), strict=True):
            if not isinstance(record, WSO2Event):
                msg = f"output adapter {self.name!r} takes wso2event records, got {type(record).__name__}"
                raise RecordError(msg)
            stream = record.stream_id
            arbitrary = record.arbitrary or None
            if follows.get(stream) != (sender, major, minor):
                arbitrary = marked(arbitrary, sender, major, minor)
            follows[stream] = (sender, major, minor + 1)
            by_stream.setdefault(stream, []).append(
                WireEvent(
                    stream,
                    record.timestamp,
                    record.meta or None,
                    record.correlation or None,
                    record.payload or None,
                    arbitrary,
                )
            )
        if fence is not None:
            try:
                fence(None)
            except Exception:  # noqa: BLE001 - the fence's verdict: this node must not send
                self._fenced += len(records)
                return len(records)
        for stream, events in by_stream.items():
            forwarder = self._forwarders.get(stream)
            if forwarder is None:
                msg = f"output adapter {self.name!r}: stream {stream} was never registered"
                raise RecordError(msg)
            forwarder.publish(events, fence)
        self._published += len(records)
        return len(records)

    def _identities(self, runs: list[Run] | None, count: int) -> list[tuple[str, int, int]]:
        """Each record's identity: its origin's, or a number of this adapter's."""
        out: list[tuple[str, int, int]] = []
        for origin, n in runs or [(None, count)]:
            if origin is None:
                out += [(self._sender, 0, next(self._numbers)) for _ in range(n)]
            else:
                out += [(origin.sender, origin.position, origin.index + k) for k in range(n)]
        return out

    def room(self, timeout: float) -> bool:
        """Wait up to `timeout` s until every forwarder's buffer is below `buffer_events`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            forwarders = list(self._forwarders.values())
        return all(f.room(deadline - time.monotonic()) for f in forwarders)

    def flush(self, timeout: float | None = None) -> bool:
        return all(f.flush(timeout if timeout is not None else 3600.0) for f in self._forwarders.values())

    def stop(self, timeout: float | None = None) -> bool:
        done = self.flush(timeout if timeout is not None else 5.0)
        for forwarder in self._forwarders.values():
            forwarder.stop(0.1)
        self._stopped = True
        return done

    @property
    def stats(self) -> AdapterStats:
        totals = {"sent": 0, "dropped": 0, "rejected": 0, "pending": 0, "fenced": 0}
        for forwarder in self._forwarders.values():
            for key, value in forwarder.stats().items():
                totals[key] = totals.get(key, 0) + value
        return AdapterStats(
            published=self._published,
            written=totals["sent"],
            overflow=totals["dropped"],
            rejected=totals["rejected"],
            fenced=self._fenced + totals["fenced"],
            pending=totals["pending"],
        )
