"""`PlanJournal`: a persistence-mode plan's input, logged before it is processed, and its clock.

With `[persistence] input_log` on, a plan with a snapshot interval runs on a logged clock:
every bundle is appended to the plan's input log (`app.persistence`) together with the time
the plan's clock reads when it processes it (`Events.at`), and every firing of due timers is a
`Tick` record of its own. The journal's lock orders appends and processing, so the log holds
the records in the order the runtime saw them. Replaying the log after a snapshot's position
into the restored runtime therefore does exactly what the dead process did: same clock
readings, same timers, same outputs, in the same order.

Outputs carry their provenance: output `index` of those the record at `position` of log
`log_id` caused on one output stream (`origin`). A replay regenerates the same provenance, so
an adapter that records what it wrote (RDBMS) skips what it already has.

The clock never goes back: it reads the wall clock but never less than its last reading, so a
wall clock stepped back (NTP) stalls the plan's time instead of reversing it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.output.throttle import Throttle
from app.persistence.input_log import Events, InputLog, Tick
from app.persistence.records import Column, stamped
from engine import Runtime
from engine.errors import CEPError

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 5.0
ROOM_PER_EVENT = 4096  # bytes a bundle's record is assumed to need per event, at most
ROOM_PER_BUNDLE = 64 * 1024


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class LoggedClock:
    """The `wall_time` of a journaled plan's runtime: reads what the journal last set."""

    __slots__ = ("now",)

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@dataclass(frozen=True, slots=True)
class Provenance:
    """Outputs `index`, `index + 1`, ... on one stream of the record at `position` of log `log_id`."""

    log_id: str
    position: int
    index: int


