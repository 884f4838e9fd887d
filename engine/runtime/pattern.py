"""Pattern (`->`) and sequence (`,`) state machines, as Siddhi 5 runs them.

A partial match is a list: one slot per stream state (None, or the list of events that
filled it; counting states collect several), and the match timestamp last. Each state
node keeps `pending` partials (eligible now) and `staging` ones (eligible from the next
event of its stream). An event is tried against every pending partial of the nodes that
read its stream (later states first); a partial that passes moves on as the same object,
and only `every` re-arms a state with a copy. `within` is checked when events arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer

Event = tuple[int, tuple[Any, ...]]
Partial = list[Any]  # [slot0, slot1, ..., timestamp]
Filter = Callable[[Partial, tuple[Any, ...]], bool]


def new_partial(n: int) -> Partial:
    p: Partial = [None] * (n + 1)
    p[n] = -1
    return p


class Node:
    """One stream state (`e1=S[...]`): its pending and staging partials."""

    kind = "stream"

    def __init__(self, machine: Machine, state_id: int, stream: str, filt: Filter | None) -> None:
        self.m = machine
        self.sid = state_id
        self.stream = stream
        self.filter = filt
        self.pending: list[Partial] = []
        self.staging: list[Partial] = []
        self.next: Node | None = None  # where a passing partial goes
        self.every_next: Node | None = None  # where a fresh copy goes (`every`)
        self.within_every: Node | None = None
        self.final = False  # passing completes the match
        self.is_start = False
        self.initialized = False
        self.changed = False
        self.callback: Node | None = None  # sequences: start-state reset after a skipped count

    # ---- arming -----------------------------------------------------------------------

    def init(self) -> None:
        if self.is_start and (
            not self.initialized or self.every_next is not None or self._next_is_absent_in_sequence()
        ):
            self.add_state(new_partial(self.m.n))
            self.initialized = True

    def _next_is_absent_in_sequence(self) -> bool:
        return self.m.sequence and isinstance(self.next, AbsentNode)

    def add_state(self, p: Partial) -> None:
        if self.m.sequence and self.staging:
            return
        self.staging.append(p)

    def add_every_state(self, p: Partial) -> None:
        c = p[:]
        for i in range(self.sid, self.m.n):
            c[i] = None
        self.staging.append(c)

    def update_state(self) -> None:
        if self.staging:
            self.staging.sort(key=lambda q: (q[-1] == -1, q[-1]))  # by time; unstamped last
            self.pending.extend(self.staging)
            self.staging = []

    def reset_state(self) -> None:
        """Sequences: a partial survives only if the previous event advanced it."""
        self.pending = []
        if self.is_start and not self.staging:
            if self.m.sequence and self.every_next is None and self.next is not None and self.next.pending:
                return
            self.init()

    # ---- within ---------------------------------------------------------------------

    def expire(self, t: int, seen: dict[int, Partial]) -> None:
        """Drop partials past `within`. A partial waits at several states at once (a count
        and the state after it): only the newest one that no other state expired in this
        sweep (`seen`) re-arms the `every` it belongs to, as Siddhi marks it EXPIRED."""
        if self.m.within is None:
            return
        last: Partial | None = None
        pending = self.pending
        while pending and self.m.expired(pending[0], t):
            p = pending.pop(0)
            if _first_expiry(seen, p):
                last = p
        kept = []
        for p in self.staging:
            if self.m.expired(p, t):
                if _first_expiry(seen, p):
                    last = p
            else:
                kept.append(p)
        self.staging = kept
        if last is not None and self.within_every is not None:
            self.within_every.add_every_state(last)
            self.within_every.update_state()

    # ---- matching -------------------------------------------------------------------

    def process(self, ev: Event) -> None:
        sid = self.sid
        sequence = self.m.sequence
        keep: list[Partial] = []
        for p in self.pending:
            p[sid] = [ev]
            self.changed = False
            if self.filter is None or self.filter(p, ev[1]):
                self.post(p, ev)
            if self.changed:
                continue
            p[sid] = None
            if not sequence:
                keep.append(p)
        self.pending = keep

    def post(self, p: Partial, ev: Event) -> None:
        self.changed = True
        p[-1] = ev[0]
        self.forward(p)

    def forward(self, p: Partial) -> None:
        if self.final:
            self.m.returned.append(p)
        if self.next is not None:
            self.next.add_state(p)
        if self.every_next is not None:
            self.every_next.add_every_state(p)
        if self.callback is not None:
            self.callback.start_state_reset()

    def start_state_reset(self) -> None:
        self.m.reset_requested.append(self)

    # ---- state ----------------------------------------------------------------------

    def lists(self) -> list[list[Partial]]:
        return [self.pending, self.staging]

    def extra_state(self) -> Any:
        return {"initialized": self.initialized}

    def restore_extra(self, state: Any) -> None:
        self.initialized = state["initialized"]


class CountNode(Node):
    """`e1=S<min:max>` (and sequence `+`, `*`, `?`)."""

    kind = "count"

    def __init__(
        self, machine: Machine, state_id: int, stream: str, filt: Filter | None, lo: int, hi: int | None
    ) -> None:
        super().__init__(machine, state_id, stream, filt)
        self.min = lo
        self.max = hi
        self.success = False
        self.next_ids: list[int] = []

    def add_state(self, p: Partial) -> None:
        if self.m.sequence and self.staging:
            return
        self.staging.append(p)
        if self.min == 0 and p[self.sid] is None:
            self._min_reached(p)

    def process(self, ev: Event) -> None:
        sid = self.sid
        sequence = self.m.sequence
        keep: list[Partial] = []
        for p in self.pending:
            if any(p[i] is not None for i in self.next_ids):
                continue  # the next state already took this partial
            chain = p[sid]
            p[sid] = [ev] if chain is None else chain + [ev]
            self.changed = False
            self.success = False
            if self.filter is None or self.filter(p, ev[1]):
                self.post(p, ev)
            if not self.success:
                p[sid] = chain
            if self.changed:
                continue
            if not sequence or self.success:
                keep.append(p)
        self.pending = keep

    def post(self, p: Partial, ev: Event) -> None:
        n = len(p[self.sid])
        self.success = True
        p[-1] = ev[0]
        if self.m.sequence:
            if n >= self.min:
                if self.next is not None:
                    self.next.add_state(p)
                if self.every_next is not None and n == self.min:
                    self.every_next.add_every_state(p)
                if self.final and n == self.min and self.callback is None:
                    pass  # Siddhi never returns a sequence's final count state
            if self.max is not None and n == self.max:
                self.changed = True
            elif n >= self.min:
                self.staging.append(p) if p not in self.staging else None
                self.changed = True
            return
        if n == self.min:
            self._min_reached(p)
        if self.max is not None and n == self.max:
            self.changed = True

    def _min_reached(self, p: Partial) -> None:
        if self.final:
            self.changed = True
            self.m.returned.append(p)
        if self.next is not None:
            self.next.add_state(p)
        if self.every_next is not None:
            self.every_next.add_every_state(p)


class LogicalNode(Node):
    """One side of `a and b` / `a or b`; both sides share each partial."""

    kind = "logical"

    def __init__(self, machine: Machine, state_id: int, stream: str, filt: Filter | None, op: str) -> None:
        super().__init__(machine, state_id, stream, filt)
        self.op = op
        self.partner: LogicalNode | AbsentNode | None = None

    def init(self) -> None:
        partner = self.partner
        if partner is not None and partner.initialized and not self.initialized:
            self.initialized = True  # the pair shares one fresh partial
            return
        super().init()

    def add_state(self, p: Partial) -> None:
        _add_to_pair(self, self.partner, p)

    def add_every_state(self, p: Partial) -> None:
        c = p[:]
        for i in range(self.sid, self.m.n):
            c[i] = None
        partner = self.partner
        if partner is not None:
            c[partner.sid] = None
        self.staging.append(c)
        if partner is not None:
            partner.staging.append(c)

    def update_state(self) -> None:
        super().update_state()
        if self.partner is not None:
            Node.update_state(self.partner)

    def reset_state(self) -> None:
        partner = self.partner
        assert partner is not None
        if self.op == "or" or len(self.pending) == len(partner.pending):
            self.pending = []
            partner.pending = []
        if self.is_start and not self.staging:
            self.init()

    def process(self, ev: Event) -> None:
        sid = self.sid
        partner = self.partner
        assert partner is not None
        psid = partner.sid
        keep: list[Partial] = []
        for p in self.pending:
            if self.op == "or" and p[psid] is not None:
                continue  # completed through the other side
            p[sid] = [ev]
            self.changed = False
            if self.filter is None or self.filter(p, ev[1]):
                self.post(p, ev)
            if self.changed:
                continue
            p[sid] = None
            if not self.m.sequence:
                keep.append(p)
        self.pending = keep

    def post(self, p: Partial, ev: Event) -> None:
        self.changed = True
        partner = self.partner
        assert partner is not None
        if self.op == "and" and not partner.can_proceed(p):
            return  # wait for the other side; this side's slot stays filled
        p[-1] = ev[0]
        self.forward(p)

    def can_proceed(self, p: Partial) -> bool:
        """For `e2=A and e3=B`: has A's side been filled?"""
        return p[self.sid] is not None


