"""The fast path for the commonest pattern: `every e1=A[f1] -> e2=B[f2] [within T]`.

For this shape Siddhi's state machine reduces exactly to: every A event passing f1 opens
a partial match; every B event completes, in opening order, each open match whose f2
holds (an event of a stream read by both states first completes, then opens); `within`
drops matches opened more than T before the event (or, with no events, by the clock).
The general machine (runtime/pattern.py) stays the reference: tests run both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer

Partial = list[Any]  # [slot e1, slot e2, timestamp], as the general machine's partials
Filter = Callable[[Partial, tuple[Any, ...]], bool]


class FollowedBy:
    def __init__(
        self,
        first_stream: str,
        second_stream: str,
        f1: Filter | None,
        f2: Filter | None,
        within: int | None,
        fill_second_before_filter: bool,
    ) -> None:
        self.first_stream = first_stream
        self.second_stream = second_stream
        self.f1 = f1
        self.f2 = f2
        self.within = within
        self.fill = fill_second_before_filter  # f2 reads e2's own slot (an indexed self reference)
        self.open: list[Partial] = []
        self.emit: Callable[[list[Partial]], None] = lambda ps: None
        self.scheduler: Scheduler | None = None
        self.timer: Timer | None = None
        self.within_due: int | None = None

    def bind_within_timer(self, scheduler: Scheduler, owner: str) -> None:
        if self.within is not None:
            self.scheduler = scheduler
            self.timer = Timer(scheduler, owner, self._on_within)

    def start(self, now: int) -> None:
        pass

    # ---- events -----------------------------------------------------------------------

    def _expire(self, t: int) -> None:
        within = self.within
        assert within is not None
        open_ = self.open
        drop = 0
        for p in open_:
            if abs(p[0][0][0] - t) > within:
                drop += 1
            else:
                break
        if drop:
            del open_[:drop]

    def receive(self, stream: str, chunk: Chunk) -> None:
        first = stream == self.first_stream
        second = stream == self.second_stream
        f1, f2, fill = self.f1, self.f2, self.fill
        within = self.within
        completed: list[Partial] = []
        open_ = self.open
        for ev in zip(chunk.ts, chunk.rows, strict=True):
            t, r = ev
            if within is not None and open_ and abs(open_[0][0][0][0] - t) > within:
                self._expire(t)  # the oldest open match is too old for this event: drop all such
                open_ = self.open
            if second and open_:
                keep: list[Partial] = []
                for p in open_:
                    if fill:
                        p[1] = [ev]
                    if f2 is None or f2(p, r):
                        done = p[:]
                        done[1] = [ev]
                        done[2] = t
                        completed.append(done)
                    else:
                        if fill:
                            p[1] = None
                        keep.append(p)
                if len(keep) != len(open_):
                    open_ = self.open = keep
            if first:
                p = [[ev], None, t]
                if f1 is None or f1(p, r):
                    open_.append(p)
        if self.timer is not None and self.within_due is None and self.open:
            self._schedule_within()
        if completed:
            self.emit(completed)

    # ---- within on the clock ----------------------------------------------------------------

    def _schedule_within(self, now: int | None = None) -> None:
        assert self.within is not None and self.timer is not None
        if not self.open:
            return
        due = self.open[0][0][0][0] + self.within + 1
        if now is not None and due <= now:
            due = now + 1
        self.within_due = due
        self.timer.at(due)

    def _on_within(self, due: int, now: int) -> None:
        if due != self.within_due:
            return
        self.within_due = None
        floor = self.scheduler.floor if self.scheduler is not None else None
        self._expire(now if floor is None else min(now, floor))
        self._schedule_within(now)

    # ---- state ------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        return {"open": [[p[0][0][0], p[0][0][1], p[2]] for p in self.open], "within_due": self.within_due}

    def restore(self, state: Any) -> None:
        self.open = [[[(t, tuple(row))], None, ts] for t, row, ts in state["open"]]
        self.within_due = state["within_due"]
