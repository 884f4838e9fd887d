"""A value partition whose only query is `from S[f]#window.W(...) select <aggregates>` over
the partitioned stream, with W `length(n)`, `externalTime(ts, t)` or `externalTimeBatch(ts,
t)`, or without a window, run as one keyed operator: every key's window and aggregate slots
in one dict, one generated loop per chunk with the key, filter, window step and aggregates
inlined (the aggregates' code is the selector's own, plan/selector.py `AggregateParts`).

It gives what the partition of query instances gives. The partition sends each run of
consecutive events of one key to that key's instance as one chunk, and an aggregating
selector emits the last event of each chunk it is given: so a sliding window emits once per
run (its last event passing the filter), a batch window once per batch it closes. Events
with a null key are dropped without ending a run, as the partition's router does. `@purge`
drops idle keys at the same moments, and a null external timestamp raises the same error,
leaving the same state behind. The general path stays the reference; tests compare them.

As in keyed_followed_by.py, what one chunk yields goes out as one chunk when nothing in the
plan reads the output stream, else each output as its own chunk at the end of its run.
"""

from __future__ import annotations

import textwrap
from collections import deque
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from engine.errors import ProcessingError
from engine.events import Chunk
from engine.runtime.aggregators import OBJECT_AGGREGATORS, restore_slot, snapshot_slot
from engine.runtime.clock import Scheduler, Timer
from engine.runtime.windows.javacompat import java_rem

Row = tuple[Any, ...]

# One loop for every window: `{step}` is the window's and aggregates' work for one event
# that passed the filter, `{run_end}` what ends a run (emitting the sliding windows' output).
_LOOP = """
def receive(chunk, checked=False):
    rows = chunk.rows
    if {check_ts}not checked and None in map(_ts_of, rows):
        return op.receive_checked(chunk)
    states = op.states
    used = op.last_used
    new = op.new_state
    out_ts = []
    out_rows = []
    run_key = None
    in_run = False
    last = None
    last_t = 0
    ent = None
    st = None
    for t, row in zip(chunk.ts, rows):
        r = row
        _et = t
        k = {key}
        if k is None:
            continue
        if not in_run or not k == run_key:
            if in_run:
{run_end}
                r = row
                _et = t
            in_run = True
            run_key = k
            first = True
            ent = states.get(k)
            if ent is None:
                ent = states[k] = new()
            st = ent[0]{used}{filter}
{step}
    if in_run:
{run_end_tail}
    if out_rows:
        op.out(_Chunk(out_ts, out_rows))
"""

# the sliding windows: the run's output is the projection after its last passing event
_RUN_END_SLIDING = """
if last is not None:
    r = last
    _et = last_t
{project}
    out_ts.append(last_t)
    out_rows.append(o)
    last = None{publish}"""

_RUN_END_BATCH = """
pass{publish}"""

_PUBLISH = """
if not op.merge and out_rows:
    op.publish(out_ts, out_rows)
    out_ts = []
    out_rows = []"""

_FILTER = """
try:
    keep = {fast}
except (TypeError, ZeroDivisionError):
    keep = {safe}
if not keep:
    continue"""

# ent = [slots, window]
_LENGTH = """
buf = ent[1]
if len(buf) >= {size}:
    r = buf.popleft()
{remove}
    r = row
buf.append(r)
{add}
last = r
last_t = t"""

# ent = [slots, window of (external time, row)]
_EXTERNAL = """
x = r[{ts}]
buf = ent[1]
while buf and buf[0][0] + {size} <= x:
    r = buf.popleft()[1]
{remove}
    r = row
buf.append((x, r))
{add}
last = r
last_t = t"""

# ent = [slots]: no window, the aggregates of every event so far
_NONE = """
{add}
last = r
last_t = t"""

# ent = [slots, batch start, batch end, latest time, last row of the batch or None, its time]
_BATCH = """
x = r[{ts}]
if first:
    first = False
    if ent[2] < 0:
        ent[1] = x
        ent[2] = x + {size}
if x > ent[3]:
    ent[3] = x
if x >= ent[2]:
    if ent[4] is not None:
        r = ent[4]
        _et = ent[5]
{project}
        out_ts.append(_et)
        out_rows.append(o)
        st = ent[0] = _fresh()
        ent[4] = None
        r = row
        _et = t
    ent[2] = ent[3] + ({size} - _java_rem(ent[3] - ent[1], {size}))
{add}
ent[4] = r
ent[5] = t"""


