"""`Ingress`: events of a registered stream (`name:version`) into every plan that imports it.

Receivers (Thrift, HTTP) and plans that export a stream other plans import all deliver here.
Each call runs the plans synchronously in the caller's thread, so when `publish` returns the
events have passed through every plan and their results sit in the output adapters' buffers:
that is what a receiver acknowledges. Routes are an immutable mapping swapped whole on
redeploy, so the hot path takes no lock of its own. A plan with a journal (persistence mode
with the input log on) gets the events through it: logged, then processed, and durable as
its fsync policy says before the call returns; when the log refuses them (full, or a disk
error), `InputLogError` propagates and the receiver does not acknowledge the bundle (a full
log, `InputLogFull`, and a disk that does not take the record, `DiskFault`, are `Busy`: the
client sends the bundle again; the input log logs a disk fault once per interval, and the
refusals here are logged at most once per `REFUSALS_LOGGED_SECONDS`). A standby
of a redundant plan relays the events to the plan's notifier and returns once it took them;
with no notifier to take them, `NotLeading` refuses the bundle the same way.

Backpressure: before any plan takes a bundle from a receiver, `room` (the output adapters')
is asked to wait, at most `full_wait` seconds, until every adapter the bundle's plans feed,
directly or through plans importing their exports, is below its bound, and so are the held
outputs of its redundant plans (`Gate`), all of it worked out once per routes; when one is
still full, `OutputsFull` refuses the bundle (retryable: the receiver does not acknowledge it
and its client sends it again). Admitted bundles' outputs are always taken, so an adapter that
blocks never loses what a client saw acknowledged.

Senders that name their events (`adapters.senders`: Cepheus' publisher, a Cepheus node's
wso2event adapter, an HTTP client with `Cepheus-From`) are taken once per plan: a plan with a
journal leaves out, under its lock, the events at or before its mark for their sender (the
marks go with its log and snapshots); a plan without one keeps its marks here, in memory.

The counts (`stats`): events received per stream, and per plan how long the bundles from
receivers took in its send (a `LatencyHistogram`); one acquisition of the statistics lock per
bundle covers them all. A plan fed by another plan's export is timed inside that plan's send.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Protocol

from adapters.senders import Runs, SenderMarks, runs_of, select
from adapters.thrift import Column, WireEvent, WireEvents
from adapters.throttle import Throttle
from adapters.wording import counted
from app.node.errors import OutputsFull
from app.node.latency import Latency, LatencyHistogram
from app.node.tracer import Tracer
from app.persistence.errors import DiskFault, InputLogError
from app.persistence.journal import BundleFailed, NotLeading, PlanJournal, wall_ms

log = logging.getLogger(__name__)

GATE_POLL_SECONDS = 0.05  # how often a bundle waiting for room looks at a plan's held outputs
REFUSALS_LOGGED_SECONDS = 10.0  # a client resends a refused bundle at once: one line per interval

Row = tuple[Any, ...]


class PlanInput(Protocol):
    """What takes a plan's input: its `engine.Runtime`, or a Spark plan's hand-off."""

    def send(self, stream: str, rows: list[Row], timestamps: list[int] | int) -> None: ...


class Gate(Protocol):
    def has_room(self) -> bool:
        """Whether the plan's held outputs leave room for more input."""
        ...


@dataclass(frozen=True)
class Binding:
    """One plan's input stream fed from a registered stream."""

    stream_id: str  # the registered stream, name:version
    plan: str
    runtime: PlanInput
    stream: str  # the stream's name inside the plan
    journal: PlanJournal | None = None  # the plan's input log and clock, in persistence mode
    exports: tuple[str, ...] = ()  # the registered streams the plan exports
    gate: Gate | None = None  # a redundant plan's held outputs (`app.cluster.gate.LockedGate`)


@dataclass
class IngressStats:
    received: dict[str, int] = field(default_factory=dict)  # per stream id
    unrouted: dict[str, int] = field(default_factory=dict)  # of streams no deployed plan imports
    failed: int = 0  # events whose plan raised while processing them
    latency: dict[str, Latency] = field(default_factory=dict)  # per plan: bundles from receivers
    pushed_back: int = 0  # events refused because an output adapter they feed was full


_Admission = tuple[frozenset[str], tuple[tuple[str, Gate], ...]]  # streams fed, plans' held outputs


