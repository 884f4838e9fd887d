"""Windows kept by a condition: `expression` (sliding) and `expressionBatch` (Siddhi 5.1).

The condition is a bool expression over the event (`price`, or `S.price`), the window's
oldest event (`first.price`, `eventTimestamp(first)`) and the newest (`last...`), and may
aggregate (`count()`, `sum(price)`). As in Siddhi the aggregates live in the condition
itself: evaluating it for an arriving event adds the event, evaluating it for a leaving
event removes it, evaluating it in reset mode clears them; `and`/`or` short-circuit, so an
aggregate the evaluation does not reach is not updated (Siddhi's executors behave so too).

The condition is compiled by the planner (`WindowCondition`); given as an attribute it is
compiled again whenever an event carries another text, and every retained event is then
evaluated afresh against it, as Siddhi does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import ProcessingError
from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.aggregators import restore_slot, snapshot_slot
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, register
from engine.runtime.windows.shared import Ev, Out, Row, constant_reader, load_list, save
from engine.types import AttrType

# (st, kind, t, row, first_t, first_row, last_t, last_row) -> bool
ConditionFn = Callable[[list[Any], int, int, Row, int, Row, int, Row], bool]


@dataclass(frozen=True)
class WindowCondition:
    """One compiled condition: the function and a factory of its aggregate slots."""

    text: str
    fn: ConditionFn
    new_state: Callable[[], list[Any]]


@dataclass(frozen=True)
class ConditionSource:
    """The window's `expression` argument: a compiled constant, or a per-event text
    (`text_of`) compiled on change by `compile` (raises ValueError with the reason)."""

    static: WindowCondition | None
    text_of: Callable[[Row], Any] | None = None
    compile: Callable[[str], WindowCondition] | None = None


class _Conditional(Window):
    """The condition, its aggregate state and the switch to a new text."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        source = args[0]
        assert isinstance(source, ConditionSource)
        self.source = source
        self.cond: WindowCondition | None = source.static
        self.st: list[Any] = source.static.new_state() if source.static is not None else []

    def _text_changed(self, row: Row) -> bool:
        """Whether the event switches the window to another condition (compiling it)."""
        if self.source.text_of is None:
            return False
        text = self.source.text_of(row)
        if not isinstance(text, str):
            msg = f"{self._name} window: the expression attribute is {text!r}"
            raise ProcessingError(msg, self.ctx.query)
        if self.cond is not None and text == self.cond.text:
            return False
        self._switch(text)
        return True

    def _switch(self, text: str) -> None:
        assert self.source.compile is not None
        try:
            self.cond = self.source.compile(text)
        except ValueError as e:
            msg = f"{self._name} window: expression '{text}': {e}"
            raise ProcessingError(msg, self.ctx.query) from e
        self.st = self.cond.new_state()

    @property
    def _name(self) -> str:
        return "expression"

    def _eval(self, kind: int, ev: Ev, first: Ev, last: Ev) -> bool:
        assert self.cond is not None
        return self.cond.fn(self.st, kind, ev[0], ev[1], first[0], first[1], last[0], last[1]) is True

    def _save_condition(self) -> dict[str, Any]:
        return {
            "text": self.cond.text if self.cond is not None and self.source.text_of is not None else None,
            "st": [snapshot_slot(v) for v in self.st],
        }

    def _load_condition(self, state: dict[str, Any]) -> None:
        if state["text"] is not None:
            self._switch(state["text"])
        self.st = [restore_slot(v) for v in state["st"]]