def _drop(chunk: Chunk) -> None:
    pass


def _indent(text: str, n: int) -> str:
    return textwrap.indent(text.strip("\n"), " " * n)


class KeyedWindow:
    def __init__(
        self,
        name: str,
        query: str,
        key_code: str,
        window: str,
        size: int,
        ts_index: int | None,
        filter_fast: str | None,
        filter_safe: str | None,
        init: tuple[str, ...],
        add: str,
        remove: str,
        project: str,
        out: Callable[[Chunk], None],
        merge: bool,
        scheduler: Scheduler,
        now: Callable[[], int],
        purge: tuple[int, int] | None,
        namespace: dict[str, Any],
    ) -> None:
        self.name = name
        self.query = query
        self.window = window
        self.size = size
        self.ts_index = ts_index
        self.out = out
        self.merge = merge
        self.now = now
        self.purge = purge
        self.scheduler = scheduler
        self.states: dict[Any, list[Any]] = {}
        self.last_used: dict[Any, int] = {}
        self.starters: list[Callable[[], None]] = [self.start]
        self._timer = Timer(scheduler, f"partition/{name}/purge", self._on_purge) if purge else None
        ns = dict(namespace)
        ns.update(OBJECT_AGGREGATORS)
        ns.update(op=self, _Chunk=Chunk, _java_rem=java_rem, _deque=deque)
        fresh = "[" + ", ".join(init) + "]"
        ns["_fresh"] = eval("lambda: " + fresh, ns)  # noqa: S307 - generated
        if window == "externalTimeBatch":
            new = f"lambda: [{fresh}, 0, -1, 0, None, 0]"
            step = _BATCH.format(ts=ts_index, size=size, project=_indent(project, 8), add=add)
            run_end = _RUN_END_BATCH.format(publish=_PUBLISH)
        else:
            new = f"lambda: [{fresh}]" if window == "none" else f"lambda: [{fresh}, _deque()]"
            template = {"none": _NONE, "length": _LENGTH, "externalTime": _EXTERNAL}[window]
            step = template.format(ts=ts_index, size=size, remove=_indent(remove, 4), add=add)
            run_end = _RUN_END_SLIDING.format(
                project=_indent(project, 4), publish=textwrap.indent(_PUBLISH, "    ")
            )
        self.new_state: Callable[[], list[Any]] = eval(new, ns)  # noqa: S307 - generated
        self._fresh: Callable[[], list[Any]] = ns["_fresh"]
        ns["_ts_of"] = itemgetter(ts_index if ts_index is not None else 0)
        filt = ""
        if filter_fast is not None:
            filt = "\n" + _indent(_FILTER.format(fast=filter_fast, safe=filter_safe), 8)
        src = _LOOP.format(
            check_ts="" if ts_index is not None else "False and ",
            key=key_code,
            run_end=_indent(run_end, 16),
            run_end_tail=_indent(run_end, 8),
            used="\n        used[run_key] = t" if purge is not None else "",
            filter=filt,
            step=_indent(step, 8),
        )
        self.source = src
        exec(compile(src, f"<partition {name} keyed window>", "exec"), ns)  # noqa: S102 - generated
        self.receive: Callable[..., None] = ns["receive"]
        self._filter: Callable[[int, Row], bool] | None = None
        if filter_safe is not None:
            self._filter = eval(f"lambda _et, r: {filter_safe}", ns)  # noqa: S307 - generated
        # the key may read the event's time as `t`, as in the partition's router
        self._key: Callable[[int, Row], Any] = eval(f"lambda t, r: {key_code}", ns)  # noqa: S307

    def publish(self, ts: list[int], rows: list[Row]) -> None:
        """Outputs one by one, each the chunk a per-key selector would have emitted."""
        for t, row in zip(ts, rows, strict=True):
            self.out(Chunk([t], [row]))

    def receiver(self, stream: str) -> Callable[[Chunk], None]:
        return self.receive

    # ---- a null external timestamp --------------------------------------------------------------

    def receive_checked(self, chunk: Chunk) -> None:
        """A chunk with a null in the timestamp column. The partition's query would run the
        runs before the first event whose null reaches the window, then take that event's
        run to the window, which stops at the null: what the window took in up to there
        stays (the aggregates of a sliding window never saw it), what its selector would
        have emitted is lost, and the rest of the chunk is not processed."""
        ts, rows = chunk.ts, chunk.rows
        i = self.ts_index
        assert i is not None
        runs: list[list[Any]] = []  # [key, first index, index past its end]
        for n, (t, r) in enumerate(zip(ts, rows, strict=True)):
            k = self._key(t, r)
            if k is None:
                continue
            if runs and k == runs[-1][0]:
                runs[-1][2] = n + 1
            else:
                runs.append([k, n, n + 1])
        for k, start, end in runs:
            passed = [
                (t, r)
                for t, r in zip(ts[start:end], rows[start:end], strict=True)
                if self._key(t, r) is not None and (self._filter is None or self._filter(t, r))
            ]
            nulls = [n for n, (_, r) in enumerate(passed) if r[i] is None]
            if not nulls:
                continue
            self.receive(Chunk(ts[:start], rows[:start]), True)
            self._fail(k, ts[end - 1], passed[: nulls[0]])
        self.receive(chunk, True)

    def _fail(self, key: Any, last_t: int, before: list[tuple[int, Row]]) -> None:
        """The run of `key` reached the window with a null timestamp after `before`."""
        what = "externalTimeBatch" if self.window == "externalTimeBatch" else "externalTime"
        if self.window == "externalTime":
            ent = self.states.get(key)
            if ent is None:
                ent = self.states[key] = self.new_state()
            buf = ent[1]  # the window moves on; the aggregates never see it
            assert self.ts_index is not None
            for _, r in before:
                x = r[self.ts_index]
                while buf and buf[0][0] + self.size <= x:
                    buf.popleft()
                buf.append((x, r))
        elif before:
            # the batch's slots follow from the batch: the loop's own step, its output dropped
            saved = self.out, self.merge
            self.out, self.merge = _drop, True
            try:
                self.receive(Chunk([t for t, _ in before], [r for _, r in before]), True)
            finally:
                self.out, self.merge = saved
        else:
            self.states.setdefault(key, self.new_state())
        if self.purge is not None:
            self.last_used[key] = last_t
        msg = f"{what} timestamp is null"
        raise ProcessingError(msg, self.query)

    # ---- purge ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self.purge is not None and self._timer is not None:
            self._timer.at(self.now() + self.purge[0])

    def _on_purge(self, due: int, now: int) -> None:
        assert self.purge is not None and self._timer is not None
        interval, idle = self.purge
        for key in [k for k, used in self.last_used.items() if now - used >= idle]:
            del self.last_used[key]
            self.states.pop(key, None)
        self._timer.at(due + interval)

    # ---- state ----------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        keys = []
        for k, ent in self.states.items():
            slots = [snapshot_slot(v) for v in ent[0]]
            if self.window == "externalTimeBatch":
                last = None if ent[4] is None else list(ent[4])
                keys.append([k, slots, ent[1], ent[2], ent[3], last, ent[5]])
            elif self.window == "externalTime":
                keys.append([k, slots, [[x, list(r)] for x, r in ent[1]]])
            elif self.window == "none":
                keys.append([k, slots])
            else:
                keys.append([k, slots, [list(r) for r in ent[1]]])
        return {"keys": keys, "used": [[k, t] for k, t in self.last_used.items()]}

    def restore(self, state: Any) -> None:
        def key(k: Any) -> Any:
            return tuple(k) if isinstance(k, list) else k

        self.states = {}
        for saved in state["keys"]:
            slots = [restore_slot(v) for v in saved[1]]
            if self.window == "externalTimeBatch":
                last = None if saved[5] is None else tuple(saved[5])
                ent = [slots, saved[2], saved[3], saved[4], last, saved[6]]
            elif self.window == "externalTime":
                ent = [slots, deque((x, tuple(r)) for x, r in saved[2])]
            elif self.window == "none":
                ent = [slots]
            else:
                ent = [slots, deque(tuple(r) for r in saved[2])]
            self.states[key(saved[0])] = ent
        self.last_used = {key(k): t for k, t in state["used"]}
