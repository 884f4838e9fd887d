"""`session(session.gap [, session.key [, allowed.latency]])`: per-key sessions that close
after `gap` ms without events (spec §1.13).

Events pass through as current events as they arrive; when a session times out (a timer at
its end time), its events leave as expired events with their own timestamps, sessions in
end-time order. With an allowed latency a closed session is kept as the key's previous
session for `latency` more ms, so late events can still join (and merge) it.

Siddhi keeps sessions in `ComplexEventChunk`s and inserts late events at the chunk's
iterator position, which it never resets; the order of expired events depends on that, so
the chunks are `JChunk`s here. Ties between sessions ending together follow Java hash map
order (`JavaMap`). A join searches the expired chunk, which is empty between calls, so it
matches nothing. Siddhi asks for a timer per event and walks every session on each; here a
moment is asked for once and a timer with nothing due returns at once (same output).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, check_args, register
from engine.runtime.windows.eventchunk import JChunk, Node, restore_chunks, snapshot_chunks
from engine.runtime.windows.javacompat import JavaMap, java_hash
from engine.runtime.windows.shared import Ev, Out
from engine.types import AttrType

DEFAULT_KEY = "default-key"
LONG = (AttrType.LONG,)
Row = tuple[Any, ...]


class _Book:
    """Counts of non-empty current / previous sessions (what the HashMap of end times Siddhi
    fills on every timer grows to) and a lower bound of their end / alive times, so that a
    timer with nothing due is answered without walking every session."""

    __slots__ = ("live", "floor")

    def __init__(self) -> None:
        self.live = [0, 0]
        self.floor = [math.inf, math.inf]


class _Session:
    """A SessionComplexEventChunk: the events and the session's start, end and alive times.
    `kind` is 0 for a key's current session, 1 for its previous one."""

    __slots__ = ("events", "start", "end", "alive", "kind", "book")

    def __init__(self, kind: int, book: _Book) -> None:
        self.events = JChunk()
        self.start = self.end = self.alive = 0
        self.kind = kind
        self.book = book

    def due(self) -> int:
        return self.alive if self.kind else self.end

    def set(self, start: int, end: int, alive: int) -> None:
        self.start, self.end, self.alive = start, end, alive
        self.book.floor[self.kind] = min(self.book.floor[self.kind], self.due())

    def add(self, chain: Node | None) -> None:
        empty = self.events.first is None
        self.events.add(chain)
        if empty and self.events.first is not None:
            self.book.live[self.kind] += 1

    def clear(self) -> None:
        if self.events.first is not None:
            self.book.live[self.kind] -= 1
        self.events.clear()


class _Container:
    __slots__ = ("current", "previous")

    def __init__(self, book: _Book) -> None:
        self.current = _Session(0, book)
        self.previous = _Session(1, book)


def _check(args: list[Any], types: list[AttrType]) -> str | None:
    if len(args) > 2 and int(args[2]) > int(args[0]):
        return "allowed.latency must not be greater than session.gap"
    return None


