"""`Publisher`: a client's synchronous publisher to WSO2 receiver groups (PROTOCOL §1.1, §10).

Owns what `cepheus publish` and the pizza-shop publisher add to the forwarder's fan-out
(`forwarder`, `delivery`): `publish(events)` returns once each event was acknowledged by at
least one group, and raises `NotDelivered` when no group can take them (every receiver of
every group still holding them failed since the call began). A group that is down keeps the
events in its bounded buffer (what does not fit is dropped and counted) and retries in the
background; `close(timeout)` waits that long for the groups that are behind and returns a
`Report` of what each group and receiver acknowledged, dropped, rejected or left pending.

Within a group, `|` sends to the first receiver and moves to the next only when a call fails
(refused, closed, timed out); the bundle that was not acknowledged is resent there (at least
once: a Cepheus receiver takes each event once, for every event names its sender: this
publisher, by a name of its own, and its number, `adapters.senders`; other receivers may
take a resent bundle twice). `,` sends the bundles round robin. Every receiver of every
group gets `prepare(client)` (by default `defineStream`) on each new connection, before any
event. Imports only `engine.errors` outside this package.
"""

from __future__ import annotations

import threading
import time
import uuid
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from adapters.senders import marked
from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.delivery import ReceiverState
from adapters.thrift.events import WireEvent
from adapters.thrift.forwarder import ForwarderSettings, Wso2EventForwarder, group_label
from adapters.wording import counted
from engine.errors import AdapterError

_POLL = 0.05  # how often a waiting `publish` looks at the receivers' failures


class NotDelivered(AdapterError):
    """No receiver group acknowledged some events; `.errors` holds each receiver's last failure."""

    def __init__(self, message: str, errors: Sequence[tuple[str, Exception]]) -> None:
        super().__init__(message)
        self.errors = tuple(errors)


@dataclass(frozen=True)
class GroupReport:
    """What one group did: events acknowledged (`sent`), dropped (buffer full), rejected
    (`ue`) and still buffered (`pending`), and its receivers."""

    urls: str
    sent: int
    dropped: int
    rejected: int
    pending: int
    receivers: tuple[ReceiverState, ...]

    def describe(self) -> str:
        """`tcp://a|tcp://b: 90 delivered (tcp://a 40, tcp://b 50), 10 pending; tcp://a: <error>`"""
        parts = [f"{self.urls}: {self.sent} delivered"]
        if len(self.receivers) > 1:
            parts[0] += " (" + ", ".join(f"{r.endpoint.receiver} {r.sent}" for r in self.receivers) + ")"
        if self.pending:
            parts.append(f"{self.pending} pending")
        if self.dropped:
            parts.append(f"{self.dropped} dropped (buffer full)")
        if self.rejected:
            parts.append(f"{self.rejected} rejected by the receiver")
        down = [f"{r.endpoint.receiver} down: {r.error}" for r in self.receivers if r.down]
        return "; ".join([", ".join(parts), *down])


@dataclass(frozen=True)
class Report:
    """How many events were published, how many reached at least one group, and per group."""

    events: int
    reached: int
    groups: tuple[GroupReport, ...]

    @property
    def lost(self) -> int:
        """Events no group acknowledged."""
        return self.events - self.reached