class ExpressionWindow(_Conditional):
    """Sliding: an arriving event joins the window; while the condition is false the oldest
    events leave (expired, stamped now) until it holds again, the arriving event included."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.queue: deque[Ev] = deque()

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            if self._text_changed(r):
                kept, self.queue = self.queue, deque()
                for ev in kept:
                    self._arrive(out, now, ev)
            self._arrive(out, now, (t, r))
            out.current(t, r)
        self.emit(out.chunk())

    def _arrive(self, out: Out, now: int, ev: Ev) -> None:
        queue = self.queue
        queue.append(ev)
        if self._eval(CURRENT, ev, queue[0], ev):
            return
        while queue:
            gone = queue.popleft()
            out.expired(now, gone[1])
            if self._eval(EXPIRED, gone, queue[0] if queue else gone, ev):
                break

    def contents(self) -> list[Ev]:
        return list(self.queue)

    def snapshot(self) -> Any:
        return {"queue": save(self.queue), **self._save_condition()}

    def restore(self, state: Any) -> None:
        self._load_condition(state)
        self.queue = deque(load_list(state["queue"]))


class ExpressionBatchWindow(_Conditional):
    """Batching: events gather while the condition holds; the event that makes it false
    flushes the gathered batch (current, stamped now) after the previous batch (expired),
    and starts the next batch, or ends this one with `include.triggering.event`. With
    `stream.current.event` events pass on as they arrive and leave, expired, in batches.
    Siddhi's quirks are kept: the flush re-adds the triggering event to the aggregates
    even when it ends the batch, and joins search the gathering (not the emitted) batch."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        include = args[1] if len(args) > 1 else False
        self.include: Callable[[Row], Any] = include if callable(include) else constant_reader(include)
        self.stream = bool(args[2]) if len(args) > 2 else False
        # the gathering batch; in stream mode the expired events a re-evaluation left for
        # the next output (Siddhi's currentEventQueue, which a join searches in both modes)
        self.current: list[Ev] = []
        self.expired: list[Ev] = []  # the last flushed batch (stream mode: the retained events)

    @property
    def _name(self) -> str:
        return "expressionBatch"

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        outs: list[Out] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            if self._text_changed(r):
                self._reevaluate(now, outs)
            if self.stream:
                self._stream_event(now, (t, r), outs, True)
            else:
                self._batch_event(now, (t, r), outs)
        for out in outs:
            if out:
                self.emit(out.chunk())

    def _reevaluate(self, now: int, outs: list[Out]) -> None:
        if self.stream:
            kept, self.expired = self.expired, []
            for ev in kept:
                self._stream_event(now, ev, outs, False)
        else:
            kept, self.current = self.current, []
            for ev in kept:
                self._batch_event(now, ev, outs)

    def _restart(self, ev: Ev, first: Ev) -> None:
        """The condition failed: reset its aggregates and add the event again."""
        self._eval(RESET, ev, first, ev)
        self._eval(CURRENT, ev, first, ev)

    def _batch_event(self, now: int, ev: Ev, outs: list[Out]) -> None:
        first = self.current[0] if self.current else ev
        if self._eval(CURRENT, ev, first, ev):
            self.current.append(ev)
            return
        self._restart(ev, first)
        out = Out()
        out.expire_all(now, self.expired)
        self.expired = []
        if self.current:
            batch = [(now, r) for _, r in self.current]
            out.current_all(batch)
            self.expired = batch
            self.current = []
            if self.include(ev[1]) is True:
                out.current(*ev)
                self.expired.append((now, ev[1]))
            else:
                self.current.append(ev)
        else:
            out.expired(now, ev[1])
            out.current(now, ev[1])
        outs.append(out)

    def _stream_event(self, now: int, ev: Ev, outs: list[Out], output: bool) -> None:
        first = self.expired[0] if self.expired else ev
        out = Out()
        if output and self.current:
            for t, r in self.current:
                out.expired(t, r)
            self.current = []
        if self._eval(CURRENT, ev, first, ev):
            self.expired.append(ev)
            if output:
                out.current(*ev)
                outs.append(out)
            return
        self._restart(ev, first)
        if self.expired:
            gone = [(now, r) for _, r in self.expired]
            self.expired = []
            if self.include(ev[1]) is True:
                if output:
                    out.current(*ev)
                    out.expire_all(now, gone)
                    out.expired(now, ev[1])
                else:
                    self.current += gone
                    self.current.append(ev)
            else:
                if output:
                    out.expire_all(now, gone)
                    out.current(*ev)
                else:
                    self.current += gone
                self.expired = [ev]
        elif output:
            out.expired(now, ev[1])
            out.current(now, ev[1])
        else:
            self.current.append(ev)
        if output:
            outs.append(out)

    def contents(self) -> list[Ev]:
        return list(self.current)

    def snapshot(self) -> Any:
        return {
            "current": save(self.current),
            "expired": save(self.expired),
            **self._save_condition(),
        }

    def restore(self, state: Any) -> None:
        self._load_condition(state)
        self.current = load_list(state["current"])
        self.expired = load_list(state["expired"])


STRING = (AttrType.STRING,)
BOOL = (AttrType.BOOL,)
_EXPR = Param("expression", STRING, dynamic=True)
_INCLUDE = Param("include.triggering.event", BOOL, dynamic=True)

register(WindowSpec("expression", ExpressionWindow, ((_EXPR,),)))
register(
    WindowSpec(
        "expressionBatch",
        ExpressionBatchWindow,
        ((_EXPR,), (_EXPR, _INCLUDE), (_EXPR, _INCLUDE, Param("stream.current.event", BOOL))),
        batch=True,
    )
)
