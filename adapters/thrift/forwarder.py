"""The WSO2Event output adapter: forwards events to Data Bridge receivers (PROTOCOL §10).

Owns the adapter's properties (`receiverURL`, `authenticatorURL`, `username`, `password`,
`stream`, `version`) and the fan-out over receiver groups: every group gets every event,
each through its own `GroupSender` (buffer, retries, load balancing or fail-over). Like the
CEP 3.x adaptor it defines the outgoing stream on each new connection (or runs `prepare`);
events leave with the outgoing stream's id. `publish` never blocks on the network; the
client publisher (`publisher`) waits on top of it for the receivers' acknowledgements.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import DEFAULT_VERSION, WireStreamDefinition
from adapters.thrift.delivery import GroupSender
from adapters.thrift.endpoints import Endpoint, ReceiverGroup, ReceiverGroups
from adapters.thrift.events import WireEvent
from adapters.wording import counted
from engine.errors import AdapterError, ConfigError

log = logging.getLogger(__name__)

_PROPERTIES = {
    "receiverURL": "receiver_url",
    "authenticatorURL": "authenticator_url",
    "username": "username",
    "password": "password",
    "stream": "stream",
    "version": "version",
}
_IGNORED = ("protocol", "publishingMode", "publishTimeout")


@dataclass(frozen=True)
class ForwarderSettings:
    """What a forwarder sends where; `stream`/`version` rename the outgoing stream."""

    receiver_url: str
    username: str
    password: str
    authenticator_url: str | None = None
    stream: str | None = None
    version: str | None = None
    buffer_events: int = 100_000
    bundle_size: int = 100
    retry_initial_ms: int = 100
    retry_max_ms: int = 10_000
    ca_file: str | None = None  # trust these certificates instead of the system's CAs
    insecure: bool = False  # do not verify the receivers' TLS certificates
    timeout_seconds: float = 30.0
    block: bool = False  # a full buffer takes events all the same; the caller asks `room` first

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], **options: Any) -> ForwarderSettings:
        """Build from adapter properties as CEP writes them; `options` set the other fields."""
        values: dict[str, Any] = {}
        for key, text in properties.items():
            if key in _IGNORED:
                if key == "protocol" and text not in ("", "thrift"):
                    msg = f"wso2event property protocol={text!r}: only 'thrift' is supported"
                    raise ConfigError(msg)
                continue
            if key not in _PROPERTIES:
                msg = f"unknown wso2event property {key!r}; expected one of {', '.join(_PROPERTIES)}"
                raise ConfigError(msg)
            values[_PROPERTIES[key]] = text or None
        for key in ("receiverURL", "username", "password"):
            if not values.get(_PROPERTIES[key]):
                msg = f"wso2event property {key} is required"
                raise ConfigError(msg)
        return cls(**values, **options)


class Wso2EventForwarder:
    """Sends `WireEvent`s of one outgoing stream to every receiver group."""

    def __init__(
        self,
        settings: ForwarderSettings,
        definition: WireStreamDefinition,
        *,
        define_stream: bool = True,
        prepare: Callable[[DataBridgeClient], None] | None = None,
        kind: str = "forwarder",
        on_done: Callable[[int, int, bool], None] | None = None,
    ) -> None:
        """`prepare(client)` runs on each new connection instead of `defineStream`;
        `on_done(group index, n, delivered)` is `GroupSender`'s hook, per group."""
        self.settings = settings
        self.definition = dataclasses.replace(
            definition,
            name=settings.stream or definition.name,
            version=settings.version or (definition.version if not settings.stream else DEFAULT_VERSION),
        )
        self._define = define_stream
        self._prepare = prepare
        self._kind = kind
        groups = ReceiverGroups.parse(settings.receiver_url, settings.authenticator_url)
        self.groups = groups.groups
        self.senders = [
            GroupSender(
                f"{self.stream_id}#{i + 1}" if len(groups.groups) > 1 else self.stream_id,
                group,
                self._open_client,
                capacity=settings.buffer_events,
                bundle_size=settings.bundle_size,
                retry_initial=settings.retry_initial_ms / 1000,
                retry_max=settings.retry_max_ms / 1000,
                kind=kind,
                on_done=None if on_done is None else _for_group(on_done, i),
                block=settings.block,
            )
            for i, group in enumerate(groups.groups)
        ]
        self._started = False

    @property
    def stream_id(self) -> str:
        return self.definition.stream_id

    def start(self) -> None:
        for sender in self.senders:
            sender.start()
        self._started = True
        log.info("%s %s started towards %s", self._kind, self.stream_id, self.settings.receiver_url)

    def publish(
        self, events: Iterable[WireEvent], fence: Callable[[None], object] | None = None
    ) -> list[int]:
        """Queue events for every group; ones of another stream id are sent as this stream.
        Returns how many each group buffered (the first ones; it dropped the rest). `fence`
        raises when they may no longer be sent (`GroupSender.offer`)."""
        if not self._started:
            msg = f"forwarder {self.stream_id} is not started; call start() first"
            raise AdapterError(msg)
        sid = self.stream_id
        if not isinstance(events, list | tuple):
            events = list(events)
        if any(e[0] != sid for e in events):
            events = [e if e[0] == sid else e._replace(stream_id=sid) for e in events]
        return [sender.offer(events, fence) for sender in self.senders]

    def room(self, timeout: float) -> bool:
        """Wait up to `timeout` s until every group's buffer is below its capacity; whether it is."""
        deadline = time.monotonic() + timeout
        return all(sender.room(deadline - time.monotonic()) for sender in self.senders)

    def flush(self, timeout: float) -> bool:
        """Wait until every queued event was delivered (or rejected); False on timeout."""
        deadline = time.monotonic() + timeout
        return all(sender.wait_empty(max(0.0, deadline - time.monotonic())) for sender in self.senders)

    def stop(self, timeout: float = 5.0) -> None:
        """Try for `timeout` s to deliver what is queued, then stop; report what is lost."""
        for sender in self.senders:
            left = sender.stop(timeout)
            if left:
                log.warning(
                    "%s %s stopped with %s undelivered", self._kind, sender.name, counted(left, "event")
                )
        self._started = False

    def stats(self) -> dict[str, int]:
        """Events sent, dropped (buffer full), rejected (`ue`), fenced (no longer to be sent by
        this node) and still pending, over all groups."""
        return {
            "sent": sum(s.sent for s in self.senders),
            "fenced": sum(s.fenced for s in self.senders),
            "dropped": sum(s.dropped for s in self.senders),
            "rejected": sum(s.rejected for s in self.senders),
            "pending": sum(s.pending() for s in self.senders),
        }

    def _open_client(self, endpoint: Endpoint) -> DataBridgeClient:
        settings = self.settings
        client = DataBridgeClient(
            str(endpoint.receiver),
            str(endpoint.auth),
            username=settings.username,
            password=settings.password,
            bundle_size=settings.bundle_size,
            ca_file=settings.ca_file,
            insecure=settings.insecure,
            timeout=settings.timeout_seconds,
            definitions=[self.definition],
        )
        try:
            client.connect()
            if self._prepare is not None:
                self._prepare(client)
            elif self._define:
                client.define_stream(self.definition)
        except Exception:
            client.abandon()
            raise
        return client


def _for_group(on_done: Callable[[int, int, bool], None], index: int) -> Callable[[int, bool], None]:
    return lambda n, delivered: on_done(index, n, delivered)


def group_label(group: ReceiverGroup) -> str:
    """The group as its receiver URLs are written: `tcp://a|tcp://b` or `tcp://a,tcp://b`."""
    return ("|" if group.failover else ",").join(str(e.receiver) for e in group.endpoints)