class Publisher:
    """Publishes the `WireEvent`s of one stream to every receiver group of `settings`. One
    thread publishes at a time (the senders, one per group, run on threads of their own)."""

    def __init__(
        self,
        settings: ForwarderSettings,
        definition: WireStreamDefinition,
        *,
        define_stream: bool = True,
        prepare: Callable[[DataBridgeClient], None] | None = None,
        name: str | None = None,
    ) -> None:
        """`settings.receiver_url` (and `authenticator_url`) in WSO2's syntax. On every new
        connection: `prepare(client)` if given, else `defineStream` unless not `define_stream`
        (the receivers know the stream already, as for Gen-2 clients). `name`: the sender name
        its events carry (default: one of its own, unique to this publisher)."""
        self.name = name or f"publisher~{uuid.uuid4().hex}"
        self._forwarder = Wso2EventForwarder(
            settings,
            definition,
            define_stream=define_stream,
            prepare=prepare,
            kind="publisher",
            on_done=self._done,
        )
        self._cond = threading.Condition()
        self._next = 0
        self._reached = _Spans()
        self._waiting: list[deque[list[int]]] = [deque() for _ in self._forwarder.senders]
        self._closed: Report | None = None

    @property
    def stream_id(self) -> str:
        return self._forwarder.stream_id

    def __enter__(self) -> Publisher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(0.0)

    def start(self) -> None:
        self._forwarder.start()

    def publish(self, events: Sequence[WireEvent], timeout: float | None = None) -> None:
        """Send `events` to every group; return when each was acknowledged by one. Raises
        `NotDelivered` when no group can take them (or after `timeout` s); they stay buffered."""
        if not events:
            return
        senders = self._forwarder.senders
        first = events[0]
        with self._cond:
            start, end = self._next, self._next + len(events)
            self._next = end
            events = [first._replace(arbitrary=marked(first.arbitrary, self.name, 0, start)), *events[1:]]
            for waiting in self._waiting:  # before the senders can acknowledge any of them
                waiting.append([start, end])
        before = [[r.failures for r in s.receivers()] for s in senders]
        accepted = self._forwarder.publish(events)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            for waiting, n in zip(self._waiting, accepted, strict=True):
                if n < len(events):  # the tail that did not fit was dropped: not pending
                    waiting[-1][1] = start + n
                    if waiting[-1][0] >= waiting[-1][1]:
                        waiting.pop()
            while not self._reached.covers(start, end):
                left = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
                if left <= 0 or self._hopeless(start, end, before):
                    self._fail(start, end, timed_out=left <= 0)
                self._cond.wait(left)

    def report(self) -> Report:
        """Where every group stands now."""
        groups = tuple(
            GroupReport(group_label(g), s.sent, s.dropped, s.rejected, s.pending(), s.receivers())
            for g, s in zip(self._forwarder.groups, self._forwarder.senders, strict=True)
        )
        with self._cond:
            return Report(self._next, self._reached.total(), groups)

    def close(self, timeout: float = 10.0) -> Report:
        """Wait up to `timeout` s for the groups still holding events, disconnect, and report."""
        if self._closed is None:
            self._forwarder.flush(timeout)
            for sender in self._forwarder.senders:  # what is left is in the report, not the log
                sender.stop(0.0)
            self._closed = self.report()
        return self._closed

    def _done(self, group: int, n: int, delivered: bool) -> None:
        with self._cond:
            waiting = self._waiting[group]
            while n > 0 and waiting:
                span = waiting[0]
                take = min(n, span[1] - span[0])
                if delivered:
                    self._reached.add(span[0], span[0] + take)
                span[0] += take
                if span[0] >= span[1]:
                    waiting.popleft()
                n -= take
            self._cond.notify_all()

    def _hopeless(self, start: int, end: int, before: list[list[int]]) -> bool:
        """Whether no group can still deliver what it holds of [start, end): each such group's
        receivers all failed since the call began and none has recovered."""
        for waiting, sender, failures in zip(self._waiting, self._forwarder.senders, before, strict=True):
            if not _holds(waiting, start, end):
                continue
            receivers = sender.receivers()
            if not all(r.down and r.failures > f for r, f in zip(receivers, failures, strict=True)):
                return False
        return True

    def _fail(self, start: int, end: int, *, timed_out: bool) -> NoReturn:
        errors = [
            (str(r.endpoint.receiver), r.error)
            for s in self._forwarder.senders
            for r in s.receivers()
            if r.down and r.error is not None
        ]
        missing = (end - start) - self._reached.overlap(start, end)
        why = "; ".join(f"{url}: {error}" for url, error in errors) or "rejected or dropped (see the log)"
        if timed_out:
            why = f"timed out; {why}"
        msg = f"no receiver group acknowledged {counted(missing, 'event')}: {why}"
        raise NotDelivered(msg, errors)


def _holds(waiting: deque[list[int]], start: int, end: int) -> bool:
    """Whether a group still holds any of [start, end) (its spans are in order: look from the end)."""
    for a, b in reversed(waiting):
        if b <= start:
            return False
        if a < end:
            return True
    return False


class _Spans:
    """Disjoint half-open ranges of event positions, merged as they are added."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        if start >= end:
            return
        i = bisect_left(self._ends, start)  # the first range that ends at or after `start`
        j = bisect_right(self._starts, end)  # past the last one that starts at or before `end`
        if i < j:
            start, end = min(start, self._starts[i]), max(end, self._ends[j - 1])
        self._starts[i:j] = [start]
        self._ends[i:j] = [end]

    def covers(self, start: int, end: int) -> bool:
        i = bisect_right(self._starts, start) - 1
        return start >= end or (i >= 0 and self._ends[i] >= end)

    def overlap(self, start: int, end: int) -> int:
        i = max(bisect_right(self._starts, start) - 1, 0)
        total = 0
        for a, b in zip(self._starts[i:], self._ends[i:], strict=True):
            if a >= end:
                break
            total += max(0, min(b, end) - max(a, start))
        return total

    def total(self) -> int:
        return sum(b - a for a, b in zip(self._starts, self._ends, strict=True))
