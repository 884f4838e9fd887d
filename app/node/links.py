"""`PlanLinks`: a redundant plan's exports on their way to the plans of this node that import them.

A plan that imports another plan's export is fed, for a plan of one node, within the exporting
plan's processing (`app.node.plans`). A redundant plan's outputs may not go anywhere before its
standbys hold the record that caused them, so they leave through its output gate like any
output (`app.cluster.gate`), and the gate hands them here, not to the plans directly: one link
per exported stream, a buffered adapter whose target is the node's ingress. It forwards each
run of outputs with its origin as its sender identity (`adapters.senders`), so the importing
plans take each output once however often it comes (a takeover, a lapsed fence, a retry);
it asks the notifier's fence before each batch; a plan that cannot take them now (its input
log full, its notifier not reachable, its outputs full) makes the link try again later, as a
sink that is down does, and the importer's backpressure reaches the exporter's clients through
`room`. What a link has not forwarded counts as not delivered: the gate keeps it and the next
notifier forwards it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from adapters.output.base import AdapterStats, Fence, Origin, Run
from adapters.output.buffered import BufferedAdapter, Buffering, RetryLater, check_fence
from adapters.senders import SenderRun
from app.node.ingress import Ingress
from app.persistence.errors import InputLogError
from engine.errors import Busy
from engine.events import Event

LINK_BUFFERING = Buffering(retry_initial_ms=20, retry_max_ms=1000, linger_ms=0.0)


class _Link(BufferedAdapter):
    kind = "plan-link"

    def __init__(self, stream_id: str, ingress: Ingress, buffering: Buffering) -> None:
        super().__init__(f"plan-link {stream_id}", buffering)
        self.stream_id = stream_id
        self._ingress = ingress

    def describe_target(self) -> str:
        return f"the plans importing {self.stream_id}"

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> None:
        check_fence(fence)  # refused: the next notifier forwards them
        start = 0
        for origin, count in origins:
            events: Sequence[Event] = records[start : start + count]
            start += count
            senders = (
                () if origin is None else (SenderRun(origin.sender, origin.position, origin.index, count),)
            )
            try:
                self._ingress.forward(
                    self.stream_id,
                    [tuple(e.data) for e in events],
                    [e.timestamp for e in events],
                    source="" if origin is None else origin.source,
                    senders=senders,
                )
            except (
                Busy,
                InputLogError,
            ) as exc:  # taken by none or some: the rest are known again by their senders
                raise RetryLater(str(exc)) from exc


class PlanLinks:
    def __init__(self, ingress: Ingress, buffering: Buffering = LINK_BUFFERING) -> None:
        self._ingress = ingress
        self._buffering = buffering
        self._links: dict[str, _Link] = {}
        self._lock = threading.Lock()
        self._stopped = False

    def emit(self, stream_id: str, events: list[Event], origin: Origin | None, fence: Fence | None) -> None:
        """Outputs a redundant plan's gate released: on to the plans importing `stream_id`."""
        if not events or not self._ingress.routes().get(stream_id):
            return
        link = self._link(stream_id)
        if link is not None:
            link.publish(events, fence, origin)

    def _link(self, stream_id: str) -> _Link | None:
        with self._lock:
            if self._stopped:
                return None
            link = self._links.get(stream_id)
            if link is None:
                link = self._links[stream_id] = _Link(stream_id, self._ingress, self._buffering)
                link.start()
            return link

    def room(self, streams: frozenset[str], timeout: float) -> str | None:
        """As `OutputHub.room`, for the links of `streams`."""
        links = [self._links[s] for s in streams if s in self._links]
        for link in links:
            if not link.room(timeout):
                return link.name
        return None

    def flush(self, timeout: float, streams: Sequence[str] | None = None) -> bool:
        """Whether everything handed to the links (of `streams`; None: all) was forwarded
        within `timeout` s."""
        with self._lock:
            links = [link for s, link in self._links.items() if streams is None or s in streams]
        deadline = time.monotonic() + timeout
        return all(link.flush(max(0.0, deadline - time.monotonic())) for link in links)

    def stats(self, streams: Sequence[str] | None = None) -> dict[str, AdapterStats]:
        with self._lock:
            return {
                link.name: link.stats for s, link in self._links.items() if streams is None or s in streams
            }

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopped = True
            links = list(self._links.values())
        for link in links:
            link.stop(timeout)
