"""A value partition whose only query is `every e1=S[f1] -> e2=S[f2] [within T]` over the
partitioned stream, run as one keyed operator: open matches per key in one dict, one
generated loop per chunk with the key and filters inlined, no per-key query instances.

It gives what the partition of FollowedBy instances gives (per-key isolation, `within`,
`@purge`, exact snapshots); the general path stays the reference and tests compare them.
Matches found while one chunk is processed go to the selector together when nothing in
the plan reads the output stream (only subscribers see it, and they get the same events
in the same order); otherwise each match is selected alone, as Siddhi does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer

Row = tuple[Any, ...]
Partial = list[Any]
Filter = Callable[[Partial, Row], bool]

# what the generated loops share (keyed_sequence.py has its own body): each event's key,
# null keys skipped, the key's last use noted for @purge
LOOP_HEAD = """
def receive(chunk):
    opens = op.pairs
    used = op.last_used
    f1 = op.f1
    f2 = op.f2
    merge = op.merge
    completed = []
    for t, r in zip(chunk.ts, chunk.rows):
        k = {key}
        if k is None{nan}:
            continue{used}"""

_LOOP = (
    LOOP_HEAD
    + """
        lst = opens.get(k)
        if lst:{trim}{hoist}
            keep = []
            for o in lst:
                r1 = o[1]
                try:
                    hit = {f2}
                except (TypeError, ZeroDivisionError):
                    hit = f2 is None or f2([[o], [(t, r)], t], r)
                if hit:
                    completed.append((o[0], r1, t, r))
                    if not merge:
                        op.emit(completed)
                        completed = []
                else:
                    keep.append(o)
            lst = opens[k] = keep
        try:
            opened = {f1}
        except (TypeError, ZeroDivisionError):
            opened = f1 is None or f1([[(t, r)], None, t], r)
        if opened:
            if lst is None:
                opens[k] = [(t, r)]
            else:
                lst.append((t, r))
    if completed:
        op.emit(completed)
"""
)

_TRIM = """
            if abs(lst[0][0] - t) > {within}:
                drop = 1
                n = len(lst)
                while drop < n and abs(lst[drop][0] - t) > {within}:
                    drop += 1
                del lst[:drop]"""

_PROJECT = """
def project(completed):
    return [{row} for t1, r1, t, r2 in completed]
"""


_ITEM = re.compile(r"\br\[(\d+)\]")


def _without_key_test(test: str, key_code: str) -> str:
    """`e1.k == k` on the partition key holds for every open match of a key's bucket (both
    events have that key, and it is not null): leave that conjunct out of e2's condition."""
    m = re.fullmatch(r"r\[(\d+)\]", key_code)
    if m is None:
        return test
    i = m.group(1)
    for same in (f"(r1[{i}] == r[{i}] != None)", f"(r[{i}] == r1[{i}] != None)"):
        if test == same:
            return "True"
        if test.startswith(f"({same} and ") and test.endswith(")"):
            return test[len(same) + 6 : -1]
        if test.startswith("(") and test.endswith(f" and {same})"):
            return test[1 : -len(same) - 6]
    return test


def _hoisted(test: str) -> tuple[str, str]:
    """Items of the current event read once per event, not once per open match."""
    if "'" in test or '"' in test:
        return test, ""  # a string literal might contain text that looks like an item
    items = sorted(set(_ITEM.findall(test)), key=int)
    if not items:
        return test, ""
    lines = "".join(f"\n            _c{i} = r[{i}]" for i in items)
    return _ITEM.sub(lambda m: f"_c{m.group(1)}", test), lines


