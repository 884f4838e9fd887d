"""What the members talk to besides each other: the registry's lease store and the sinks.

`Registry`: `ha.lease_table.LeaseTable` (the rules the SQL store is tested against) behind a
network hop, on the database's own clock (which may step), unavailable at times; a share of
its answers (`answer_loss`) is lost on the way back after the request took effect (the
connection dropped after the commit), so the member counts as failed what the store did.

`TransactionalSink`: a database table with the epoch fence and the delivered marks, as the
RDBMS adapter writes it: a write under an epoch below the fence's is refused, a higher one
raises it; a record whose origin is at or before the mark of its log is skipped.
`PlainSink`: appends whatever arrives (a log, an HTTP endpoint): duplicates carry the same key.

`Adapter`: a member's buffered writer to a sink, `capacity` records at most, kept as the node
keeps it (`on_full = "block"`): `publish` takes every record and the member asks `has_room`
before it takes a client's bundle; with `block` off, `publish` refuses what does not fit
(counted, as the node counts an overflow). A background writer drains it while the sink is up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ha.lease_table import LeaseTable
from ha.ports import Lease, LogPosition
from tests.sim.world import World

FAILED = Lease("", "", 0, 0)  # the answer of a request the store did not answer

Key = tuple[str, int, int]  # an output's origin: log id, position, index
Content = tuple[int, int]  # what an output says: the bundle it came of, and which of its events


CLOCK_BASE = 1_800_000_000.0  # seconds: the database clock when the world starts


class Registry:
    def __init__(
        self, world: World, latency: tuple[float, float] = (0.001, 0.01), answer_loss: float = 0.0
    ) -> None:
        self.world = world
        self.table = LeaseTable()
        self.latency = latency
        self.answer_loss = answer_loss
        self.down_until = 0.0
        self.skew = 0.0  # seconds the database's clock is ahead of true time
        self.requests = 0

    def now_ms(self) -> int:
        """The database's clock: milliseconds since 1970, as a real one (a clock stepped back a
        few seconds stays far past `RELEASED`, the beginning of time)."""
        return int((CLOCK_BASE + self.world.now + self.skew) * 1000)

    def ask(self, what: str, answer: Callable[[Lease | None], None], *args: Any) -> None:
        """Send a request; `answer(lease)` later (`FAILED`: no answer; None: no lease)."""
        self.requests += 1
        lo, hi = self.latency
        self.world.after(self.world.rng.uniform(lo, hi), self._serve, what, answer, args)

    def _serve(self, what: str, answer: Callable[[Lease | None], None], args: tuple[Any, ...]) -> None:
        if self.world.now < self.down_until:
            lo, hi = self.latency
            self.world.after(self.world.rng.uniform(lo, hi), answer, FAILED)
            return
        now = self.now_ms()
        table = self.table
        lease: Lease | None
        if what == "acquire":
            plan, node, ttl, held, require = args
            lease = table.acquire(plan, node, ttl, now, held, require)
        elif what == "take_over":
            plan, node, ttl, dead, epoch, held = args
            lease = table.take_over(plan, node, ttl, now, dead, epoch, held)
        elif what == "release":
            plan, node = args
            table.release(plan, node, now)
            lease = table.current(plan, now)
        elif what == "release_all":
            (node,) = args
            table.release_all(node, now)
            lease = None
        else:
            (plan,) = args
            lease = table.current(plan, now)
        lo, hi = self.latency
        if self.answer_loss and self.world.rng.random() < self.answer_loss:
            lease = FAILED  # it took effect; the answer did not come back
        self.world.after(self.world.rng.uniform(lo, hi), answer, lease)


@dataclass
class Write:
    member: str
    epoch: int | None  # the fence's epoch (None: a sink without one)
    key: Key
    content: Content


@dataclass
class TransactionalSink:
    fence: int = 0
    marks: dict[str, tuple[int, int]] = field(default_factory=dict)  # log id → last (position, index)
    rows: list[Write] = field(default_factory=list)
    by_key: dict[Key, Content] = field(default_factory=dict)
    epochs: dict[int, str] = field(default_factory=dict)  # epoch → the member whose writes it accepted
    down_until: float = 0.0
    refused: int = 0
    violations: list[str] = field(default_factory=list)

    def write(self, batch: list[Write]) -> bool:
        """One transaction: True written (or skipped), False refused by the fence."""
        epoch = batch[0].epoch or 0
        if epoch < self.fence:
            self.refused += len(batch)
            return False
        self.fence = epoch
        member = batch[0].member
        accepted = self.epochs.setdefault(epoch, member)
        if accepted != member:
            self.violations.append(
                f"the fence accepted writes of {accepted} and {member} under epoch {epoch}"
            )
        for w in batch:
            log_id, position, index = w.key
            mark = self.marks.get(log_id)
            if mark is not None and (position, index) <= mark:
                continue  # delivered before: skipped, as the adapter skips by origin
            self.marks[log_id] = (position, index)
            known = self.by_key.get(w.key)
            if known is not None and known != w.content:
                self.violations.append(f"origin {w.key} written with {w.content}, and before with {known}")
            self.by_key[w.key] = w.content
            self.rows.append(w)
        return True


@dataclass
class PlainSink:
    rows: list[Write] = field(default_factory=list)
    down_until: float = 0.0

    def write(self, batch: list[Write]) -> bool:
        self.rows.extend(batch)
        return True


class Adapter:
    """One member's buffered writes to one sink."""

    def __init__(self, world: World, member: str, sink: TransactionalSink | PlainSink, capacity: int) -> None:
        self.world = world
        self.member = member
        self.sink = sink
        self.capacity = capacity
        self.queue: deque[tuple[Write, Callable[[], bool]]] = deque()
        self.overflow = 0
        self.fenced = 0
        self.running = False
        self.alive = True
        self.block = True

    @property
    def has_room(self) -> bool:
        return not self.block or len(self.queue) < self.capacity

    def publish(self, writes: list[Write], holds: Callable[[], bool]) -> None:
        for w in writes:
            if not self.block and len(self.queue) >= self.capacity:
                self.overflow += 1
                continue
            self.queue.append((w, holds))
        self._wake()

    def _wake(self) -> None:
        if not self.running and self.queue and self.alive:
            self.running = True
            self.world.after(0.002, self._drain)

    def _drain(self) -> None:
        self.running = False
        if not self.alive or not self.queue:
            return
        if self.world.now < self.sink.down_until:
            self.running = True
            self.world.after(0.05, self._drain)  # retry while the sink is down
            return
        batch: list[Write] = []
        holds = self.queue[0][1]
        while self.queue and len(batch) < 50 and self.queue[0][1] is holds:
            batch.append(self.queue.popleft()[0])
        if not holds():  # the notifier's own lease check, before the transaction
            self.fenced += len(batch)
        elif not self.sink.write(batch):
            self.fenced += len(batch)
        self._wake()

    @property
    def flushed(self) -> bool:
        return not self.queue

    def crash(self) -> None:
        self.alive = False
        self.queue.clear()


def log_position(term: int, position: int) -> LogPosition:
    return LogPosition(term, position)