def _full_gate(gates: Sequence[tuple[str, Gate]], deadline: float) -> str | None:
    """Wait until `deadline` for every gate to have room (a gate drains as the notifier reports
    outputs written); None, or which is still full."""
    for plan, gate in gates:
        while not gate.has_room():
            if time.monotonic() >= deadline:
                return f"the held outputs of plan {plan!r}"
            time.sleep(GATE_POLL_SECONDS)
    return None


class Room(Protocol):
    """Waits up to `timeout` s until every output adapter fed by `streams` has room; None when
    they all do, else the name of one still full."""

    def __call__(self, streams: frozenset[str], timeout: float, /) -> str | None: ...


class Ingress:
    def __init__(
        self, now: Callable[[], int] = wall_ms, room: Room | None = None, full_wait: float = 2.0
    ) -> None:
        """`room`: the output adapters' (None: nothing pushes back); `full_wait`: how long a
        bundle waits for it before it is refused."""
        self._routes: Mapping[str, tuple[Binding, ...]] = {}
        # the routes and, per received stream or plan, what a bundle waits for (swapped together)
        self._reach: tuple[Mapping[str, tuple[Binding, ...]], dict[object, _Admission]] = ({}, {})
        self._room = room
        self._full_wait = full_wait
        self._now = now
        self._stats_lock = threading.Lock()
        self._stats = IngressStats()
        self._latency: dict[str, LatencyHistogram] = {}  # per plan, under the statistics lock
        self._marks: dict[str, tuple[threading.Lock, SenderMarks]] = {}  # plans without a journal
        self._marks_lock = threading.Lock()
        self._refusals = Throttle(REFUSALS_LOGGED_SECONDS)
        self.tracer = Tracer()

    def set_routes(self, routes: Mapping[str, tuple[Binding, ...]]) -> None:
        self._routes = dict(routes)
        self._reach = (self._routes, {})

    def routes(self) -> Mapping[str, tuple[Binding, ...]]:
        return self._routes

    def _admission(self, key: object, plans: tuple[Binding, ...]) -> _Admission:
        """What a bundle for `plans` waits for (cached under `key` until the routes change): the
        streams they export and, in turn, those the plans importing them export; and the held
        outputs of those of `plans` that are redundant."""
        routes, cache = self._reach
        admission = cache.get(key)
        if admission is None:
            todo = [s for b in plans for s in b.exports]
            found = set(todo)
            gates = {b.plan: b.gate for b in plans if b.gate is not None}
            while todo:
                for binding in routes.get(todo.pop(), ()):
                    fresh = [s for s in binding.exports if s not in found]
                    found.update(fresh)
                    todo.extend(fresh)
            admission = cache[key] = (frozenset(found), tuple(gates.items()))
        return admission

    def _admit(self, admission: _Admission, received: str, events: int) -> None:
        """Wait for room in the outputs and held outputs of `admission`; `OutputsFull` when
        one is still full after `full_wait`."""
        if self._room is None:
            return
        streams, gates = admission
        deadline = time.monotonic() + self._full_wait
        adapter = self._room(streams, self._full_wait) if streams else None
        full = f"output adapter {adapter!r}" if adapter is not None else _full_gate(gates, deadline)
        if full is not None:
            with self._stats_lock:
                self._stats.pushed_back += events
            raise OutputsFull(full, received, self._full_wait)

    def admit_plan(self, plan: str, events: int) -> None:
        """Wait for room in what plan `plan` feeds (a bundle a standby relayed to it);
        `OutputsFull` when there is none."""
        routes, cache = self._reach
        admission = cache.get(("plan", plan))
        if admission is None:
            binding = next((b for bs in routes.values() for b in bs if b.plan == plan), None)
            admission = self._admission(("plan", plan), () if binding is None else (binding,))
        self._admit(admission, plan, events)

    def publish_wire(self, events: Sequence[WireEvent]) -> None:
        """One Thrift bundle: meta, correlation and payload values flatten into plan rows."""
        if not events:
            return
        first = events[0].stream_id
        if isinstance(events, WireEvents):
            self._publish_wire_columns(first, events)
            return
        if all(e.stream_id == first for e in events):
            self._publish_wire_group(first, events)
            return
        groups: dict[str, list[WireEvent]] = {}
        for e in events:
            groups.setdefault(e.stream_id, []).append(e)
        for stream_id, group in groups.items():  # (Cepheus' senders send one stream per bundle)
            self._publish_wire_group(stream_id, group)

    def _publish_wire_group(
        self, stream_id: str, events: Sequence[WireEvent], routed: tuple[Binding, ...] | None = None
    ) -> None:
        """`IdentityError` when an event's sender identity cannot be read."""
        bindings = self._routes.get(stream_id, ()) if routed is None else routed
        if not bindings:
            self._tally(stream_id, len(events))
            return
        sample = events[0]
        if sample.meta is None and sample.correlation is None:
            rows: list[Row] = [e.payload or () for e in events]
        else:
            rows = [(e.meta or ()) + (e.correlation or ()) + (e.payload or ()) for e in events]
        now = self._now()
        timestamps = [e.timestamp or now for e in events]
        senders = () if sample.arbitrary is None else runs_of([e.arbitrary for e in events])
        self._send(bindings, rows, timestamps, received=stream_id, senders=senders)

    def _publish_wire_columns(self, stream_id: str, events: WireEvents) -> None:
        """A bundle of one stream decoded by columns: rows and timestamps from its columns,
        which go on to the input logs as they are."""
        bindings = self._routes.get(stream_id, ())
        if not bindings:
            self._tally(stream_id, len(events))
            return
        columns = events.columns
        if columns is None:
            self._publish_wire_group(stream_id, events, bindings)
            return
        rows: list[Row] = (
            list(zip(*[values for _, values in columns], strict=True)) if columns else [()] * len(events)
        )
        stamps = events.timestamps
        if 0 in stamps:
            now = self._now()
            timestamps = [t or now for t in stamps]
        else:
            timestamps = list(stamps)
        first = events[0].arbitrary
        senders = () if first is None else runs_of([e.arbitrary for e in events])
        self._send(bindings, rows, timestamps, columns, received=stream_id, senders=senders)

    def publish_rows(
        self, stream_id: str, rows: list[Row], timestamps: list[int] | None = None, senders: Runs = ()
    ) -> None:
        """Rows already in the stream's flattened attribute order (HTTP, plan chaining)."""
        bindings = self._routes.get(stream_id, ())
        if not bindings:
            self._tally(stream_id, len(rows))
            return
        now = timestamps if timestamps is not None else self._now()
        self._send(bindings, rows, now, received=stream_id, senders=senders)

    def forward(
        self, stream_id: str, rows: list[Row], timestamps: list[int], source: str, senders: Runs = ()
    ) -> None:
        """Output of plan `source` into the other plans importing the same stream (`senders`: the
        outputs' origins, from a redundant plan's link: `app.node.links`)."""
        bindings = tuple(b for b in self._routes.get(stream_id, ()) if b.plan != source)
        if bindings:
            self._send(bindings, rows, timestamps, senders=senders)

    def _send_marked(
        self, binding: Binding, rows: list[Row], timestamps: list[int] | int, senders: Runs
    ) -> None:
        """A plan without a journal: only the events past its marks (kept here) go in."""
        with self._marks_lock:
            lock, marks = self._marks.get(binding.plan) or self._marks.setdefault(
                binding.plan, (threading.Lock(), SenderMarks())
            )
        with lock:
            keep, kept = marks.fresh(senders, len(rows))
            if keep is not None:
                if not keep:
                    return
                rows = select(rows, keep)
                if not isinstance(timestamps, int):
                    timestamps = select(timestamps, keep)
            try:
                binding.runtime.send(binding.stream, rows, timestamps)
            finally:  # failed or not, it was taken: the client is acknowledged
                marks.advance(kept)

    def _redeployed(self, binding: Binding) -> Binding | None:
        for current in self._routes.get(binding.stream_id, ()):
            if current.plan == binding.plan and current.runtime is not binding.runtime:
                return current
        return None

    def stats(self) -> IngressStats:
        with self._stats_lock:
            s = self._stats
            latency = {plan: h.copy() for plan, h in self._latency.items()}
            return IngressStats(dict(s.received), dict(s.unrouted), s.failed, latency, s.pushed_back)

    def _tally(
        self,
        stream_id: str | None,
        n: int,
        failed: int = 0,
        timed: Sequence[tuple[str, float]] = (),
        routed: bool = False,
    ) -> None:
        """Count a bundle of `n` events received on `stream_id` (None: forwarded by a plan),
        routed to plans or not, `failed` of them, and the time each plan took: one lock hold."""
        with self._stats_lock:
            s = self._stats
            if stream_id is not None:
                s.received[stream_id] = s.received.get(stream_id, 0) + n
                if not routed:
                    s.unrouted[stream_id] = s.unrouted.get(stream_id, 0) + n
            s.failed += failed
            for plan, seconds in timed:
                histogram = self._latency.get(plan)
                if histogram is None:
                    histogram = self._latency[plan] = LatencyHistogram()
                histogram.observe(seconds)

    def _send(
        self,
        bindings: tuple[Binding, ...],
        rows: list[Row],
        timestamps: list[int] | int,
        columns: tuple[Column, ...] | None = None,
        received: str | None = None,
        senders: Runs = (),
    ) -> None:
        """Run `rows` through every plan of `bindings` (`senders`: who sent them). `received`: the stream they were
        received on, counted with the time each plan took; None (forwarded by a plan, or a
        redeployed plan's retry): untimed, and the statistics lock is taken only on a failure."""
        if received is not None:
            self._admit(self._admission(received, bindings), received, len(rows))
            self.tracer.record(received, rows, timestamps)
        logged: list[tuple[PlanJournal, int, str]] = []  # where each plan's journal took it, on which stream
        refused: InputLogError | NotLeading | None = None
        failed = 0
        timed: list[tuple[str, float]] = []
        try:
            if len(bindings) > 1:  # one plan's full log refuses the bundle before any plan takes it
                for binding in bindings:
                    if binding.journal is not None:
                        try:
                            binding.journal.check_room(len(rows))
                        except InputLogError as exc:
                            self._refused(binding.plan, len(rows), exc)
                            raise
            for binding in bindings:
                started = perf_counter()
                try:
                    failed += self._send_one(binding, rows, timestamps, columns, logged, senders)
                except (InputLogError, NotLeading) as exc:  # not logged, so not processed: refuse the bundle
                    refused = exc
                    self._refused(binding.plan, len(rows), exc)
                if received is not None:
                    timed.append((binding.plan, perf_counter() - started))
            for journal, position, _ in logged:
                journal.durable(position)
        finally:
            if received is not None or failed:
                self._tally(received, len(rows), failed, timed, routed=True)
        if refused is not None:
            raise refused
        for journal, position, stream in logged:  # its client is told it was taken
            journal.answered(position, stream, rows, timestamps, senders)

    def _refused(self, plan: str, events: int, exc: Exception) -> None:
        """Log a refused bundle: at most once per interval, saying how many were not shown (its
        client sends it again at once, maybe many times a second); a disk fault's own line is
        the input log's."""
        if isinstance(exc, DiskFault):
            log.debug("plan %s refused %s: %s", plan, counted(events, "event"), exc)
            return
        allowed, held = self._refusals.allow()
        if allowed:
            log.error(
                "plan %s refused %s: %s%s",
                plan, counted(events, "event"), exc, f" ({held} similar refusals not shown)" if held else "",
            )  # fmt: skip

    def _send_one(
        self,
        binding: Binding,
        rows: list[Row],
        timestamps: list[int] | int,
        columns: tuple[Column, ...] | None,
        logged: list[tuple[PlanJournal, int, str]],
        senders: Runs = (),
    ) -> int:
        """Run `rows` through one plan; how many of them failed in it. `InputLogError` and
        `NotLeading` (not logged, so not processed) propagate."""
        journal = binding.journal
        try:
            if journal is not None:
                position = journal.send(binding.stream, rows, timestamps, columns, senders=senders)
                logged.append((journal, position, binding.stream))
            elif senders:
                self._send_marked(binding, rows, timestamps, senders)
            else:
                binding.runtime.send(binding.stream, rows, timestamps)
        except (InputLogError, NotLeading):
            raise
        except BundleFailed as exc:  # logged, and failed as a replay will: durable all the same
            assert journal is not None
            logged.append((journal, exc.position, binding.stream))
            log.error(
                "plan %s failed on %s of %s: %s",
                binding.plan,
                counted(len(rows), "event"),
                binding.stream,
                exc,
            )
            return len(rows)
        except Exception:
            replacement = None if journal is not None else self._redeployed(binding)
            if replacement is not None:  # (a journal hands a bundle to the new runtime itself)
                # the plan was redeployed while these events were on their way: the new runtime takes them
                self._send((replacement,), rows, timestamps)
                return 0
            # one plan's failure must not stop the others or the receiver
            log.exception(
                "plan %s failed on %s of %s", binding.plan, counted(len(rows), "event"), binding.stream
            )
            return len(rows)
        return 0