class KeyedFollowedBy:
    loop = _LOOP  # the generated loop's template (keyed_sequence.py has its own)

    def __init__(
        self,
        name: str,
        key_code: str,
        f1: Filter | None,
        f2: Filter | None,
        f1_fast: str | None,
        f2_fast: str | None,
        within: int | None,
        select: Callable[[list[Partial]], None],
        project_fast: str | None,
        out: Callable[[Chunk], None],
        merge: bool,
        scheduler: Scheduler,
        now: Callable[[], int],
        purge: tuple[int, int] | None,
        namespace: dict[str, Any],
    ) -> None:
        self.name = name
        self.f1 = f1
        self.f2 = f2
        self.within = within
        self.select = select
        self.merge = merge
        self.now = now
        self.purge = purge
        self.pairs: dict[Any, list[tuple[int, Row]]] = {}  # key -> open matches (opening event)
        self.last_used: dict[Any, int] = {}
        self.scheduler = scheduler
        period = within
        if purge is not None:
            period = purge[0] if period is None else min(period, purge[0])
        self.sweep_period = period
        self.timer = Timer(scheduler, f"partition/{name}/sweep", self._on_sweep) if period else None
        self.next_sweep: int | None = None
        self.starters: list[Callable[[], None]] = [self.start]
        full = f2_fast or "True"
        reduced = _without_key_test(full, key_code)
        test, hoist = _hoisted(reduced)
        src = self.loop.format(
            key=key_code,
            # a NaN key's bucket holds NaN keys, yet `e1.k == k` never holds for them
            nan=" or k != k" if reduced != full else "",
            used="\n        used[k] = t" if purge is not None else "",
            trim=_TRIM.format(within=within) if within is not None else "",
            hoist=hoist,
            f1="True" if f1_fast is None else f1_fast,
            f2=test,
        )
        ns = dict(namespace)
        ns["op"] = self
        exec(compile(src, f"<partition {name} {type(self).__name__}>", "exec"), ns)  # noqa: S102 - generated
        self.receive: Callable[[Chunk], None] = ns["receive"]
        self.out = out
        self.project: Callable[[list[Any]], list[Row]] | None = None
        if project_fast is not None:
            exec(compile(_PROJECT.format(row=project_fast), f"<partition {name} projection>", "exec"), ns)  # noqa: S102
            self.project = ns["project"]

    def emit(self, completed: list[tuple[int, Row, int, Row]]) -> None:
        """Selection of matched (opening time, opening row, time, completing row) tuples."""
        if self.project is not None:
            try:
                rows = self.project(completed)
            except (TypeError, ZeroDivisionError):
                rows = None
            if rows is not None:
                self.out(Chunk([c[2] for c in completed], rows))
                return
        self.select([[[(t1, r1)], [(t, r)], t] for t1, r1, t, r in completed])

    def receiver(self, stream: str) -> Callable[[Chunk], None]:
        return self.receive

    def start(self) -> None:
        if self.timer is not None and self.sweep_period is not None and self.next_sweep is None:
            self.next_sweep = self.now() + self.sweep_period
            self.timer.at(self.next_sweep)

    # ---- sweeping: within on the clock, and @purge ----------------------------------------------

    def _on_sweep(self, due: int, now: int) -> None:
        if due != self.next_sweep:
            return
        floor = self.scheduler.floor
        t = now if floor is None else min(now, floor)
        within = self.within
        if within is not None:
            for k in list(self.pairs):
                kept = [pair for pair in self.pairs[k] if abs(pair[0] - t) <= within]
                if kept:
                    self.pairs[k] = kept
                else:
                    del self.pairs[k]
        if self.purge is not None:
            idle = self.purge[1]
            for k in [k for k, used in self.last_used.items() if now - used >= idle]:
                del self.last_used[k]
                self.pairs.pop(k, None)
        assert self.sweep_period is not None and self.timer is not None
        self.next_sweep = due + self.sweep_period
        self.timer.at(self.next_sweep)

    # ---- state ----------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        return {
            "open": [[k, [list(pair) for pair in lst]] for k, lst in self.pairs.items()],
            "used": [[k, t] for k, t in self.last_used.items()],
            "next_sweep": self.next_sweep,
        }

    def restore(self, state: Any) -> None:
        def key(k: Any) -> Any:
            return tuple(k) if isinstance(k, list) else k

        self.pairs = {key(k): [(t, tuple(row)) for t, row in lst] for k, lst in state["open"]}
        self.last_used = {key(k): t for k, t in state["used"]}
        self.next_sweep = state["next_sweep"]
