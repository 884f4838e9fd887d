"""`OutputGate`: a redundant plan's outputs, held until this node may deliver them.

Every member runs a redundant plan on the same ordered input, so every member computes the
same outputs with the same origins (log id, position, index). Only the notifier delivers:
- on the notifier, outputs of a record wait here until the standbys hold the record
  (`release(through)`), so no output reaches a sink for an input a takeover would not have;
  released outputs stay here until the notifier knows them written (`trim`), for a fence
  that refused them (the lease ran out meanwhile) would otherwise lose them;
- on a standby, outputs wait here until the notifier reports them delivered (`trim(through)`);
  when it wins the lease, `open(fence, 0)` delivers again what it released itself in an
  earlier term, and what it holds waits, as any output, until its record settles under the
  new term (`ha.seat.PlanSeat.takeover_delivery`; the sink skips what it already has, by
  origin); from then on it releases like a notifier.
The gate knows which positions it can vouch for: everything after `covers_after` (a standby
that joined from a snapshot has nothing before it; one that had to drop held outputs past
`max_events` has nothing before the last dropped). It may take over only when the notifier
has reported everything up to that point delivered (`complete`).

Pure logic: no lock (`app.cluster.gate.LockedGate` shares one between threads), no clock. The
origin and fence of an output are opaque here (`OriginT`, `FenceT`): the node's are
`adapters.output.base.Origin` and `Fence`. Imports nothing of ours but `engine.events`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from engine.events import Event

log = logging.getLogger(__name__)

OriginT = TypeVar("OriginT")  # an output's origin (log id, position, index)
FenceT = TypeVar("FenceT")  # a notifier's fence

Emit = Callable[
    [str, list[Event], OriginT, FenceT | None], None
]  # stream id, events, the first's origin, fence


class DeliveredMark:
    """When a member writes down how far its log's outputs are known written (its gate's
    `delivered`), so that a restart holds only the outputs after it: at most once a second and
    only further, per log (another log starts afresh). The node's journal keeps it on disk
    (`PlanJournal.keep_delivered`), the simulator on its model of one."""

    def __init__(self) -> None:
        self._kept = ("", 0, 0.0)  # (log id, position, when) last kept

    def due(self, log_id: str, position: int, now: float) -> bool:
        kept_in, kept, at = self._kept
        return kept_in != log_id or (position > kept and now - at >= 1.0)

    def kept(self, log_id: str, position: int, now: float) -> None:
        self._kept = (log_id, position, now)


class OutputGate(Generic[OriginT, FenceT]):
    def __init__(self, plan: str, emit: Emit[OriginT, FenceT], max_events: int = 1_000_000) -> None:
        self.plan = plan
        self._emit = emit
        self._max_events = max_events
        self._held: deque[tuple[int, str, list[Event], OriginT]] = deque()
        self._sent: deque[tuple[int, str, list[Event], OriginT]] = deque()  # released, not known written
        self._events = 0
        self.fence: FenceT | None = None  # None: held (standby); else the fence every delivery carries
        self.released = 0  # the newest position whose outputs went to the adapters
        self.covers_after = 0
        self.delivered = 0  # the newest position the notifier reported delivered
        self.dropped = 0  # outputs dropped past `max_events`

    def hold(self, position: int, stream_id: str, events: list[Event], where: OriginT) -> None:
        """The outputs `events` of the record at `position`, the first's origin `where`; not
        held when they are known written already (a standby behind the notifier's report, a
        restart replaying its log after the position it kept as written)."""
        if position <= self.delivered:
            return
        self._held.append((position, stream_id, events, where))
        self._events += len(events)
        while self._events > self._max_events and (self._sent or self._held):
            dropped = (self._sent or self._held).popleft()
            self._events -= len(dropped[2])
            self.dropped += len(dropped[2])
            if dropped[0] > self.covers_after:
                self.covers_after = dropped[0]
                log.warning(
                    "plan %s: more than %d outputs held for a takeover; dropped those of position %d "
                    "(this node may not take over until the notifier has delivered past it)",
                    self.plan, self._max_events, dropped[0],
                )  # fmt: skip

    def release(self, through: int) -> int:
        """Deliver the held outputs of positions up to `through` (notifier only); how many events."""
        if self.fence is None:
            return 0
        return self._deliver(through)

    def open(self, fence: FenceT, through: int) -> int:
        """This node notifies now, writing under `fence`: deliver again what it released in an
        earlier term without knowing it written (its fence may have refused it), and what it
        holds of positions up to `through`; how many events. A takeover passes 0: what it
        holds waits, as any output, until its record settles (`ha.seat.PlanSeat.takeover_delivery`)."""
        self.fence = fence
        resent, self._sent = self._sent, deque()
        self.released = self.delivered  # what a standby's state replaced was never released here
        n = 0
        for item in resent:
            self._sent.append(item)
            n += len(item[2])
            self._emit(item[1], item[2], item[3], fence)
            self.released = max(self.released, item[0])
        return n + self._deliver(through)

    def redeliver(self, fence: FenceT | None = None) -> int:
        """Deliver again what was released and is not known written (notifier only): a fence
        refused some of it while this node's lease lapsed on its own clock, and it holds the
        lease again, so no next notifier will deliver it; the sink skips what it has by origin.
        `fence`: a new fence for these and what follows (the refusing one refuses everything
        after its first refusal, so nothing later is written ahead of them). How many events."""
        if self.fence is None:
            return 0
        if fence is not None:
            self.fence = fence
        self._held.extendleft(reversed(self._sent))
        self._sent.clear()
        return self._deliver(self.released)

    def close(self) -> None:
        """This node no longer notifies: hold outputs from now on."""
        self.fence = None

    def trim(self, through: int) -> None:
        """The notifier (this node or another) wrote the outputs of every position up to `through`."""
        self.delivered = max(self.delivered, through)
        while self._held and self._held[0][0] <= through:
            self._events -= len(self._held.popleft()[2])
        while self._sent and self._sent[0][0] <= through:
            self._events -= len(self._sent.popleft()[2])

    def reset(self, after: int, delivered: int = 0) -> None:
        """Forget everything held: the plan's state was replaced by a snapshot covering `after`;
        outputs up to `delivered` are known written (the notifier said so when it sent the
        snapshot, with the outputs it still held: `carry`)."""
        self._held.clear()
        self._sent.clear()
        self._events = 0
        self.covers_after = after
        self.delivered = delivered
        # what it released in an earlier term is gone with what it held: a watermark reading
        # `released` as a new term begins must not trim the carried outputs unwritten
        self.released = delivered

    def carried_in(self, covers: int) -> None:
        """Every output the notifier carried to this standby with its state has arrived: from
        now on it vouches for every position after `covers` (after `reset` to the state's
        position it vouches for nothing the state covers)."""
        self.covers_after = covers

    def install(
        self, after: int, delivered: int, covers: int, carried: list[tuple[int, str, list[Event], OriginT]]
    ) -> None:
        """This standby installed a notifier's state covering `after`, with every output the
        notifier carried with it (`carried`: position, stream id, events, origin): what it held
        before is replaced, and it vouches for every position after `covers`."""
        self.reset(after, delivered)
        for position, stream_id, events, where in carried:
            self.hold(position, stream_id, events, where)
        self.carried_in(covers)

    def carried(self) -> tuple[list[tuple[str, list[Event], OriginT]], int, int]:
        """What a standby joining from a snapshot of this notifier needs to be able to take over
        at once: every output not known written, in order, with the position up to which outputs
        are known written and the one after which this gate holds every output."""
        items = [(stream_id, events, where) for _, stream_id, events, where in (*self._sent, *self._held)]
        return items, self.delivered, max(self.covers_after, self.delivered)

    @property
    def complete(self) -> bool:
        """Whether delivering what is held now would leave no output undelivered."""
        return self.delivered >= self.covers_after

    @property
    def held(self) -> int:
        return self._events

    @property
    def has_room(self) -> bool:
        """Whether the node may take more input for the plan: the gate holds less than half of
        `max_events` (backpressure keeps it from ever dropping: what a notifier holds until its
        outputs are known written, a standby holds too, a little later)."""
        return self._events < self._max_events // 2

    def _deliver(self, through: int | None) -> int:
        n = 0
        while self._held and (through is None or self._held[0][0] <= through):
            item = self._held.popleft()
            position, stream_id, events, where = item
            self._sent.append(item)  # counted in `held` until known written
            n += len(events)
            self._emit(stream_id, events, where, self.fence)
            self.released = max(self.released, position)
        if through is not None:
            self.released = max(self.released, through)
        return n
