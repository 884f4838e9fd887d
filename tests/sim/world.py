"""The simulated world: one thread, one seeded random source, simulated time in seconds.

Everything that happens is an event in one queue, ordered by time and then by the order it
was scheduled, so a seed replays exactly. The network is a set of connections between
members, each a FIFO with its own latency (TCP: in order, no loss or duplicate while it
lives); a partition holds what crosses it in one direction until it heals, or past
`RESET_AFTER` resets the connection at both ends; a process that dies closes its connections
in order (FIN), a host that vanishes closes nothing.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RESET_AFTER = 3.0  # a connection blocked by a partition this long is reset at both ends


class World:
    def __init__(self, seed: int, trace: bool = False) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._order = itertools.count()
        self.tracing = trace
        self.lines: list[str] = []
        self.steps = 0

    def at(self, when: float, step: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._queue, (max(when, self.now), next(self._order), step, args))

    def after(self, delay: float, step: Callable[..., None], *args: Any) -> None:
        self.at(self.now + delay, step, *args)

    def run(self, until: float, check: Callable[[], None] | None = None) -> None:
        queue = self._queue
        while queue and queue[0][0] <= until:
            when, _, step, args = heapq.heappop(queue)
            self.now = when
            step(*args)
            self.steps += 1
            if check is not None:
                check()
        self.now = max(self.now, until)

    def trace(self, text: str) -> None:
        if self.tracing:
            self.lines.append(f"{self.now:9.3f} {text}")


@dataclass(eq=False)
class Conn:
    """One connection from `a` (who opened it) to `b` for `purpose`."""

    id: int
    a: str
    b: str
    purpose: str
    open: bool = True
    last: dict[str, float] = field(default_factory=dict)  # per direction: when its last message lands
    # per direction: what is in flight, in order (when it may land, the message, when it was sent)
    flight: dict[str, deque[tuple[float, object, float]]] = field(default_factory=dict)
    handlers: dict[str, Any] = field(default_factory=dict)  # per end: who receives there

    def other(self, end: str) -> str:
        return self.b if end == self.a else self.a


class Net:
    """Connections between members; `blocked` holds the directions a partition cuts."""

    def __init__(self, world: World, latency: tuple[float, float] = (0.0005, 0.005)) -> None:
        self.world = world
        self.latency = latency
        self.blocked: set[tuple[str, str]] = set()
        # directions a "slow" fault delays: each message there takes this much longer, drawn
        # apart, so what is sent over other connections (a new one, a heartbeat) may overtake it
        self.slow: dict[tuple[str, str], tuple[float, float]] = {}
        self._ids = itertools.count(1)
        self.conns: dict[int, Conn] = {}

    def connect(self, a: str, b: str, purpose: str) -> Conn:
        conn = Conn(next(self._ids), a, b, purpose)
        self.conns[conn.id] = conn
        return conn

    def send(self, conn: Conn, sender: str, message: object) -> None:
        """Deliver `message` to the other end, in order after what was sent before."""
        if not conn.open:
            return
        world = self.world
        lo, hi = self.latency
        delay = world.rng.uniform(lo, hi)
        slow = self.slow.get((sender, conn.other(sender))) if self.slow else None
        if slow is not None:
            delay += world.rng.uniform(*slow)
        lands = max(conn.last.get(sender, 0.0), world.now + delay)
        conn.last[sender] = lands
        flight = conn.flight.setdefault(sender, deque())
        flight.append((lands, message, world.now))
        if len(flight) == 1:
            world.at(lands, self._land, conn, sender)

    def _land(self, conn: Conn, sender: str) -> None:
        """The first message in flight from `sender` arrives, unless a partition holds it (TCP
        retransmits it, and everything behind it waits: a stream never reorders)."""
        if not conn.open:
            return
        flight = conn.flight[sender]
        _, message, sent = flight[0]
        receiver = conn.other(sender)
        if (sender, receiver) in self.blocked:
            if self.world.now - sent >= RESET_AFTER:
                self.reset(conn)
                return
            self.world.after(0.05, self._land, conn, sender)
            return
        flight.popleft()
        if flight:
            self.world.at(flight[0][0], self._land, conn, sender)
        handler = conn.handlers.get(receiver)
        if handler is not None:
            handler(conn, message)

    def close(self, conn: Conn, closer: str) -> None:
        """`closer` closes in order: the other end reads to the end, then sees FIN."""
        if not conn.open:
            return
        self.send(conn, closer, _FIN)

    def reset(self, conn: Conn) -> None:
        """Both ends see the connection fail (RST, or a timeout)."""
        if not conn.open:
            return
        conn.open = False
        for end in (conn.a, conn.b):
            handler = conn.handlers.get(end)
            if handler is not None:
                handler(conn, _RESET)

    def vanish(self, conn: Conn) -> None:
        """The host at one end is gone without a word: nothing more arrives either way."""
        conn.open = False


class _Signal:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_FIN = _Signal("FIN")
_RESET = _Signal("RESET")
FIN, RESET = _FIN, _RESET
