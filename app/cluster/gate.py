"""`LockedGate`: a redundant plan's output gate (`ha.gate.OutputGate`), shared by the threads
that process the plan's records, settle its bundles, follow its notifier and report what is
written: every call under one lock, the node's `Origin` and `Fence` as its origin and fence.

A snapshot of a redundant plan keeps the gate's outputs not known written (`state`), and a
restart from it holds them again (`restore`): the outputs of records before the snapshot are
in no log replay, so without them a member restarted from its snapshot could take over and
never deliver what the notifier had not written yet.
"""

from __future__ import annotations

import threading
from typing import Any

from adapters.output.base import Fence, Origin
from engine.events import Event
from ha.gate import Emit, OutputGate


class LockedGate:
    def __init__(self, plan: str, emit: Emit[Origin, Fence], max_events: int = 1_000_000) -> None:
        self.plan = plan
        self._gate: OutputGate[Origin, Fence] = OutputGate(plan, emit, max_events)
        self._lock = threading.Lock()

    def hold(self, stream_id: str, events: list[Event], where: Origin) -> None:
        with self._lock:
            self._gate.hold(where.position, stream_id, events, where)

    def release(self, through: int) -> int:
        with self._lock:
            return self._gate.release(through)

    def open(self, fence: Fence, through: int) -> int:
        with self._lock:
            return self._gate.open(fence, through)

    def redeliver(self, fence: Fence | None = None) -> int:
        with self._lock:
            return self._gate.redeliver(fence)

    def close(self) -> None:
        with self._lock:
            self._gate.close()

    def trim(self, through: int) -> None:
        with self._lock:
            self._gate.trim(through)

    def reset(self, after: int, delivered: int = 0) -> None:
        with self._lock:
            self._gate.reset(after, delivered)

    def install(
        self, after: int, delivered: int, covers: int, carried: list[tuple[int, str, list[Event], Origin]]
    ) -> None:
        with self._lock:
            self._gate.install(after, delivered, covers, carried)

    def carried(self) -> tuple[list[tuple[str, list[Event], Origin]], int, int]:
        with self._lock:
            return self._gate.carried()

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps: the outputs not known written, in plain values."""
        items, delivered, covers = self.carried()
        held = [
            [stream_id, where.source, where.log_id, where.position, where.index,
             [[e.timestamp, list(e.data), e.expired] for e in events]]
            for stream_id, events, where in items
        ]  # fmt: skip
        return {"covers": covers, "delivered": delivered, "held": held}

    def restore(self, state: dict[str, Any]) -> int:
        """Hold again what `state` kept (before the records after the snapshot are replayed); how
        many outputs."""
        n = 0
        with self._lock:
            self._gate.reset(int(state["covers"]), int(state["delivered"]))
            for stream_id, source, log_id, position, index, events in state["held"]:
                where = Origin(str(source), str(log_id), int(position), int(index))
                held = [Event(int(ts), tuple(data), bool(expired)) for ts, data, expired in events]
                self._gate.hold(where.position, str(stream_id), held, where)
                n += len(held)
        return n

    @property
    def complete(self) -> bool:
        with self._lock:
            return self._gate.complete

    @property
    def held(self) -> int:
        return self._gate.held

    def has_room(self) -> bool:
        return self._gate.has_room

    @property
    def released(self) -> int:
        return self._gate.released

    @property
    def fence(self) -> Fence | None:
        return self._gate.fence

    @property
    def covers_after(self) -> int:
        return self._gate.covers_after

    @property
    def delivered(self) -> int:
        return self._gate.delivered
