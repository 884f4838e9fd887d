"""The `wso2event` output adapter: WSO2Event records (from the wso2event formatter) to
other Data Bridge receivers through the Thrift forwarder (load balancing, fail-over,
reconnection, bounded buffer). One forwarder per outgoing stream, created when the node
registers the stream's definition. Origins are ignored: a receiver cannot say what it
already has, so a replay after a restart is sent again (at-least-once).
Imports `formatters` and `adapters.thrift`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from adapters.output.base import (
    AdapterConfigError,
    AdapterStats,
    AdapterStopped,
    Fence,
    Origins,
    RecordError,
    check_origins,
)
from adapters.output.buffered import ON_FULL
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
        check_origins(self.name, records, origins)  # refuse what other adapters refuse; then ignore them
        by_stream: dict[str, list[WireEvent]] = {}
        for record in records:
            if not isinstance(record, WSO2Event):
                msg = f"output adapter {self.name!r} takes wso2event records, got {type(record).__name__}"
                raise RecordError(msg)
            by_stream.setdefault(record.stream_id, []).append(
                WireEvent(
                    record.stream_id,
                    record.timestamp,
                    record.meta or None,
                    record.correlation or None,
                    record.payload or None,
                    record.arbitrary or None,
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
            forwarder.publish(events)
        self._published += len(records)
        return len(records)

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
        totals = {"sent": 0, "dropped": 0, "rejected": 0, "pending": 0}
        for forwarder in self._forwarders.values():
            for key, value in forwarder.stats().items():
                totals[key] = totals.get(key, 0) + value
        return AdapterStats(
            published=self._published,
            written=totals["sent"],
            overflow=totals["dropped"],
            rejected=totals["rejected"],
            fenced=self._fenced,
            pending=totals["pending"],
        )