class AbsentNode(Node):
    """`not S[cond] for T`: passes when T elapses without a matching S; an S kills it."""

    kind = "absent"

    def __init__(
        self, machine: Machine, state_id: int, stream: str, filt: Filter | None, waiting: int | None
    ) -> None:
        super().__init__(machine, state_id, stream, filt)
        self.waiting = waiting
        self.active = True
        self.last_scheduled = 0
        self.last_arrival = 0
        self.partner: LogicalNode | None = None  # set when part of a logical
        self.op: str | None = None
        self.timer: Timer | None = None

    def bind_timer(self, scheduler: Scheduler, owner: str) -> None:
        self.timer = Timer(scheduler, owner, self.on_timer)

    def schedule(self, due: int) -> None:
        if self.timer is not None:
            self.timer.at(due)

    def start(self, now: int) -> None:
        if self.is_start and self.waiting is not None:
            self.last_scheduled = now + self.waiting
            self.schedule(self.last_scheduled)

    def add_state(self, p: Partial) -> None:
        if self.partner is not None:
            _add_to_pair(self, self.partner, p)
        elif self.m.sequence and self.staging:
            return
        else:
            self.staging.append(p)
        if not self.is_start and self.waiting is not None and p[-1] != -1:
            self.schedule(p[-1] + self.waiting)
            partner = self.partner
            if isinstance(partner, AbsentNode) and partner.waiting is not None:
                partner.schedule(p[-1] + partner.waiting)  # `not A for T and not B for T2`

    def update_state(self) -> None:
        super().update_state()
        if self.partner is not None:
            Node.update_state(self.partner)  # the pair moves together, as Siddhi's logical

    def add_every_state(self, p: Partial) -> None:
        partner = self.partner
        if partner is None:
            super().add_every_state(p)
            return
        c = p[:]
        if c[self.sid] is not None:
            ts, row = c[self.sid][-1]
            c[-1] = ts if row else -1  # Siddhi's placeholder event carries no timestamp
        for i in range(self.sid, self.m.n):
            c[i] = None
        c[partner.sid] = None
        self.staging.append(c)
        partner.staging.append(c)

    def process(self, ev: Event) -> None:
        """A matching event of the absent stream kills the partials waiting here."""
        sid = self.sid
        keep: list[Partial] = []
        for p in self.pending:
            previous = p[sid]
            p[sid] = [ev]
            if self.filter is None or self.filter(p, ev[1]):
                self.last_arrival = ev[0]
                if self.partner is not None:
                    if self.waiting is not None:
                        p[sid] = previous  # restored; the wait starts over
                    continue  # the slot (without `for`) records the violation
                if self.is_start and self.every_next is not None:
                    c = p[:]
                    for i in range(self.sid, self.m.n):
                        c[i] = None
                    c[-1] = ev[0]
                    self.staging.append(c)
                if self.waiting is not None:
                    self.last_scheduled = ev[0] + self.waiting
                    self.schedule(self.last_scheduled)
                continue  # killed
            p[sid] = previous
            keep.append(p)
        self.pending = keep

    def can_proceed(self, p: Partial) -> bool:
        """For `not A and e2=B`: may B complete the match?"""
        if self.waiting is None:
            if self.every_next is not None:
                if self.last_arrival > 0:
                    self.last_arrival = 0
                    self.init()  # `every`: a fresh partial for the pair, as Siddhi's init()
                    return False
                return True
            return p[self.sid] is None
        return p[self.sid] is not None

    def on_timer(self, due: int, now: int) -> None:
        if not self.active or self.waiting is None:
            return
        t = due
        m = self.m
        m.begin()
        try:
            if self.partner is not None:
                self._logical_timer(t)
            else:
                self._timer(t)
        finally:
            m.finish(t)

    def _timer(self, t: int) -> None:
        m = self.m
        assert self.waiting is not None
        if self.is_start and not self.pending and not self.staging:
            if not m.sequence or self.every_next is not None or self.last_scheduled == 0:
                Node.add_state(self, new_partial(m.n))
        elif m.sequence and self.staging:
            self.reset_state()
        Node.update_state(self)
        fired = False
        keep: list[Partial] = []
        for p in self.pending:
            if m.within is not None and m.expired(p, t):
                if self.within_every is not None:
                    self.within_every.add_every_state(p)
                continue
            ts = p[-1]
            if (ts == -1 and t >= self.last_scheduled) or (ts != -1 and t >= ts + self.waiting):
                fired = True
                p[-1] = t
                if self.final:
                    m.returned.append(p)
                if self.next is not None:
                    self.next.add_state(p)
                if self.every_next is not None:
                    c = p[:]
                    for i in range(self.sid, m.n):
                        c[i] = None
                    c[-1] = t
                    self.staging.append(c)
                    self.last_scheduled = t + self.waiting
                    self.schedule(self.last_scheduled)
                elif self.is_start:
                    self.active = False
            else:
                keep.append(p)
        self.pending = keep
        if not fired and self.last_scheduled < t:
            self.last_scheduled = t + self.waiting
            self.schedule(self.last_scheduled)

    def _logical_timer(self, t: int) -> None:
        m = self.m
        assert self.waiting is not None and self.partner is not None
        if t < self.last_arrival + self.waiting:
            if self.every_next is not None or self.is_start:
                self.schedule(self.last_arrival + self.waiting)  # the wait restarted
            return
        self.last_arrival = 0
        partner = self.partner
        # a pattern's start pair re-arms only when no partial of the pair still waits at the
        # other side (a passed wait waiting for its 'and' partner)
        if self.is_start and not self.pending and not self.staging and (m.sequence or not partner.pending):
            self.add_state(new_partial(m.n))
        self.update_state()
        fired = False
        keep: list[Partial] = []
        for p in self.pending:
            deadline = (p[-1] if p[-1] != -1 else self.last_scheduled - self.waiting) + self.waiting
            if p[-1] == -1 and self.is_start:
                deadline = self.last_scheduled
            if t < deadline:
                keep.append(p)
                continue
            fired = True
            p[self.sid] = [(t, ())]  # a placeholder: T passed without the absent stream
            if self.op == "and" and p[partner.sid] is not None:
                p[-1] = t
                self.forward(p)
            elif self.op == "or" and p[partner.sid] is None:
                p[-1] = t
                self.forward(p)
            # else the placeholder waits in the slot for the 'and' partner
        self.pending = keep
        if self.every_next is not None or (not fired and self.is_start):
            self.last_scheduled = t + self.waiting
            self.schedule(self.last_scheduled)
        elif fired and self.is_start:
            self.active = False
            if self.op == "or" and isinstance(partner, AbsentNode):
                partner.active = False  # `not A for T or not B for T` completes once

    def extra_state(self) -> Any:
        return {
            "initialized": self.initialized,
            "active": self.active,
            "last_scheduled": self.last_scheduled,
            "last_arrival": self.last_arrival,
        }

    def restore_extra(self, state: Any) -> None:
        self.initialized = state["initialized"]
        self.active = state["active"]
        self.last_scheduled = state["last_scheduled"]
        self.last_arrival = state["last_arrival"]


