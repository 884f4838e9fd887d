"""The running selector: executes the generated `process` function and holds the
aggregation state (one slot list, or one per group-by key)."""

from __future__ import annotations

import functools
from itertools import compress
from operator import add, itemgetter
from typing import Any

from engine.errors import ProcessingError
from engine.events import Chunk
from engine.runtime import helpers
from engine.runtime.aggregators import OBJECT_AGGREGATORS, restore_slot, snapshot_slot


def _sort_key(index: int, value_row: tuple[Any, ...]) -> tuple[int, Any]:
    v = value_row[index]
    return (0, 0) if v is None else (1, v)


def order_limit(
    ts: list[int],
    rows: list[tuple[Any, ...]],
    kinds: list[int] | None,
    keys: list[Any] | None,
    order: list[tuple[int, bool]],
    offset: int | None,
    limit: int | None,
    current_on: bool,
    expired_on: bool,
) -> tuple[list[int], list[tuple[Any, ...]], list[int] | None, list[Any] | None] | None:
    """Siddhi's per-chunk `order by`, then `offset`, then `limit`."""
    n = len(rows)
    items = list(range(n))
    if order:
        k = kinds or [0] * n
        sorted_items: list[int] = []
        run: list[int] = []
        run_kind = k[0] if n else 0

        def flush() -> None:
            def cmp(a: int, b: int) -> int:
                for idx, asc in order:
                    va, vb = rows[a][idx], rows[b][idx]
                    if va == vb:
                        continue
                    if va is None:
                        return 1  # nulls sort last in both directions
                    if vb is None:
                        return -1
                    c = -1 if va < vb else 1
                    return c if asc else -c
                return 0

            run.sort(key=functools.cmp_to_key(cmp))
            sorted_items.extend(run)

        for i in items:
            if k[i] != run_kind:
                flush()
                run = []
                run_kind = k[i]
            run.append(i)
        flush()
        items = sorted_items
    if offset is not None:
        items = items[offset:]
    if limit is not None:
        kept = []
        count = 0
        for i in items:
            kind = 0 if kinds is None else kinds[i]
            if (limit > count and kind == 0 and current_on) or (kind == 1 and expired_on):
                count += 1
                kept.append(i)
        items = kept
    if not items:
        return None
    out_kinds = None if kinds is None else [kinds[i] for i in items]
    out_keys = None if keys is None else [keys[i] for i in items]
    return [ts[i] for i in items], [rows[i] for i in items], out_kinds, out_keys


class SelectorCode:
    """The compiled selector of one query, shared by all its (partition) instances."""

    def __init__(
        self, source: str, namespace: dict[str, Any], init: list[str], group_by: bool, query: str
    ) -> None:
        self.source = source
        self.query = query
        self.group_by = group_by
        ns = dict(namespace)
        for name, cls in OBJECT_AGGREGATORS.items():
            ns[name] = cls
        ns.update(
            _compress=compress,
            _order_limit=order_limit,
            _itemgetter=itemgetter,
            _reduce=functools.reduce,
            _add=add,
        )
        ns["_has_objects"] = self.has_objects = any(code.startswith("_agg_") for code in init)
        self.new_state = eval("lambda: [" + ", ".join(init) + "]", ns)  # noqa: S307 - generated
        exec(compile(source, f"<selector {query}>", "exec"), ns)  # noqa: S102 - generated
        self.function = ns["process"]
        # the sliding length window fused in (see `SlidingAggregateStage`), when generated
        self.length_function = ns.get("process_length")

    def instance(self) -> SelectorRuntime:
        return SelectorRuntime(self)


class SelectorRuntime:
    """One instance's aggregation state: a slot list, or one per group-by key."""

    __slots__ = ("code", "st", "groups", "_fn")

    def __init__(self, code: SelectorCode) -> None:
        self.code = code
        self.st: list[Any] = code.new_state()
        self.groups: dict[Any, list[Any]] = {}
        self._fn = code.function

    def reset(self) -> None:
        if self.code.group_by:
            self.groups.clear()
        else:
            self.st = self.code.new_state()

    def process(self, chunk: Chunk) -> Chunk | None:
        return self._run(self._fn, chunk.ts, chunk.rows, chunk.kinds)

    def process_length(self, window: Any, chunk: Chunk) -> Chunk | None:
        """The length window's work and this selector's, on a chunk of current events."""
        assert self.code.length_function is not None
        return self._run(self.code.length_function, window, chunk.ts, chunk.rows)

    def _run(self, fn: Any, *args: Any) -> Chunk | None:
        try:
            res = fn(self, *args)
        except ProcessingError:
            raise
        except Exception as exc:  # a bug, or a value Siddhi would reject at run time
            msg = f"{type(exc).__name__}: {exc}"
            raise ProcessingError(msg, self.code.query) from exc
        if res is None:
            return None
        return Chunk(res[0], res[1], res[2], res[3] if len(res) > 3 else None)

    def snapshot(self) -> Any:
        if not self.code.has_objects:  # slots of plain values: a copy of each list will do
            return {"st": self.st[:], "groups": [[k, st[:]] for k, st in self.groups.items()]}
        return {
            "st": [snapshot_slot(v) for v in self.st],
            "groups": [[k, [snapshot_slot(v) for v in st]] for k, st in self.groups.items()],
        }

    def restore(self, state: Any) -> None:
        self.st = [restore_slot(v) for v in state["st"]]
        self.groups = {
            (tuple(k) if isinstance(k, list) else k): [restore_slot(v) for v in st]
            for k, st in state["groups"]
        }


def base_namespace() -> dict[str, Any]:
    """Names every piece of generated code may use."""
    ns: dict[str, Any] = {}
    for name in dir(helpers):
        if not name.startswith("__"):
            obj = getattr(helpers, name)
            ns[name if name.startswith("_") else "_" + name] = obj
    ns["_compress"] = compress
    return ns