class SessionWindow(Window):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("session", _check, args, [])
        self.gap = int(args[0])
        self.key_of: Callable[[Row], Any] | None = args[1] if len(args) > 1 else None
        self.latency = int(args[2]) if len(args) > 2 else 0
        self.sessions: JavaMap[Any, _Container] = JavaMap(java_hash, concurrent=True)
        self.end_times: JavaMap[Any, int] = JavaMap(java_hash, concurrent=False)
        self.expired = JChunk()
        self.book = _Book()
        self.pending: set[int] = set()  # timer times asked for and not yet fired
        self.register_timer()

    def _notify(self, due: int) -> None:
        """Siddhi asks for a timer per event; a second timer for the same moment finds
        nothing left to close, so one is asked for."""
        if due not in self.pending:
            self.pending.add(due)
            self.notify_at(due)

    # ---- arrivals ---------------------------------------------------------------------------

    def process(self, chunk: Chunk) -> None:
        out = Out()
        kept_any = dropped_last = False
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            dropped_last = not self._arrive(t, r)
            if not dropped_last:
                out.current(t, r)
                kept_any = True
        # Siddhi removes a dropped event from the chunk without fixing its `last`: when the
        # last event was dropped after a kept one, the expired events appended go missing.
        self._flush(out, lost=dropped_last and kept_any)

    def _arrive(self, t: int, r: Row) -> bool:
        """Place one event; False when it is too late for any session and is dropped."""
        gap, latency = self.gap, self.latency
        key = DEFAULT_KEY if self.key_of is None else self.key_of(r)
        container = self.sessions.get(key) or _Container(self.book)
        self.sessions.put(key, container)
        node = Node(t, r)
        cur = container.current
        end, alive = t + gap, t + gap + latency
        if cur.events.first is None:
            cur.add(node)
            cur.set(t, end, alive)
            self._notify(end)
        elif t >= cur.start:
            if t <= cur.end:
                cur.set(cur.start, end, alive)
                cur.add(node)
                self._notify(end)
            elif latency > 0:  # a new session starts; the old one waits for late events
                self._current_to_previous(container)
                cur.clear()
                cur.set(t, end, alive)
                cur.add(node)
                self._notify(end)
        else:
            return self._late(container, node, t)
        return True

    def _current_to_previous(self, container: _Container) -> None:
        cur, prev = container.current, container.previous
        if prev.events.first is not None:
            self.expired.add(prev.events.first)
            prev.clear()
        prev.add(cur.events.first)
        prev.set(cur.start, cur.end, cur.alive)
        self._notify(cur.alive)

    def _insert_late(self, session: _Session, chain: Node) -> None:
        events = session.events
        if events.has_next():
            events.next()
        events.insert_before_current(chain)

    def _late(self, container: _Container, node: Node, t: int) -> bool:
        cur, prev, gap = container.current, container.previous, self.gap
        if t >= cur.start - gap:
            self._insert_late(cur, node)
            cur.start = t
            if self.latency > 0:
                self._merge(prev, cur)
            return True
        if self.latency <= 0 or prev.events.first is None or t < prev.start - gap:
            return False
        prev.add(node)
        if t <= prev.end - gap and t < prev.start:
            prev.start = t
        else:
            prev.set(prev.start, t + gap, t + gap + self.latency)
            self._merge(prev, cur)
        return True

    def _merge(self, prev: _Session, cur: _Session) -> None:
        if prev.events.first is not None and prev.end >= cur.start - self.gap:
            self._insert_late(cur, prev.events.first)
            cur.start = prev.start
            prev.clear()

    # ---- timeouts -----------------------------------------------------------------------------

    def on_timer(self, due: int, now: int) -> None:
        self.pending.discard(due)
        self._timeout(due, previous=False)
        if self.latency > 0:
            self._timeout(due, previous=True)
        self._flush(Out(), lost=False)

    def _timeout(self, at: int, previous: bool) -> None:
        """Close every session (current or previous ones) due by `at`, earliest first."""
        kind, ends = int(previous), self.end_times
        cap = ends.cap
        while self.book.live[kind] > cap * 3 // 4:  # Siddhi's HashMap of end times grows, never shrinks
            cap *= 2
        if cap != ends.cap:
            ends.cap = cap
            ends.clear()
        if self.book.floor[kind] > at:
            return  # nothing is due: Siddhi's walk would close nothing
        ends.clear()
        for key, c in self.sessions.items():
            s = c.previous if previous else c.current
            if s.events.first is not None:
                ends.put(key, s.due())
        order = ends.items()
        if len(order) > 1:
            order.sort(key=lambda kv: kv[1])
        self.book.floor[kind] = math.inf
        for key, end in order:
            container = self.sessions.get(key)
            assert container is not None
            s = container.previous if previous else container.current
            if s.events.first is None or at < end:
                self.book.floor[kind] = end  # the earliest session left open
                break
            if not previous and self.latency > 0:
                container.previous.add(s.events.first)
                container.previous.set(s.start, s.end, s.alive)
                self._notify(s.alive)
            else:
                self.expired.add(s.events.first)
            s.clear()

    def _flush(self, out: Out, lost: bool) -> None:
        if not lost:
            for node in self.expired:
                out.expired(node.ts, node.row)
        self.expired.clear()
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.expired.events()

    # ---- state ---------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        containers = self.sessions.values()
        chunks = [s.events for c in containers for s in (c.current, c.previous)]
        times = [[s.start, s.end, s.alive] for c in containers for s in (c.current, c.previous)]
        return {
            "keys": self.sessions.snapshot(lambda c: None),
            "times": times,
            "chunks": snapshot_chunks([*chunks, self.expired]),
            "end_cap": self.end_times.cap,
            "pending": sorted(self.pending),
        }

    def restore(self, state: Any) -> None:
        chunks = restore_chunks(state["chunks"])
        self.book = _Book()
        self.sessions.restore(state["keys"], lambda _: _Container(self.book))
        sessions = [s for c in self.sessions.values() for s in (c.current, c.previous)]
        for s, events, times in zip(sessions, chunks, state["times"], strict=False):
            s.events = events
            s.set(*times)
            if events.first is not None:
                self.book.live[s.kind] += 1
        self.expired = chunks[-1]
        self.end_times.cap = state["end_cap"]  # a HashMap keeps its table size after clear()
        self.end_times.clear()
        self.pending = set(state["pending"])


GAP = Param("session.gap", LONG)
KEY = Param("session.key", (AttrType.STRING,), attribute=True)
register(
    WindowSpec(
        "session",
        SessionWindow,
        ((GAP,), (GAP, KEY), (GAP, KEY, Param("allowed.latency", LONG))),
        check=_check,
    )
)