class PlanJournal:
    """The input log and clock of one plan; its `runtime` is set (and switched on redeploy) by
    the plan manager. Thread-safe."""

    def __init__(self, plan: str, input_log: InputLog, wall: Callable[[], int] = wall_ms) -> None:
        self.plan = plan
        self._log = input_log
        self._wall = wall
        self.lock = threading.Lock()
        self.log_id = input_log.log_id(plan)
        self.runtime: Runtime | None = None
        self.replaying = False
        self._emitted: dict[str, int] = {}  # per output stream: outputs of `_emitted_at` so far
        self._emitted_at = 0
        self._failures = Throttle(10.0)
        first, last = input_log.bounds(plan)
        self.position = last  # the newest record appended (and processed)
        self.clock = LoggedClock(self._first_time(first, last))

    def _first_time(self, first: int, last: int) -> int:
        """The time the plan started at: a new log begins with a `Tick` of it, so that a replay
        of the whole log starts the plan's clock (and its triggers' phase) where it started."""
        if first == 1 and last >= 1:
            for _, record in self._log.read(self.plan, 0):
                return record.time_ms if isinstance(record, Tick) else record.at
        now = self._wall()
        if last == 0:
            self.position = self._log.append(self.plan, Tick(now))
        return now

    # ---- live ----------------------------------------------------------------------------

    def send(
        self,
        stream: str,
        rows: list[tuple[Any, ...]],
        timestamps: Sequence[int] | int,
        columns: tuple[Column, ...] | None = None,
    ) -> int:
        """Log, then process, a bundle; its position. Call `durable(position)` before
        acknowledging it. An error of the plan propagates after the bundle is logged (a replay
        meets the same error at the same point). `columns`: the rows by attribute with their
        types, when the receiver has them (see `Events`). The bundle is encoded before the
        lock is taken (only the clock reading is filled in under it), so that other
        receivers' bundles for the plan wait for the append, not for the encoding."""
        ts = [timestamps] * len(rows) if isinstance(timestamps, int) else list(timestamps)
        payload = self._log.encode(self.plan, Events(stream, ts, rows, 0, columns))
        with self.lock:
            at = max(self.clock.now, self._wall())
            position = self._log.append(self.plan, stamped(payload, at), wait=False)
            self.clock.now = at
            self.position = position
            self._process(lambda runtime: runtime.send(stream, rows, ts))
        return position

    def tick(self) -> int | None:
        """Fire the timers due by now, as a logged `Tick`; the next due time (ms) or None."""
        with self.lock:
            runtime = self._runtime()
            due = runtime.next_timer()
            if due is None:
                return None
            now = max(self.clock.now, self._wall())
            if due > now:
                return due
            position = self._log.append(self.plan, Tick(now))
            self.clock.now = now
            self.position = position
            self._process(lambda r: r.tick())
            return self._runtime().next_timer()

    def check_room(self, rows: int) -> None:
        """`InputLogFull` when a bundle of `rows` events might not fit in the plan's log (a
        generous estimate: the exact check comes with the append)."""
        self._log.check_room(self.plan, ROOM_PER_EVENT * rows + ROOM_PER_BUNDLE)

    def durable(self, position: int) -> None:
        """Return once the record at `position` is as durable as the fsync policy makes it."""
        self._log.durable(self.plan, position)

    def capture(self) -> tuple[Any, str, int]:
        """The plan's state and the log position it covers, consistent with each other."""
        with self.lock:
            return self._runtime().capture(), self.log_id, self.position

    def origin(self, stream: str, n: int) -> Provenance:
        """Provenance of the next `n` outputs on `stream`; called while a record is processed."""
        if self._emitted_at != self.position:
            self._emitted.clear()
            self._emitted_at = self.position
        index = self._emitted.get(stream, 0)
        self._emitted[stream] = index + n
        return Provenance(self.log_id, self.position, index)

    def _runtime(self) -> Runtime:
        if self.runtime is None:
            msg = f"plan '{self.plan}' has no runtime yet"
            raise CEPError(msg)
        return self.runtime

    def _process(self, step: Callable[[Runtime], object]) -> None:
        runtime = self._runtime()
        try:
            step(runtime)
        except CEPError:
            if self.runtime is runtime or self.runtime is None:
                raise
            step(self.runtime)  # redeployed meanwhile: the new runtime holds the state now

    # ---- recovery --------------------------------------------------------------------------

    def recover(self, restored: bool, log_id: str | None = None, position: int | None = None) -> int:
        """After the runtime was restored from a snapshot covering `position` of log `log_id`
        (`restored` False: no snapshot), replay what the log holds after it; how many records.
        When the log cannot continue that state (a snapshot taken without the log, another
        node's or an older log, a truncated or shorter log), the log is reset: the state
        restored is all there is."""
        first, last = self._log.bounds(self.plan)
        if not restored:
            if first == 1:
                return self._replay(0)
            why = f"it starts at position {first} and no snapshot covers the records before"
        elif log_id is None or position is None:
            why = "the snapshot restored was taken without the input log"
        elif log_id != self.log_id:
            why = "the snapshot restored was taken on another node or before the log was reset"
        elif position > last:
            why = f"the snapshot restored covers position {position} but the log ends at {last}"
        elif position + 1 < first:
            why = f"the snapshot restored covers position {position} but the log starts at {first}"
        else:
            return self._replay(position)
        if last >= first:
            log.warning(
                "plan %s: its input log does not continue the state restored (%s): "
                "its records %d to %d are not replayed",
                self.plan, why, first, last,
            )  # fmt: skip
        self.reset()
        return 0

    def reset(self) -> None:
        """Start a new, empty log for the plan (`--discard-state`, a log that cannot be used)."""
        with self.lock:
            self.log_id = self._log.reset(self.plan)
            self._emitted.clear()
            self._emitted_at = 0
            self.clock.now = max(self.clock.now, self._wall())
            self.position = self._log.append(self.plan, Tick(self.clock.now))

    def _replay(self, after: int) -> int:
        runtime = self._runtime()
        _, last = self._log.bounds(self.plan)
        if last <= after:
            return 0
        total = last - after
        log.info("plan %s: replaying %d input log records after position %d", self.plan, total, after)
        started = shown = time.monotonic()
        done = failed = 0
        with self.lock:
            self.replaying = True
            try:
                for position, record in self._log.read(self.plan, after):
                    self.position = position
                    try:
                        if isinstance(record, Tick):
                            self.clock.now = record.time_ms
                            runtime.tick()
                        else:
                            self.clock.now = record.at
                            runtime.send(record.stream, record.rows, record.timestamps)
                    except Exception as exc:  # the live run met the same error here and went on
                        failed += 1
                        self._log_failure(position, exc)
                    done += 1
                    if time.monotonic() - shown >= PROGRESS_SECONDS:
                        shown = time.monotonic()
                        log.info("plan %s: replayed %d of %d input log records", self.plan, done, total)
            finally:
                self.replaying = False
        log.info(
            "plan %s: replayed %d input log records in %.1f s%s",
            self.plan,
            done,
            time.monotonic() - started,
            f" ({failed} failed, as they did when they arrived)" if failed else "",
        )
        return done

    def _log_failure(self, position: int, exc: Exception) -> None:
        allowed, held = self._failures.allow()
        if allowed:
            log.warning(
                "plan %s: input log record %d failed in replay: %s%s",
                self.plan,
                position,
                exc,
                f" ({held} similar not shown)" if held else "",
            )


class Journals:
    """The journals of the plans that have one, by plan name; each made on first use, and the
    input log (`open_log()`) opened with the first."""

    def __init__(self, open_log: Callable[[], InputLog], wall: Callable[[], int] = wall_ms) -> None:
        self._open_log = open_log
        self._input_log: InputLog | None = None
        self._wall = wall
        self._journals: dict[str, PlanJournal] = {}
        self._lock = threading.Lock()

    @property
    def input_log(self) -> InputLog:
        with self._lock:
            if self._input_log is None:
                self._input_log = self._open_log()
            return self._input_log

    def of(self, plan: str) -> PlanJournal:
        input_log = self.input_log
        with self._lock:
            journal = self._journals.get(plan)
            if journal is None:
                journal = self._journals[plan] = PlanJournal(plan, input_log, self._wall)
            return journal

    def get(self, plan: str) -> PlanJournal | None:
        return self._journals.get(plan)

    def truncate(self, plan: str, log_id: str, upto: int) -> int:
        """Drop the records of `plan`'s log up to `upto` if it is log `log_id`; segments deleted."""
        if self._journals.get(plan) is None:
            return 0
        return self.input_log.truncate(plan, upto, log_id)

    def sizes(self) -> dict[str, int]:
        return {} if self._input_log is None else self._input_log.sizes()

    def close(self) -> None:
        if self._input_log is not None:
            self._input_log.close()
