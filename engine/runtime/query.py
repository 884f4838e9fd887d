"""Pipeline stages of a running query: filter, window, selector, rate limiter, output.

Stages push chunks to `next`. A query instance is the chain built for one query (or for
one partition key of a partitioned query) plus its stateful parts, for snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.errors import ProcessingError
from engine.events import Chunk
from engine.runtime.selector import SelectorRuntime

ChunkFn = Callable[[Chunk], "Chunk | None"]


class Stage:
    __slots__ = ("next",)

    def __init__(self) -> None:
        self.next: Stage | None = None

    def process(self, chunk: Chunk) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class FunctionStage(Stage):
    """A generated chunk function (filters, stream functions, fused filter+projection)."""

    __slots__ = ("fn", "query")

    def __init__(self, fn: ChunkFn, query: str) -> None:
        super().__init__()
        self.fn = fn
        self.query = query

    def process(self, chunk: Chunk) -> None:
        try:
            res = self.fn(chunk)
        except ProcessingError:
            raise
        except Exception as exc:
            msg = f"{type(exc).__name__}: {exc}"
            raise ProcessingError(msg, self.query) from exc
        if res is not None and res.rows:
            assert self.next is not None
            self.next.process(res)


class SelectStage(Stage):
    __slots__ = ("selector",)

    def __init__(self, selector: SelectorRuntime) -> None:
        super().__init__()
        self.selector = selector

    def process(self, chunk: Chunk) -> None:
        out = self.selector.process(chunk)
        if out is not None:
            assert self.next is not None
            self.next.process(out)


class CallbackStage(Stage):
    """The end of a chain: hands chunks to a function (a junction, a table action...)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Chunk], None]) -> None:
        super().__init__()
        self.fn = fn

    def process(self, chunk: Chunk) -> None:
        self.fn(chunk)


class WindowStage(Stage):
    """Adapts a window (which emits through a callback) to the stage chain."""

    __slots__ = ("window",)

    def __init__(self, window: Any) -> None:
        super().__init__()
        self.window = window
        window.emit = self._emit

    def _emit(self, chunk: Chunk) -> None:
        assert self.next is not None
        self.next.process(chunk)

    def process(self, chunk: Chunk) -> None:
        self.window.process(chunk)


class SlidingAggregateStage(Stage):
    """A `length` window and an aggregating selector as one loop (`process_length`) for
    chunks of current events; anything else takes the window, then the selector. The window
    object keeps its state either way, so snapshots do not depend on the path taken."""

    __slots__ = ("window", "selector")

    def __init__(self, window: Any, selector: SelectorRuntime) -> None:
        super().__init__()
        self.window = window
        self.selector = selector
        window.emit = self._emit

    def _emit(self, chunk: Chunk) -> None:
        out = self.selector.process(chunk)
        if out is not None:
            assert self.next is not None
            self.next.process(out)

    def process(self, chunk: Chunk) -> None:
        if chunk.kinds is not None or self.window.length <= 0:
            self.window.process(chunk)
            return
        out = self.selector.process_length(self.window, chunk)
        if out is not None:
            assert self.next is not None
            self.next.process(out)


def chain(*stages: Stage) -> Stage:
    for a, b in zip(stages, stages[1:], strict=False):
        a.next = b
    return stages[0]


class QueryInstance:
    """One built chain with the keyed stateful parts it owns."""

    def __init__(self, head: Stage, states: dict[str, Any], start: Callable[[], None] | None = None) -> None:
        self.head = head
        self.states = states
        self._start = start

    def receive(self, chunk: Chunk) -> None:
        self.head.process(chunk)

    def start(self) -> None:
        if self._start is not None:
            self._start()

    def snapshot(self) -> dict[str, Any]:
        return {k: obj.snapshot() for k, obj in self.states.items()}

    def restore(self, state: dict[str, Any]) -> None:
        for k, obj in self.states.items():
            if k in state:
                obj.restore(state[k])