def _first_expiry(seen: dict[int, Partial], p: Partial) -> bool:
    """Record `p` as expired in this sweep; False if another state already did."""
    if id(p) in seen:
        return False
    seen[id(p)] = p  # held, so that no new partial reuses its id during the sweep
    return True


def _add_to_pair(node: Node, partner: Node | None, p: Partial) -> None:
    """Both sides of a logical state wait for the partial. A start state or a sequence
    holds one fresh partial per side at a time; later states take every arriving one."""
    if node.is_start or node.m.sequence:
        if not node.staging:
            node.staging.append(p)
        if partner is not None and not partner.staging:
            partner.staging.append(p)
        return
    node.staging.append(p)
    if partner is not None:
        partner.staging.append(p)


class Machine:
    """One pattern or sequence query's state machine (one per partition key)."""

    def __init__(self, n_states: int, sequence: bool, within: int | None, start_ids: list[int]) -> None:
        self.n = n_states
        self.sequence = sequence
        self.within = within
        self.start_ids = start_ids
        self.nodes: list[Node] = []
        self.receivers: dict[str, list[Node]] = {}
        self.backwards: dict[str, list[Node]] = {}  # receivers, later states first
        self.returned: list[Partial] = []
        self.reset_requested: list[Node] = []
        self.emit: Callable[[list[Partial]], None] = lambda ps: None
        self.scheduler: Scheduler | None = None
        self.root_reset: Callable[[], None] = lambda: None
        self.root_update: Callable[[], None] = lambda: None
        self.within_timer: Timer | None = None
        self.within_due: int | None = None
        # events from this time on may find partial matches past `within` (None: check every
        # event); unlike the timer's due time it is never pushed past the oldest match's limit
        self.check_from: int | None = None

    def bind_within_timer(self, scheduler: Scheduler, owner: str) -> None:
        """`within` also expires partial matches when the clock passes, with no event."""
        if self.within is not None:
            self.scheduler = scheduler
            self.within_timer = Timer(scheduler, owner, self._on_within)

    def _schedule_within(self, now: int | None = None) -> None:
        if self.within_timer is None or self.within is None:
            return
        oldest: int | None = None
        for node in self.nodes:
            for lst in (node.pending, node.staging):
                for p in lst:
                    for sid in self.start_ids:
                        chain = p[sid]
                        if chain is not None and (oldest is None or chain[0][0] < oldest):
                            oldest = chain[0][0]
        if oldest is None:
            return
        limit = oldest + self.within + 1
        if self.check_from is None or limit < self.check_from:
            self.check_from = limit
        due = limit
        if now is not None and due <= now:
            due = now + 1  # still valid for events not yet processed: look again later
        if self.within_due is None or due < self.within_due:
            self.within_due = due
            self.within_timer.at(due)

    def _on_within(self, due: int, now: int) -> None:
        if due != self.within_due:
            return
        self.within_due = None
        self.check_from = None
        floor = self.scheduler.floor if self.scheduler is not None else None
        t = now if floor is None else min(now, floor)
        self.expire(t)
        self._schedule_within(now)

    def expire(self, t: int) -> None:
        seen: dict[int, Partial] = {}
        for node in self.nodes:
            node.expire(t, seen)

    def expired(self, p: Partial, t: int) -> bool:
        within = self.within
        assert within is not None
        for sid in self.start_ids:
            chain = p[sid]
            if chain is not None and abs(chain[0][0] - t) > within:
                return True
        return False

    def start(self, now: int) -> None:
        for node in self.nodes:
            node.init()
        # only start states schedule here: of an absent pair (`not A for T or not B for T`)
        # the left side, which has the later id, fires first at the shared time, as in Siddhi
        for node in reversed(self.nodes):
            if isinstance(node, AbsentNode):
                node.start(now)

    def begin(self) -> None:
        self.returned = []

    def finish(self, t: int) -> None:
        if self.returned:
            done, self.returned = self.returned, []
            self.emit(done)

    def receive(self, stream: str, chunk: Chunk) -> None:
        nodes = self.receivers[stream]
        backwards = self.backwards[stream]
        within = self.within
        sequence = self.sequence
        returned: list[Partial] = []
        for ev in zip(chunk.ts, chunk.rows, strict=True):
            t = ev[0]
            if within is not None and (self.check_from is None or t >= self.check_from):
                self.expire(t)
            if sequence:
                self.root_reset()
                self.root_update()
            else:
                for node in nodes:
                    if node.staging:
                        node.update_state()
            self.returned = []
            for node in backwards:
                if node.pending:
                    node.process(ev)
            if self.reset_requested:
                for node in self.reset_requested:
                    node.init()
                self.reset_requested = []
            if self.returned:
                returned.extend(self.returned)
                self.returned = []
        if self.within_timer is not None and self.within_due is None:
            self._schedule_within()  # later partials start later: the pending timer covers them
        if returned:
            self.emit(returned)

    # ---- state --------------------------------------------------------------------------

    def snapshot(self) -> Any:
        ids: dict[int, int] = {}
        partials: list[Partial] = []
        for node in self.nodes:
            for lst in node.lists():
                for p in lst:
                    if id(p) not in ids:
                        ids[id(p)] = len(partials)
                        partials.append(p)
        return {
            "within_due": self.within_due,
            "partials": [list(p) for p in partials],
            "nodes": [
                {"lists": [[ids[id(p)] for p in lst] for lst in node.lists()], "extra": node.extra_state()}
                for node in self.nodes
            ],
        }

    def restore(self, state: Any) -> None:
        partials = [_restore_partial(p) for p in state["partials"]]
        self.within_due = state["within_due"]
        self.check_from = None
        for node, saved in zip(self.nodes, state["nodes"], strict=True):
            pending, staging = saved["lists"]
            node.pending = [partials[i] for i in pending]
            node.staging = [partials[i] for i in staging]
            node.restore_extra(saved["extra"])


def _restore_partial(p: list[Any]) -> Partial:
    out: Partial = []
    for slot in p[:-1]:
        out.append(None if slot is None else [(ev[0], tuple(ev[1])) for ev in slot])
    out.append(p[-1])
    return out
