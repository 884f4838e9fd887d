"""Partitions at run time: one instance of the partition's queries per key, created on
the first event for that key, each with its own inner streams, windows, aggregates,
patterns and timers. `@purge` drops instances idle for longer than a period.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer
from engine.runtime.junction import Junction

KeyFn = Callable[[int, tuple[Any, ...]], list[Any]]  # (ts, row) -> keys (a range may give several)


class PartitionInstance:
    __slots__ = ("key", "junctions", "states", "last_used", "starters")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.junctions: dict[str, Junction] = {}  # this instance's view of each stream it reads
        self.states: dict[str, dict[str, Any]] = {}  # query name -> stateful parts
        self.last_used = 0
        self.starters: list[Callable[[], None]] = []


class PartitionRuntime:
    def __init__(
        self,
        name: str,
        key_functions: dict[str, KeyFn],
        build_instance: Callable[[Any, PartitionInstance], None],
        scheduler: Scheduler,
        now: Callable[[], int],
        purge: tuple[int, int] | None,
        unpartitioned: set[str],
    ) -> None:
        self.name = name
        self.key_functions = key_functions
        self.build_instance = build_instance
        self.instances: dict[Any, PartitionInstance] = {}
        self.scheduler = scheduler
        self.now = now
        self.purge = purge  # (interval ms, idle period ms)
        self.unpartitioned = unpartitioned
        self.starters: list[Callable[[], None]] = [self.start]
        self._timer = Timer(scheduler, f"partition/{name}/purge", self._on_purge) if purge else None

    # ---- instances ------------------------------------------------------------------

    def instance(self, key: Any) -> PartitionInstance:
        inst = self.instances.get(key)
        if inst is None:
            inst = PartitionInstance(key)
            self.build_instance(key, inst)
            self.instances[key] = inst
            for start in inst.starters:
                start()
        return inst

    # ---- routing --------------------------------------------------------------------

    def receiver(self, stream: str) -> Callable[[Chunk], None]:
        key_fn = self.key_functions.get(stream)
        if key_fn is None:
            return lambda chunk: self._broadcast(stream, chunk)
        return lambda chunk: self._route(stream, key_fn, chunk)

    def _route(self, stream: str, key_fn: KeyFn, chunk: Chunk) -> None:
        """Send runs of consecutive events with the same key to that key's instance."""
        now = self.now()
        run_key: Any = _NO_KEY
        run_ts: list[int] = []
        run_rows: list[tuple[Any, ...]] = []
        for t, row in zip(chunk.ts, chunk.rows, strict=True):
            keys = key_fn(t, row)
            if len(keys) == 1 and keys[0] == run_key:
                run_ts.append(t)
                run_rows.append(row)
                continue
            if run_rows:
                self._deliver(stream, run_key, run_ts, run_rows, now)
            run_key, run_ts, run_rows = _NO_KEY, [], []
            if len(keys) == 1:
                run_key, run_ts, run_rows = keys[0], [t], [row]
            else:
                for key in keys:
                    self._deliver(stream, key, [t], [row], now)
        if run_rows:
            self._deliver(stream, run_key, run_ts, run_rows, now)

    def _deliver(self, stream: str, key: Any, ts: list[int], rows: list[tuple[Any, ...]], now: int) -> None:
        inst = self.instance(key)
        inst.last_used = now
        junction = inst.junctions.get(stream)
        if junction is not None:
            junction.publish(Chunk(ts, rows))

    def _broadcast(self, stream: str, chunk: Chunk) -> None:
        """A stream the partition does not key: every existing instance sees it."""
        for inst in list(self.instances.values()):
            junction = inst.junctions.get(stream)
            if junction is not None:
                junction.publish(chunk)

    # ---- purge ----------------------------------------------------------------------

    def start(self) -> None:
        if self.purge is not None and self._timer is not None:
            self._timer.at(self.now() + self.purge[0])

    def _on_purge(self, due: int, now: int) -> None:
        assert self.purge is not None and self._timer is not None
        interval, idle = self.purge
        for key in [k for k, inst in self.instances.items() if now - inst.last_used >= idle]:
            self._drop(key)
        self._timer.at(due + interval)

    def _drop(self, key: Any) -> None:
        self.instances.pop(key, None)
        prefix = _owner_prefix(self.name, key)
        self.scheduler.unregister_prefix(prefix)

    # ---- state ----------------------------------------------------------------------

    def snapshot(self) -> Any:
        return [
            [
                key,
                inst.last_used,
                {q: {k: v.snapshot() for k, v in parts.items()} for q, parts in inst.states.items()},
            ]
            for key, inst in self.instances.items()
        ]

    def restore(self, state: Any) -> None:
        for key in list(self.instances):
            self._drop(key)
        for key, last_used, queries in state:
            key = tuple(key) if isinstance(key, list) else key
            inst = PartitionInstance(key)
            self.build_instance(key, inst)
            self.instances[key] = inst
            inst.last_used = last_used
            for qname, parts in inst.states.items():
                saved = queries.get(qname, {})
                for k, obj in parts.items():
                    if k in saved:
                        obj.restore(saved[k])


class _NoKey:
    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


_NO_KEY = _NoKey()


def _owner_prefix(name: str, key: Any) -> str:
    return f"partition/{name}/{key!r}/"


owner_prefix = _owner_prefix
