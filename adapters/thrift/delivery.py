"""`GroupSender`: delivers a forwarder's events to one receiver group, come what may.

Owns a bounded buffer and one sender thread per group. Events leave the buffer only when a
receiver acknowledged their bundle (or rejected it with `ue`, which no retry can fix). A
receiver that fails is left alone for a back-off that doubles up to a maximum, while the
others of the group take the load (round robin) or the next takes over (fail-over). When
the buffer is full, new events are dropped, counted and logged: never silently; or, for a
sender that `block`s, taken all the same, its caller keeping the bound by asking `room` first
(the node's wso2event adapter: backpressure on the node's input instead of loss). The
forwarder drives one per group, and so does the client publisher (`publisher`), which hears of
every acknowledged or rejected stretch of the buffer through `on_done`.

Events that carry their sender's identity (`adapters.senders`: a key on the first event of
each run) keep it whatever bundle they leave in: a bundle that starts inside a run gets the
key of its first event added, so the receiver can tell every event it already has. Events
offered with a `fence` (an HA notifier's) are sent only while it lets them: it is asked
again before each bundle, and the events whose fence refuses are dropped (`fenced`), not
sent by a member that no longer notifies.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from adapters.senders import FROM_KEY, marked, parse_from
from adapters.thrift.client import DataBridgeClient
from adapters.thrift.endpoints import Endpoint, ReceiverGroup
from adapters.thrift.errors import EventEncodingError, RemoteApplicationError, UndefinedEventType
from adapters.thrift.events import WireEvent
from adapters.wording import counted
from engine.errors import CEPError

log = logging.getLogger(__name__)

_ATTEMPTS_BEFORE_REJECT = 3
_OVERFLOW_LOG_INTERVAL = 10.0


@dataclass(frozen=True)
class ReceiverState:
    """One receiver of a group as its sender sees it: events it acknowledged, whether its last
    attempt failed (`down`), how many attempts failed in all, and the last failure."""

    endpoint: Endpoint
    sent: int
    down: bool
    failures: int
    error: Exception | None


class _Receiver:
    __slots__ = ("endpoint", "client", "down_until", "backoff", "down", "sent", "failures", "error")

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.client: DataBridgeClient | None = None
        self.down_until = 0.0
        self.backoff = 0.0
        self.down = False
        self.sent = self.failures = 0
        self.error: Exception | None = None


class GroupSender:
    """Sends buffered events to the receivers of `group` on a thread of its own."""

    def __init__(
        self,
        name: str,
        group: ReceiverGroup,
        open_client: Callable[[Endpoint], DataBridgeClient],
        *,
        capacity: int,
        bundle_size: int,
        retry_initial: float,
        retry_max: float,
        kind: str = "forwarder",
        on_done: Callable[[int, bool], None] | None = None,
        block: bool = False,
    ) -> None:
        """`block`: `offer` takes every event (the caller waits for `room` first); `kind` starts the log lines; `on_done(n, delivered)` hears, in buffer order and on
        the sender's thread, that the oldest `n` buffered events were acknowledged (or rejected)."""
        self.name = name
        self.kind = kind
        self._on_done = on_done
        self._failover = group.failover
        self._receivers = [_Receiver(e) for e in group.endpoints]
        self._open_client = open_client
        self._capacity = capacity
        self._block = block
        self._bundle_size = bundle_size
        self._retry_initial, self._retry_max = retry_initial, retry_max
        self._buffer: deque[WireEvent] = deque()
        self._fences: deque[list[Any]] = deque()  # [fence or None, events] over the buffer, in order
        self._next_id: tuple[str, int, int] | None = None  # the identity an unkeyed head event has
        self._cond = threading.Condition()
        self._stopping = False
        self._next = 0
        self._attempts = 0
        self._last_overflow_log = 0.0
        self._thread = threading.Thread(target=self._run, name=f"{kind}-{name}", daemon=True)
        self.sent = self.dropped = self.rejected = self.fenced = 0

    def start(self) -> None:
        self._thread.start()

    def offer(self, events: Sequence[WireEvent], fence: Callable[[None], object] | None = None) -> int:
        """Buffer what fits of `events` (the first ones); count the rest as dropped. Returns how
        many were buffered. `fence`: raises when they may no longer be sent (asked before each
        bundle)."""
        with self._cond:
            room = len(events) if self._block else self._capacity - len(self._buffer)
            taken = len(events) if len(events) <= room else max(room, 0)
            self._buffer.extend(events if taken == len(events) else events[:taken])
            if taken:
                if self._fences and self._fences[-1][0] is fence:
                    self._fences[-1][1] += taken
                else:
                    self._fences.append([fence, taken])
            self._cond.notify()
            lost = len(events) - max(room, 0)
            if lost > 0:
                self.dropped += lost
                now = time.monotonic()
                if now - self._last_overflow_log >= _OVERFLOW_LOG_INTERVAL:
                    self._last_overflow_log = now
                    log.warning(
                        "%s %s: buffer of %s full, %s dropped so far",
                        self.kind,
                        self.name,
                        counted(self._capacity, "event"),
                        counted(self.dropped, "event"),
                    )
            return len(events) - max(lost, 0)

    def room(self, timeout: float) -> bool:
        """Wait up to `timeout` s until the buffer holds fewer than its capacity; whether it does
        (always at once for a sender that drops what does not fit, or one stopping)."""
        if not self._block:
            return True
        with self._cond:
            return self._cond.wait_for(
                lambda: len(self._buffer) < self._capacity or self._stopping, max(0.0, timeout)
            )

    def receivers(self) -> tuple[ReceiverState, ...]:
        """The receivers of the group, in URL order (a snapshot; they change as it sends)."""
        with self._cond:
            return tuple(
                ReceiverState(r.endpoint, r.sent, r.down, r.failures, r.error) for r in self._receivers
            )

    def pending(self) -> int:
        with self._cond:
            return len(self._buffer)

    def wait_empty(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._buffer, timeout)

    def stop(self, timeout: float) -> int:
        """Stop sending (after at most `timeout` s of trying to empty the buffer); return the
        number of events left unsent."""
        self.wait_empty(timeout)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout + 1.0)
        for receiver in self._receivers:
            if receiver.client is not None:
                receiver.client.close()
                receiver.client = None
        with self._cond:
            return len(self._buffer)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._buffer or self._stopping)
                if self._stopping:
                    return
                batch = self._batch()
            if not batch:
                continue
            receiver = self._pick()
            if receiver is None:
                self._pause()
                continue
            self._send(receiver, batch)

    def _batch(self) -> list[WireEvent]:
        """(Under the lock.) The next bundle: events of one fence, after dropping those whose
        fence refuses; its first event keyed when it continues a sender's run."""
        while self._fences:
            fence, count = self._fences[0]
            if fence is None:
                break
            try:
                fence(None)
                break
            except Exception:  # noqa: BLE001 - the fence's verdict: not to be sent by this member
                self._pop(count)
                self.fenced += count
                self._cond.notify_all()
        if not self._buffer:
            return []
        batch = list(islice(self._buffer, min(self._bundle_size, self._fences[0][1])))
        head = batch[0].arbitrary
        if self._next_id is not None and (head is None or FROM_KEY not in head):
            sender, major, minor = self._next_id
            batch[0] = batch[0]._replace(arbitrary=marked(head, sender, major, minor))
        return batch

    def _pop(self, n: int) -> None:
        """(Under the lock.) Drop the oldest `n` events, keeping track of the identity the new
        head continues (from the last keyed event among them)."""
        popped = [self._buffer.popleft() for _ in range(n)]
        while n:
            segment = self._fences[0]
            k = min(n, segment[1])
            segment[1] -= k
            n -= k
            if not segment[1]:
                self._fences.popleft()
        for back, event in enumerate(reversed(popped)):
            data = event.arbitrary
            if data is not None and FROM_KEY in data:
                run = parse_from(data[FROM_KEY])
                self._next_id = None if not run.sender else (run.sender, run.major, run.minor + back + 1)
                return
        if self._next_id is not None:
            sender, major, minor = self._next_id
            self._next_id = (sender, major, minor + len(popped))

    def _pick(self) -> _Receiver | None:
        now = time.monotonic()
        count = len(self._receivers)
        start = 0 if self._failover else self._next
        for i in range(count):
            receiver = self._receivers[(start + i) % count]
            if receiver.down_until <= now:
                if not self._failover:
                    self._next = (start + i + 1) % count
                return receiver
        return None

    def _pause(self) -> None:
        wake = min(r.down_until for r in self._receivers)
        with self._cond:
            self._cond.wait_for(lambda: self._stopping, max(0.0, wake - time.monotonic()))

    def _send(self, receiver: _Receiver, batch: list[WireEvent]) -> None:
        try:
            if receiver.client is None:
                receiver.client = self._open_client(receiver.endpoint)
            receiver.client.publish(batch)
        except (UndefinedEventType, EventEncodingError) as exc:
            self._finish(receiver, len(batch), rejected=exc)
        except RemoteApplicationError as exc:
            self._attempts += 1
            if self._attempts >= _ATTEMPTS_BEFORE_REJECT:
                self._finish(receiver, len(batch), rejected=exc)
            else:
                self._failed(receiver, exc)
        except CEPError as exc:
            self._failed(receiver, exc)
        except Exception as exc:  # a bug in one send must not end delivery for good
            log.exception("%s %s: sending to %s failed", self.kind, self.name, receiver.endpoint.receiver)
            self._failed(receiver, exc)
        else:
            was_down = receiver.down
            self._finish(receiver, len(batch))
            if was_down:
                log.info("%s %s: %s is reachable again", self.kind, self.name, receiver.endpoint.receiver)
            receiver.backoff = 0.0

    def _finish(self, receiver: _Receiver, n: int, rejected: Exception | None = None) -> None:
        with self._cond:
            self._pop(n)
            self._attempts = 0
            if rejected is None:
                self.sent += n
                receiver.sent += n
                receiver.down = False  # before `on_done`: a waiting publisher sees it up
            else:
                self.rejected += n
            self._cond.notify_all()
        if self._on_done is not None:
            self._on_done(n, rejected is None)
        if rejected is not None:
            log.error(
                "%s %s: %s rejected a bundle of %s: %s",
                self.kind,
                self.name,
                receiver.endpoint.receiver,
                counted(n, "event"),
                rejected,
            )

    def _failed(self, receiver: _Receiver, exc: Exception) -> None:
        if receiver.client is not None:
            receiver.client.abandon()
            receiver.client = None
        receiver.backoff = min(self._retry_max, max(self._retry_initial, receiver.backoff * 2))
        receiver.down_until = time.monotonic() + receiver.backoff
        if not receiver.down:
            log.warning(
                "%s %s: %s unavailable (%s); events wait in the buffer, retrying",
                self.kind,
                self.name,
                receiver.endpoint.receiver,
                exc,
            )
        with self._cond:
            receiver.down = True
            receiver.failures += 1
            receiver.error = exc
