"""`Runtime`: a compiled plan, running. The embedding API (docs/architecture.md, "Contracts")."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from engine.errors import CEPError, StateError
from engine.events import Chunk, Event
from engine.runtime import capture as captures
from engine.runtime import state as state_codec
from engine.runtime.capture import Capture, RestoreReport
from engine.runtime.clock import PlaybackClock, Scheduler, WallClock
from engine.runtime.gc_pause import GcPause
from engine.runtime.junction import Junction
from engine.runtime.on_demand import PreparedQuery, QueryPreparer
from engine.runtime.partition import PartitionRuntime
from engine.runtime.parts import OwnerIndex, Part
from engine.types import AttrType, coerce, f32


class Runtime:
    """A running execution plan. Thread-safe: one lock serialises sends and timers."""

    def __init__(
        self,
        *,
        name: str,
        plan_id: str,
        junctions: dict[str, Junction],
        inputs: list[str],
        outputs: list[str],
        scheduler: Scheduler,
        clock: PlaybackClock | WallClock,
        start_time: int | None,
        parts: list[Part],
        starters: list[Callable[[], None]],
        annotations: dict[str, Any] | None = None,
        on_demand: QueryPreparer | None = None,
        partitions: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.plan_id = plan_id
        self._junctions = junctions
        self.input_streams = list(inputs)
        self.output_streams = list(outputs)
        self._scheduler = scheduler
        self._clock = clock
        self._playback = isinstance(clock, PlaybackClock)
        self._start_time = start_time
        self._parts = parts
        self._owners = OwnerIndex(parts)
        self._starters = starters
        self._started = False
        self._lock = threading.RLock()
        self._closed = False
        self.annotations = annotations or {}
        self._on_demand = on_demand
        self._partitions = partitions or {}  # name -> PartitionRuntime (or a fused operator)
        self._float_columns = {
            n: [i for i, t in enumerate(j.types) if t is AttrType.FLOAT] for n, j in junctions.items()
        }
        if not self._playback:
            self._start(clock.now())

    # ---- introspection ------------------------------------------------------------------

    def stream_names(self) -> list[str]:
        return list(self._junctions)

    def attributes(self, stream: str) -> list[tuple[str, AttrType]]:
        j = self._junction(stream)
        return list(zip(j.names, j.types, strict=True))

    def now(self) -> int:
        return self._clock.now()

    @property
    def start_time(self) -> int | None:
        return self._start_time if self._started else None

    def _junction(self, stream: str) -> Junction:
        j = self._junctions.get(stream)
        if j is None:
            msg = f"stream '{stream}' is not defined in plan '{self.name}'"
            raise CEPError(msg)
        return j

    # ---- subscription and input ------------------------------------------------------

    def subscribe(self, stream: str, fn: Callable[[list[Event]], None]) -> None:
        """Call `fn(events)` with every chunk of events emitted into `stream`."""
        self._junction(stream).subscribers.append(fn)

    def subscribe_chunks(self, stream: str, fn: Callable[[str, Chunk], None]) -> None:
        """Lower-level: `fn(stream, chunk)` with the engine's own chunks (kinds included)."""
        self._junction(stream).raw_subscribers.append(fn)

    def check_row(self, stream: str, data: Sequence[Any]) -> tuple[Any, ...]:
        """Validate and convert one row for `stream`; raises TypeError/ValueError naming the
        stream and the attribute."""
        j = self._junction(stream)
        if len(data) != len(j.types):
            n, m = len(j.types), len(data)
            msg = f"stream '{stream}' has {n} attribute{'' if n == 1 else 's'}, got {m} value{'' if m == 1 else 's'}"
            raise ValueError(msg)
        out = []
        for name, kind, value in zip(j.names, j.types, data, strict=True):
            try:
                out.append(coerce(value, kind))
            except (TypeError, ValueError) as exc:
                msg = f"stream '{stream}': attribute '{name}': {exc}"
                raise type(exc)(msg) from None
        return tuple(out)

    def send(
        self,
        stream: str,
        rows: Sequence[Sequence[Any]],
        timestamps: Sequence[int] | int | None = None,
    ) -> None:
        """Send a chunk of rows (tuples in attribute order) into `stream`. The engine takes
        the lists as they are, without copying: don't change them after the call."""
        if not rows:
            return
        j = self._junction(stream)
        n = len(rows)
        with self._lock, GcPause():
            if self._closed:
                msg = f"plan '{self.name}' has been shut down"
                raise CEPError(msg)
            if timestamps is None:
                ts = [self._clock.now()] * n
                uniform = True
            elif isinstance(timestamps, int):
                ts = [timestamps] * n
                uniform = True
            else:
                ts = timestamps if isinstance(timestamps, list) else list(timestamps)
                if len(ts) != n:
                    msg = f"{len(ts)} timestamps for {n} rows"
                    raise ValueError(msg)
                uniform = ts[0] == ts[-1] and ts.count(ts[0]) == n
            if self._playback:
                assert isinstance(self._clock, PlaybackClock)
                if not self._started:
                    self._start(ts[0] if self._start_time is None else self._start_time)
                if uniform:
                    self._scheduler.floor = ts[0]
                else:
                    self._scheduler.floor_of(ts)
                self._pass_time(ts[0], ts[-1])
            else:
                self._scheduler.fire_until(self._clock.now())
            data = (
                rows
                if isinstance(rows, list) and (not rows or isinstance(rows[0], tuple))
                else [tuple(r) for r in rows]
            )
            floats = self._float_columns.get(stream)
            if floats:
                data = _round_floats(data, floats)
            j.publish(Chunk(ts, data, uniform=uniform))

    def send_chunks(
        self,
        stream: str,
        chunks: Sequence[tuple[int, list[tuple[Any, ...]]]],
        before: Callable[[int], None] | None = None,
    ) -> None:
        """Playback: send each `(timestamp, rows)` of `chunks` in turn, exactly as one
        `send(stream, rows, timestamps=timestamp)` per chunk would (the same clock, timers
        fired before each chunk, chunks as subscribers see them), but under one lock hold
        and one collector pause: a replay of many one-event chunks pays that entry once.
        `rows` are tuples in attribute order, taken as they are. `before(i)`, if given, is
        called just before chunk `i` goes in (an empty chunk is skipped, as `send` skips
        it). With a wall clock, this is `send` per chunk."""
        if not self._playback:
            for i, (t, rows) in enumerate(chunks):
                if rows:
                    if before is not None:
                        before(i)
                    self.send(stream, rows, timestamps=t)
            return
        j = self._junction(stream)
        floats = self._float_columns.get(stream)
        scheduler, publish, pass_time = self._scheduler, j.publish, self._pass_time
        with self._lock, GcPause():
            for i, (t, rows) in enumerate(chunks):
                if not rows:
                    continue
                if before is not None:
                    before(i)
                if self._closed:
                    msg = f"plan '{self.name}' has been shut down"
                    raise CEPError(msg)
                if not self._started:
                    self._start(t if self._start_time is None else self._start_time)
                scheduler.floor = t
                pass_time(t, t)
                data = (
                    rows
                    if isinstance(rows, list) and isinstance(rows[0], tuple)
                    else [tuple(r) for r in rows]
                )
                if floats:
                    data = _round_floats(data, floats)
                publish(Chunk([t] * len(data), data, uniform=True))

    def advance_to(self, t: int) -> None:
        """Playback: move the clock to `t` and fire every timer due by then."""
        with self._lock, GcPause():
            if self._playback:
                assert isinstance(self._clock, PlaybackClock)
                if not self._started:
                    self._start(t if self._start_time is None else self._start_time)
                self._scheduler.floor = max(t, self._clock.now())
                self._pass_time(t, t)
            else:
                self._scheduler.floor = self._clock.now()
                self._scheduler.fire_until(self._clock.now())

    def _pass_time(self, first: int, last: int) -> None:
        """Playback: move the clock to `last`. A timer due by `first` (the chunk's first
        event) fires with the clock at its due time, as a Siddhi timer fires at that moment
        of real time before the event arrives: a time window expires each event when its
        second is up, not all of them at once. Timers due later fire at `last`, reading the
        scheduler's floor."""
        clock, scheduler = self._clock, self._scheduler
        assert isinstance(clock, PlaybackClock)
        due = scheduler.next_due()
        while due is not None and due <= first:
            clock.observe(due)
            scheduler.fire_until(clock.now())
            due = scheduler.next_due()
        clock.observe(last)
        scheduler.fire_until(clock.now())

    def tick(self) -> int | None:
        """Wall clock: fire due timers now; returns the next due time (ms) or None. A runtime
        shut down (or handed over) raises `CEPError`, as `send` does."""
        with self._lock, GcPause():
            if self._closed:
                msg = f"plan '{self.name}' has been shut down"
                raise CEPError(msg)
            self._scheduler.floor = self._clock.now()
            self._scheduler.fire_until(self._clock.now())
            return self._scheduler.next_due()

    def next_timer(self) -> int | None:
        return self._scheduler.next_due()

    def _start(self, t: int) -> None:
        self._start_time = t
        if isinstance(self._clock, PlaybackClock):
            self._clock.observe(t)
        self._started = True
        for start in self._starters:
            start()

    # ---- on-demand queries ---------------------------------------------------------------

    def query(self, text: str) -> list[Event]:
        """Run an on-demand query (Siddhi's `runtime.query`) against the current tables and
        named windows: a read returns its rows as events, a change (insert, delete, update,
        update or insert) returns none. Raises QueryError positioned in `text`."""
        return self.run_query(self.prepare_query(text))

    def prepare_query(self, text: str) -> PreparedQuery:
        """Parse and compile an on-demand query without running it (no lock taken): its
        `columns`, and whether it `changes` a table, are known before it runs."""
        if self._on_demand is None:
            msg = f"plan '{self.name}' takes no on-demand queries"
            raise CEPError(msg)
        return self._on_demand.prepare(text)

    def run_query(self, prepared: PreparedQuery) -> list[Event]:
        """Run a query this runtime prepared, under the lock that serialises sends, timers
        and snapshots: it sees, and changes, the tables between two chunks."""
        if self._on_demand is None or prepared.origin is not self._on_demand:
            msg = f"the query was not prepared by plan '{self.name}'"
            raise CEPError(msg)
        with self._lock:
            if self._closed:
                msg = f"plan '{self.name}' has been shut down"
                raise CEPError(msg)
            pairs = prepared.run()
        return [Event(t, r) for t, r in pairs]

    # ---- state ---------------------------------------------------------------------------

    def capture(self) -> Capture:
        """A consistent copy of every part's state and timers, taken under the lock; it
        shares only immutable rows with the runtime. Encode it outside: `capture().encode()`."""
        with self._lock, GcPause():
            clock = {
                "now": self._clock.now() if self._playback else None,
                "started": self._started,
                "start": self._start_time,
            }
            states = [(part, part.snapshot()) for part in self._parts]
            return Capture(self.name, clock, states, self._scheduler.pending(), self._owners)

    def snapshot(self) -> bytes:
        """Every part's state, versioned and checksummed: `capture().encode()`."""
        return self.capture().encode()

    def restore(self, blob: bytes, *, partial: bool = False) -> RestoreReport:
        """Load a snapshot of this plan. Each part (query, partition, table, named window,
        trigger) is found by its key: a query's `@info(name)`, else its own text.
        Without `partial`, every part must fit (same text and schemas, comments and
        whitespace aside), else StateError names the first that does not. With
        `partial=True` the parts that fit are restored with their timers, the others keep
        what they have (nothing, in a just-compiled runtime) and start with the restored
        clock (`fresh`), and parts of the snapshot that no longer fit are reported
        (`unfit`). Returns what went where. A snapshot of a plan of another name is refused,
        unless `partial`: parts are matched by key and checked by text and schema, so a
        plan renamed (`@app:name`) keeps the state of its unchanged parts."""
        with GcPause():  # a restore makes millions of acyclic objects: collecting midway frees nothing
            return self._restore(blob, partial)

    def _restore(self, blob: bytes, partial: bool) -> RestoreReport:
        clock, saved, annex = captures.read(blob, None if partial else self.name)
        chosen, report = captures.match(self._parts, saved, partial)
        report.annex = annex
        with self._lock:
            before = self.capture()
            try:
                self._apply(clock, chosen, partial)
            except Exception as exc:  # all or nothing: what was there before comes back
                self._roll_back(before)
                if isinstance(exc, StateError):
                    raise
                msg = f"snapshot cannot be read: {type(exc).__name__}: {exc}"
                raise StateError(msg) from exc
        return report

    def _apply(self, clock: dict[str, Any], chosen: list[tuple[Part, dict[str, Any]]], partial: bool) -> None:
        restored = {id(part) for part, _ in chosen}
        if partial:
            self._scheduler.discard(lambda owner: id(self._owners.part_of(owner)) in restored)
        else:
            self._scheduler.clear()
        if self._playback and clock["now"] is not None:
            assert isinstance(self._clock, PlaybackClock)
            self._clock.current = clock["now"]
        was_started = self._started
        self._start_time = clock["start"]
        self._started = clock["started"]
        timers: list[tuple[int, int, str]] = []
        for part, entry in chosen:
            try:
                part.restore(entry["state"])
                owners = part.owners
                timers += [(due, rank, owners.absolute(rel)) for due, rank, rel in entry["timers"]]
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                msg = f"snapshot part {part.spec.label} cannot be read: {type(exc).__name__}: {exc}"
                raise StateError(msg) from exc
        if not partial:
            timers += [(due, rank, owner) for due, rank, owner in clock["timers"]]
        self._scheduler.restore([[due, owner] for due, _, owner in sorted(timers)])
        if self._started and not was_started:
            for part in self._parts:
                if id(part) not in restored:
                    for start in part.starters:
                        start()

    # ---- one partition key ----------------------------------------------------------------

    def partitions(self) -> dict[str, list[str]]:
        """The plan's partitions (`partition1`, ... in plan order) and the streams each keys."""
        return {
            name: list(p.routers) if isinstance(p, PartitionRuntime) else list(getattr(p, "streams", []))
            for name, p in self._partitions.items()
        }

    def _keyed(self, partition: str) -> PartitionRuntime:
        p = self._partitions.get(partition)
        if p is None:
            known = ", ".join(self._partitions) or "none"
            msg = f"plan '{self.name}' has no partition '{partition}' (its partitions: {known})"
            raise CEPError(msg)
        if not isinstance(p, PartitionRuntime):
            msg = (
                f"partition '{partition}' of plan '{self.name}' runs as one fused keyed operator, "
                "whose state is not kept per key; compile with fuse_partitions=False"
            )
            raise StateError(msg)
        return p

    def partition_key_function(
        self, partition: str, stream: str
    ) -> Callable[[tuple[Any, ...], int], list[Any]] | None:
        """`fn(row, timestamp)`: the keys of `partition` a row of `stream` goes to (a value
        key gives one, or none for a null value; a range partition every range that holds);
        None if the partition does not key `stream`. The function holds no state of the
        runtime: call it anywhere, with rows as `check_row` returns them."""
        return self._keyed(partition).key_function(stream)

    def partition_keys_function(
        self, partition: str, stream: str
    ) -> Callable[[list[tuple[Any, ...]], list[int]], list[list[Any]]] | None:
        """`partition_key_function` for a batch: `fn(rows, timestamps)`, each row's keys."""
        return self._keyed(partition).keys_function(stream)

    def partition_keys(self, partition: str) -> list[Any]:
        with self._lock:
            return self._keyed(partition).keys()

    def snapshot_key(self, partition: str, key: Any) -> bytes | None:
        """The state of one key of `partition` (its inner queries and its timers), encoded
        like a snapshot, with the clock's time; None if the key has no instance."""
        with self._lock, GcPause():
            state = self._keyed(partition).snapshot_key(key)
            if state is None:
                return None
            tree = {"partition": partition, "key": key, "now": self._clock.now(), "state": state}
        return state_codec.encode(tree, self.name)

    def restore_key(self, blob: bytes) -> Any:
        """Put back one key's state taken by `snapshot_key` (of a runtime of the same plan),
        replacing what the key had here; returns the key. In playback, the clock moves to
        the key's time, backwards too: a runtime that hosts keys in turn (as a Spark task
        does) runs each from where that key was."""
        tree = state_codec.decode(blob, self.name)
        if not isinstance(tree, dict) or not all(k in tree for k in ("partition", "key", "now", "state")):
            msg = "blob does not hold one partition key's state (take it with snapshot_key)"
            raise StateError(msg)
        key = tuple(tree["key"]) if isinstance(tree["key"], list) else tree["key"]
        with self._lock, GcPause():
            keyed = self._keyed(tree["partition"])
            try:
                keyed.restore_key(key, tree["state"])
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                keyed.drop_key(key)
                msg = f"state of key {key!r} of partition '{tree['partition']}' cannot be read: {exc}"
                raise StateError(msg) from exc
            if self._playback and tree["now"] is not None:
                assert isinstance(self._clock, PlaybackClock)
                self._clock.current = tree["now"]
        return key

    def drop_key(self, partition: str, key: Any) -> bool:
        """Forget one key's instance and timers (after its state went elsewhere); False if
        the key had none."""
        with self._lock:
            return self._keyed(partition).drop_key(key)

    def _roll_back(self, before: Capture) -> None:
        """Put back the state `before` (taken under the same lock hold): every part, the
        timers and the clock, as they were."""
        clock = before.clock
        for part, state in before.states:
            part.restore(state)
        self._scheduler.clear()
        self._scheduler.restore([[due, owner] for due, _, owner in sorted(before.timers)])
        if self._playback and clock["now"] is not None:
            assert isinstance(self._clock, PlaybackClock)
            self._clock.current = clock["now"]
        self._start_time = clock["start"]
        self._started = clock["started"]

    def hand_over(self, to: Runtime, switch: Callable[[], None]) -> RestoreReport:
        """Move this runtime's state into `to` (a runtime of the same or an edited plan, not
        yet fed) and shut this one down, with no event or timer in between: under this
        runtime's lock, capture, restore into `to` (partially: what no longer fits starts
        empty), call `switch()` (the caller points new sends at `to`), shut down. A send that
        waited for the lock then finds this runtime shut down and can go to `to`."""
        with self._lock:
            report = to.restore(self.capture().encode(), partial=True)
            switch()
            self._closed = True
            self._scheduler.clear()
        return report

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            self._scheduler.clear()


def _round_floats(rows: list[tuple[Any, ...]], columns: list[int]) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        row = list(r)
        for i in columns:
            v = row[i]
            if v is not None:
                row[i] = f32(v)
        out.append(tuple(row))
    return out
