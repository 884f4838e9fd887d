"""Partitions at run time: one instance of the partition's queries per key, created on
the first event for that key, each with its own inner streams, windows, aggregates,
patterns and timers. `@purge` drops instances idle for longer than a period.

One key's instance can also be taken out and put back alone (`snapshot_key`,
`restore_key`, `drop_key`, its timers included), and `key_function` tells which keys a
row of a partitioned stream goes to: a distributed runner (app/spark/) keeps each key's
state in its own keyed state store and hosts keys on whichever worker their events reach.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer

Router = Callable[[Chunk, Callable[[Any, list[int], list[tuple[Any, ...]]], None]], None]


class PartitionInstance:
    __slots__ = ("key", "inputs", "states", "last_used", "starters")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.inputs: dict[str, list[Callable[[Chunk], None]]] = {}  # stream -> query receivers
        self.states: dict[str, dict[str, Any]] = {}  # query name -> stateful parts
        self.last_used = 0
        self.starters: list[Callable[[], None]] = []


class PartitionRuntime:
    def __init__(
        self,
        name: str,
        routers: dict[str, Router],
        build_instance: Callable[[Any, PartitionInstance], None],
        scheduler: Scheduler,
        now: Callable[[], int],
        purge: tuple[int, int] | None,
        unpartitioned: set[str],
    ) -> None:
        self.name = name
        self.routers = routers
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
        router = self.routers.get(stream)
        if router is None:
            return lambda chunk: self._broadcast(stream, chunk)

        def deliver(key: Any, ts: list[int], rows: list[tuple[Any, ...]]) -> None:
            inst = self.instances.get(key)
            if inst is None:
                inst = self.instance(key)
            inst.last_used = ts[-1]
            receivers = inst.inputs.get(stream)
            if receivers:
                chunk = Chunk(ts, rows, None, None, len(ts) == 1)
                for receive in receivers:
                    receive(chunk)

        return lambda chunk: router(chunk, deliver)

    def _broadcast(self, stream: str, chunk: Chunk) -> None:
        """A stream the partition does not key: every existing instance sees it."""
        for inst in list(self.instances.values()):
            for receive in inst.inputs.get(stream, ()):
                receive(chunk)

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

    # ---- one key ----------------------------------------------------------------------

    def keys(self) -> list[Any]:
        return list(self.instances)

    def key_function(self, stream: str) -> Callable[[tuple[Any, ...], int], list[Any]] | None:
        """`fn(row, timestamp)`: the keys a row of `stream` goes to (none for a null value
        key; every range whose condition holds, in declared order); None if the partition
        does not key `stream` (every instance sees its events)."""
        router = self.routers.get(stream)
        if router is None:
            return None

        def keys_of(row: tuple[Any, ...], ts: int) -> list[Any]:
            found: list[Any] = []
            router(Chunk([ts], [row], None, None, True), lambda key, _ts, _rows: found.append(key))
            return found

        return keys_of

    def keys_function(
        self, stream: str
    ) -> Callable[[list[tuple[Any, ...]], list[int]], list[list[Any]]] | None:
        """`fn(rows, timestamps)`: each row's keys, as `key_function` gives them, for a
        whole batch in one pass of the router (one call per row costs more than the key)."""
        router = self.routers.get(stream)
        one = self.key_function(stream)
        if router is None or one is None:
            return None

        def keys_of(rows: list[tuple[Any, ...]], ts: list[int]) -> list[list[Any]]:
            at = {id(r): i for i, r in enumerate(rows)}
            if len(at) != len(rows):  # one row object twice: the router's runs cannot tell them apart
                return [one(r, t) for r, t in zip(rows, ts, strict=True)]
            found: list[list[Any]] = [[] for _ in rows]

            def deliver(key: Any, _ts: list[int], run: list[tuple[Any, ...]]) -> None:
                for r in run:
                    found[at[id(r)]].append(key)

            router(Chunk(ts, rows, None, None, False), deliver)
            return found

        return keys_of

    def snapshot_key(self, key: Any) -> list[Any] | None:
        """The state of one key's instance, timers included: `[last used, queries' states,
        timers [[due, owner id below the key], ...] in firing order]`; None if the key has
        no instance."""
        inst = self.instances.get(key)
        if inst is None:
            return None
        prefix = _owner_prefix(self.name, key)
        timers = [
            [due, owner[len(prefix) :]]
            for due, _, owner in sorted(self.scheduler.pending())
            if owner.startswith(prefix)
        ]
        return [inst.last_used, _queries_state(inst), timers]

    def restore_key(self, key: Any, state: list[Any]) -> None:
        """Replace the key's instance (if any) with one holding `state` (`snapshot_key`'s),
        its timers pending again. The instance's starters do not run: its timers come back."""
        last_used, queries, timers = state
        self._drop(key)
        self._rebuild(key, last_used, queries)
        prefix = _owner_prefix(self.name, key)
        self.scheduler.restore([[due, prefix + rel] for due, rel in timers])

    def drop_key(self, key: Any) -> bool:
        """Forget the key's instance and its timers; False if it had none."""
        if key not in self.instances:
            return False
        self._drop(key)
        return True

    # ---- state ----------------------------------------------------------------------

    def snapshot(self) -> Any:
        """Per key: the key, when it was last used, and its queries' states in the order
        of the partition's queries (their names may change with edits elsewhere)."""
        return [[key, inst.last_used, _queries_state(inst)] for key, inst in self.instances.items()]

    def restore(self, state: Any) -> None:
        for key in list(self.instances):
            self._drop(key)
        for key, last_used, queries in state:
            self._rebuild(tuple(key) if isinstance(key, list) else key, last_used, queries)

    def _rebuild(self, key: Any, last_used: int, queries: list[dict[str, Any]]) -> None:
        """A new instance for `key` holding the queries' saved states (its starters do not run)."""
        inst = PartitionInstance(key)
        self.build_instance(key, inst)
        self.instances[key] = inst
        inst.last_used = last_used
        for parts, saved in zip(inst.states.values(), queries, strict=True):
            for k, obj in parts.items():
                if k in saved:
                    obj.restore(saved[k])


def _queries_state(inst: PartitionInstance) -> list[dict[str, Any]]:
    """The states of one instance's queries, in the order of the partition's queries."""
    return [{k: v.snapshot() for k, v in parts.items()} for parts in inst.states.values()]


def _owner_prefix(name: str, key: Any) -> str:
    return f"partition/{name}/{key!r}/"


owner_prefix = _owner_prefix
