"""Property tests: the engine's fast paths give exactly what its general paths give.

1. Filter + projection (`plan/query.py` fused_function / filter_function): one chunk, with
   any timestamps and nulls, gives what the same events sent one by one give.
2. lengthBatch by slices and the selector's bulk aggregation (`_bulk_branch`): any input
   chunking gives the same batches as one event per send through a selector generated
   without the bulk branch, and the values a plain model computes; snapshots mid-batch.
3. A `length` window fused with its aggregating selector (`SlidingAggregateStage`,
   `process_length`): the same chunks as the window followed by the selector.
4. The lazy scheduler floor: a pattern's `within` timer ahead of an unsorted chunk.
"""

from __future__ import annotations

import functools
import operator
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.events import RESET, Chunk
from engine.plan import selector as selector_plan
from engine.runtime.clock import Scheduler
from engine.runtime.query import SlidingAggregateStage
from engine.runtime.selector import SelectorRuntime

Row = tuple[Any, ...]
Record = tuple[int, int, tuple[str, ...]]  # (timestamp, kind, repr of each value)

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


def examples(n: int) -> settings:
    """Few examples per parametrized case: the file stays within seconds."""
    return settings(max_examples=n, deadline=None, suppress_health_check=_HEALTH)


# ---- running plans ------------------------------------------------------------------------


def _records(chunk: Chunk) -> list[Record]:
    """A chunk's events, values by repr: 1 and 1.0, 0.0 and -0.0 differ, nan equals nan.
    Checks on the way what fast paths downstream trust: the chunk's timestamp flags."""
    assert not chunk.uniform or len(set(chunk.ts)) <= 1, chunk.ts
    assert not chunk.ascending or chunk.ts == sorted(chunk.ts), chunk.ts
    kinds = chunk.kinds if chunk.kinds is not None else [0] * len(chunk.rows)
    return [
        (t, k, tuple(map(repr, row)))
        for t, row, k in zip(chunk.ts, chunk.rows, kinds, strict=True)
        if k != RESET
    ]


def _compile(plan: str) -> tuple[engine.Runtime, list[list[Record]]]:
    rt = engine.compile(plan, start_time=1000)
    chunks: list[list[Record]] = []
    rt.subscribe_chunks("O", lambda _s, c: chunks.append(_records(c)))
    return rt, chunks


Batch = tuple[list[Row], list[int]]  # one send: rows and their timestamps


def _feed(rt: engine.Runtime, batches: Sequence[Batch]) -> None:
    for rows, ts in batches:
        rt.send("S", rows, ts)


def _run(plan: str, batches: Sequence[Batch]) -> list[list[Record]]:
    rt, chunks = _compile(plan)
    _feed(rt, batches)
    return chunks


def _run_restored(
    plan: str, batches: Sequence[Batch], cut: int, first: Any = nullcontext
) -> list[list[Record]]:
    """Feed batches[:cut] (inside the context `first()`), snapshot, restore into a fresh
    runtime and feed the rest there."""
    with first():
        rt, chunks = _compile(plan)
        _feed(rt, batches[:cut])
        blob = rt.snapshot()
    rt.shutdown()
    rt2 = engine.compile(plan, start_time=1000)
    rt2.restore(blob)
    rt2.subscribe_chunks("O", lambda _s, c: chunks.append(_records(c)))
    _feed(rt2, batches[cut:])
    return chunks


def _batches(rows: list[Row], ts: list[int], sizes: list[int]) -> list[Batch]:
    out, i = [], 0
    for n in sizes:
        out.append((rows[i : i + n], ts[i : i + n]))
        i += n
    assert i == len(rows)
    return out


# ---- strategies -----------------------------------------------------------------------------

_DOUBLES = st.one_of(
    st.sampled_from([0.0, -0.0, 10.0, 10.5, 11.0, -3.25, 1e300, float("inf"), float("nan")]),
    st.floats(-40.0, 40.0, allow_nan=False),
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(-5, 30),
    "long": st.integers(-(10**12), 10**12) | st.integers(-3, 3),
    "double": _DOUBLES,
    "float": st.sampled_from([0.0, 1.5, 12.25, -7.0, 100.0]),
    "string": st.sampled_from(["x", "y", "z", ""]),
    "bool": st.booleans(),
}


def rows_of(kinds: Sequence[str], nulls: bool, nan: bool = True) -> st.SearchStrategy[Row]:
    values = VALUES if nan else {**VALUES, "double": _DOUBLES.filter(lambda v: v == v)}
    parts = [st.none() | values[k] if nulls else values[k] for k in kinds]
    return st.tuples(*parts)


TS_MODES = ["uniform", "few_runs", "few_runs", "many_runs", "unsorted", "descending"]


def timestamps(rnd: random.Random, n: int, mode: str) -> list[int]:
    """Timestamps the fused filter meets: uniform, sorted in few runs (the run-by-run
    comprehensions: at least _RUNS_MIN events per run on average), sorted in many runs,
    unsorted."""
    if mode == "uniform":
        return [rnd.randint(1000, 1100)] * n
    if mode == "few_runs":
        cuts = sorted(rnd.sample(range(1, n), rnd.randint(1, n // 32) - 1))
        out, t, prev = [], 1000, 0
        for end in [*cuts, n]:
            t += rnd.randint(1, 50)
            out += [t] * (end - prev)
            prev = end
        return out
    values = [rnd.randint(1000, 1000 + n // 3 + 2) for _ in range(n)]
    if mode == "many_runs":
        return sorted(values)
    if mode == "descending":
        return sorted(values, reverse=True)
    return values


def sizes(rnd: random.Random, n: int) -> list[int]:
    """A random split of n events into sends: one send, one per event, or random cuts."""
    mode = rnd.choice(["one", "singles", "random", "random", "random"])
    if n == 0:
        return []
    if mode == "one":
        return [n]
    if mode == "singles":
        return [1] * n
    p = rnd.choice([2, 4, 16])
    cuts = [i for i in range(1, n) if rnd.randrange(p) == 0]
    return [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


def ascending(rnd: random.Random, n: int) -> list[int]:
    """Non-decreasing timestamps, often repeated."""
    out, t = [], 1000
    for _ in range(n):
        t += rnd.randint(0, 3)
        out.append(t)
    return out


def picked(draw: st.DrawFn, row: st.SearchStrategy[Row], max_size: int) -> tuple[random.Random, list[Row]]:
    """Up to max_size rows picked from a small drawn pool (cheap to generate and shrink)."""
    pool = draw(st.lists(row, min_size=1, max_size=12))
    rnd = draw(st.randoms(use_true_random=True))
    return rnd, [rnd.choice(pool) for _ in range(rnd.randint(0, max_size))]


# ---- 1. filter + projection: one chunk is the events one by one ----------------------------

S3 = "define stream S (a int, b double, c string); "
S6 = "define stream S (a int, b double, c string, d long, e double, f int); "
S8 = "define stream S (a int, b double, c string, d long, e double, f int, g float, h bool); "
K3 = ["int", "double", "string"]
K6 = [*K3, "long", "double", "int"]
K8 = [*K6, "float", "bool"]

PROJECTIONS = [
    (S3 + "from S[b > 10.0] select a, b * 2.0 as d, c insert into O;", K3),
    (S3 + "from S select a, b * 2.0 as d, c insert into O;", K3),
    (S3 + "from S[b > 10.0] select * insert into O;", K3),
    (S3 + "from S[c == 'x' or a > 10] select c, a insert into O;", K3),
    (S3 + "from S[c != 'y'] select * insert into O;", K3),
    (S3 + "from S[a / b > 1.0] select a / b as q, a % 7 as m, b / a as r, c insert into O;", K3),
    (S3 + "from S[b > 10.0] select a, eventTimestamp() as t insert into O;", K3),
    (S3 + "from S[eventTimestamp() > 1020] select * insert into O;", K3),
    ("define stream S (v double); from S[v > 10.0] select v * 2.0 as w insert into O;", ["double"]),
    ("define stream S (v double); from S select v / 2.0 as w insert into O;", ["double"]),
    (S6 + "from S[e < 20.0 and a > 0] select f, e, d + a as da, c insert into O;", K6),
    (S8 + "from S[e < 20.0 and h] select h, g * 2.0 as g2, a + f as af, d, c insert into O;", K8),
    (S8 + "from S[b > 10.0 or f > 20] select g, a / f as q, b insert into O;", K8),
    (S8 + "from S[e > 0.0] select * insert into O;", K8),
    # two queries of one stream: the second finds the chunk flagged ascending by the first
    (S3 + "from S[b > 10.0] select a insert into M; from S[a > 0] select a, b * 2.0 as d insert into O;", K3),
    # chained: the second query takes the first one's output, flagged ascending
    (
        S3
        + "from S[b > 10.0] select a, b, c insert into M; from M[a > 0] select a, b * 2.0 as d insert into O;",
        K3,
    ),
    (
        S3
        + "from S[b > 10.0] insert into M; from M[eventTimestamp() > 1020] select c, eventTimestamp() as t "
        "insert into O;",
        K3,
    ),
]


@st.composite
def projection_case(draw: st.DrawFn, kinds: list[str]) -> tuple[list[Row], list[int]]:
    """Rows picked from a small drawn pool (cheap to generate and to shrink), timestamps."""
    mode = draw(st.sampled_from(TS_MODES))
    nulls = draw(st.integers(0, 2)) == 0
    pool = draw(st.lists(rows_of(kinds, nulls), min_size=1, max_size=12))
    rnd = draw(st.randoms(use_true_random=True))
    # runs need 64 events or more (two runs of 32 on average)
    n = rnd.randint(64, 200) if mode == "few_runs" else rnd.randint(1, 100)
    rows = [rnd.choice(pool) for _ in range(n)]
    return rows, timestamps(rnd, n, mode)


def _flat(chunks: list[list[Record]]) -> list[Record]:
    return [r for c in chunks for r in c]


@pytest.mark.parametrize(("plan", "kinds"), PROJECTIONS, ids=range(len(PROJECTIONS)))
@examples(20)
@given(data=st.data())
def test_one_chunk_gives_what_the_events_one_by_one_give(
    plan: str, kinds: list[str], data: st.DataObject
) -> None:
    rows, ts = data.draw(projection_case(kinds))
    chunked = _flat(_run(plan, [(rows, ts)]))
    singly = _flat(_run(plan, [([r], [t]) for r, t in zip(rows, ts, strict=True)]))
    assert chunked == singly


# ---- 2. lengthBatch by slices, bulk aggregation ---------------------------------------------

SV = "define stream S (v long, w double); "
BATCHES = [
    SV + "from S#window.lengthBatch({n}) select count() as c, sum(v) as s, avg(w) as a insert into O;",
    SV
    + "from S#window.lengthBatch({n}) select count() as c, sum(v) as s, avg(w) as a insert all events into O;",
    SV + "from S#window.lengthBatch({n}) select count() as c, sum(w) as s, avg(v) as a insert into O;",
    SV + "from S#window.lengthBatch({n}) select sum(w * 2.0) as s, avg(v / 2) as a, count() as c "
    "insert all events into O;",
]
LENGTHS = [1, 2, 3, 7, 40]


@st.composite
def batch_case(draw: st.DrawFn, max_size: int = 90) -> tuple[int, list[Row], list[int], list[int]]:
    n = draw(st.sampled_from(LENGTHS))
    nulls = draw(st.booleans())
    rnd, rows = picked(draw, rows_of(["long", "double"], nulls), max_size)
    return n, rows, ascending(rnd, len(rows)), sizes(rnd, len(rows))


@contextmanager
def no_bulk_branch() -> Iterator[None]:
    """Selectors compiled inside take the event-by-event path only."""
    with mock.patch.object(selector_plan, "_bulk_branch", lambda *_args: []):
        yield


def _batch_model(plan: str, n: int, rows: list[Row], ts: list[int]) -> list[list[Record]]:
    """What the first and third lengthBatch plans must emit: one row per full batch."""
    out: list[list[Record]] = []
    swap = "sum(w) as s" in plan
    for i in range(0, len(rows) - n + 1, n):
        vs = [r[1] if swap else r[0] for r in rows[i : i + n]]
        ws = [r[0] if swap else r[1] for r in rows[i : i + n]]
        vs = [x for x in vs if x is not None]
        ws = [x for x in ws if x is not None]
        s = functools.reduce(operator.add, vs, 0.0 if swap else 0) if vs else None
        a = functools.reduce(operator.add, ws, 0.0) / len(ws) if ws else None
        out.append([(ts[i + n - 1], 0, (repr(n), repr(s), repr(a)))])
    return out


@pytest.mark.parametrize("template", BATCHES, ids=range(len(BATCHES)))
@examples(25)
@given(case=batch_case())
def test_length_batch_is_the_same_for_any_chunking(template: str, case: Any) -> None:
    n, rows, ts, split = case
    plan = template.format(n=n)
    with no_bulk_branch():
        reference, expected = _compile(plan)
    _feed(reference, [([r], [t]) for r, t in zip(rows, ts, strict=True)])
    got = _run(plan, _batches(rows, ts, split))
    assert got == expected
    assert len(got) == len(rows) // n
    if "insert into" in template:
        assert got == _batch_model(template, n, rows, ts)


BULK = [
    SV + "from S select count() as c, sum(v) as s, avg(w) as a insert into O;",
    SV + "from S select sum(w) as s, count() as c, v insert all events into O;",
    SV + "from S[v > 0] select avg(w * 2.0) as a, sum(v) as s insert into O;",
    SV + "from S#window.batch() select count() as c, sum(w) as s, avg(v) as a insert all events into O;",
    SV + "from S#window.batch(3) select count() as c, sum(v) as s insert into O;",
]


@pytest.mark.parametrize("plan", BULK, ids=range(len(BULK)))
@examples(20)
@given(case=batch_case())
def test_bulk_aggregation_is_the_event_by_event_aggregation(plan: str, case: Any) -> None:
    _, rows, ts, split = case
    batches = _batches(rows, ts, split)
    with no_bulk_branch():
        reference, expected = _compile(plan)
    _feed(reference, batches)
    assert _run(plan, batches) == expected


@pytest.mark.parametrize("template", BATCHES[:2], ids=["current", "all"])
@examples(20)
@given(case=batch_case(max_size=50), data=st.data())
def test_length_batch_restored_mid_batch_continues_identically(template: str, case: Any, data: Any) -> None:
    n, rows, ts, split = case
    plan = template.format(n=n)
    batches = _batches(rows, ts, split)
    cut = data.draw(st.integers(0, len(batches)), label="cut")
    assert _run_restored(plan, batches, cut) == _run(plan, batches)


# ---- 3. a length window fused with its aggregating selector ---------------------------------

SK = "define stream S (k string, v long, w double); "
SLIDING = [
    SK + "from S#window.length({n}) select count() as c, sum(v) as s, avg(w) as a, min(w) as mn, "
    "max(v) as mx insert into O;",
    SK + "from S#window.length({n}) select k, count() as c, sum(v) as s, avg(w) as a, min(v) as mn, "
    "max(w) as mx group by k insert into O;",
    SK + "from S[v > 0]#window.length({n}) select k, v, sum(w) as s group by k insert current events into O;",
    SK
    + "from S#window.length({n}) select k, v, count() as c, sum(w * 2.0) as s group by k, v insert into O;",
    SK + "from S#window.length({n}) select sum(w) as s, avg(v) as a insert into O;",
]


def _unfused_process(self: SlidingAggregateStage, chunk: Chunk) -> None:
    self.window.process(chunk)


def unfused() -> Any:
    """Every SlidingAggregateStage takes the window, then the selector (while active)."""
    return mock.patch.object(SlidingAggregateStage, "process", _unfused_process)


@st.composite
def sliding_case(draw: st.DrawFn, max_size: int = 80, nan: bool = True) -> tuple[int, list[Batch]]:
    n = draw(st.sampled_from([1, 2, 5, 100]))
    nulls = draw(st.booleans())
    rnd, rows = picked(draw, rows_of(["string", "long", "double"], nulls, nan), max_size)
    # values small enough to repeat, so `group by k, v` has few groups
    rows = [(k, None if v is None else v % 4, w) for k, v, w in rows]
    return n, _batches(rows, ascending(rnd, len(rows)), sizes(rnd, len(rows)))


@pytest.mark.parametrize("template", SLIDING, ids=range(len(SLIDING)))
@examples(25)
@given(case=sliding_case())
def test_fused_length_window_gives_what_window_then_selector_give(template: str, case: Any) -> None:
    n, batches = case
    plan = template.format(n=n)
    with unfused():
        expected = _run(plan, batches)
    assert _run(plan, batches) == expected


@pytest.mark.parametrize("template", SLIDING[:2], ids=["plain", "grouped"])
@pytest.mark.parametrize("first", ["fused", "unfused"])
@examples(15)
@given(case=sliding_case(max_size=40, nan=False), data=st.data())  # NaN: test_a_nan_leaves_min_with_its_event
def test_fused_length_window_restores_exactly(template: str, first: str, case: Any, data: Any) -> None:
    n, batches = case
    plan = template.format(n=n)
    cut = data.draw(st.integers(0, len(batches)), label="cut")
    got = _run_restored(plan, batches, cut, unfused if first == "unfused" else nullcontext)
    assert got == _run(plan, batches)


@pytest.mark.parametrize("restore", [False, True])
def test_a_nan_leaves_min_with_its_event(restore: bool) -> None:
    plan = SK + "from S#window.length(1) select min(w * 2.0) as m, max(w) as mx insert into O;"
    feed: list[Batch] = [([("a", 0, float("nan"))], [1000]), ([("a", 0, 1.0)], [1001])]
    got = _run_restored(plan, feed, 1) if restore else _run(plan, feed)
    assert got[-1] == [(1001, 0, ("2.0", "1.0"))]


@pytest.mark.parametrize("template", SLIDING, ids=range(len(SLIDING)))
def test_length_window_plans_take_the_fused_loop(template: str) -> None:
    calls = []
    original = SelectorRuntime.process_length

    def spy(self: SelectorRuntime, window: Any, chunk: Chunk) -> Chunk | None:
        calls.append(len(chunk))
        return original(self, window, chunk)

    with mock.patch.object(SelectorRuntime, "process_length", spy):
        _run(template.format(n=2), [([("a", 1, 1.0), ("b", 2, 2.0), ("a", 3, 3.0)], [1000, 1001, 1001])])
    assert calls == [3]


# ---- 4. the lazy floor: timers ahead of an unsorted chunk -----------------------------------

WITHIN = "every e1=S[v>0] -> e2=S[v>e1.v] within 1 sec select e1.v as a, e2.v as b insert into O;"
PATTERNS = {
    "followed_by": "define stream S (v int); from " + WITHIN,
    "machine": "define stream S (v int); from every e1=S[v>0] -> e2=S[v>e1.v] -> e3=S[v>e2.v] within 1 sec "
    "select e1.v as a, e2.v as b, e3.v as c insert into O;",
    "keyed": "define stream S (v int); partition with (v of S) begin from every e1=S[v>0] -> "
    "e2=S[v>=e1.v] within 1 sec select e1.v as a, e2.v as b insert into O; end;",
}


def _eager_floor_of(self: Scheduler, ts: list[int]) -> None:
    self.floor = min(ts)


def eager_floor() -> Any:
    return mock.patch.object(Scheduler, "floor_of", _eager_floor_of)


def _max_floor_of(self: Scheduler, ts: list[int]) -> None:
    self.floor = max(ts)


# Partials open at 1000 and 1100; the chunk's clock (its last timestamp, 2100) passes the
# within timer (due 2001), which must expire relative to the chunk's earliest timestamp
# (1900): the events up to 1995 still complete the partial opened at 1000 (5 at 1900 for
# the two-step pattern, 5 then 9 for the three-step one, 3 at 1950 for the keyed one). The
# chunk is in time order: an event at 2100 coming first would itself expire the partial of
# 1000 on arrival, as in Siddhi.
FLOOR_FEED: list[Batch] = [
    ([(3,)], [1000]),
    ([(2,)], [1100]),
    ([(5,), (3,), (9,), (0,)], [1900, 1950, 1995, 2100]),
]


@pytest.mark.parametrize("pattern", PATTERNS, ids=list(PATTERNS))
def test_lazy_floor_is_the_eager_minimum(pattern: str) -> None:
    plan = PATTERNS[pattern]
    with eager_floor():
        expected = _run(plan, FLOOR_FEED)
    assert _run(plan, FLOOR_FEED) == expected
    # the scenario depends on the floor: expiring from the chunk's end changes the output
    with mock.patch.object(Scheduler, "floor_of", _max_floor_of):
        assert _run(plan, FLOOR_FEED) != expected


@pytest.mark.parametrize("pattern", PATTERNS, ids=list(PATTERNS))
@examples(20)
@given(data=st.data())
def test_lazy_floor_property(pattern: str, data: Any) -> None:
    rows = data.draw(st.lists(st.tuples(st.integers(-1, 9)), min_size=1, max_size=30))
    ts = data.draw(st.lists(st.integers(1000, 4000), min_size=len(rows), max_size=len(rows)))
    split = sizes(data.draw(st.randoms(use_true_random=True)), len(rows))
    batches = _batches(rows, ts, split)
    plan = PATTERNS[pattern]
    with eager_floor():
        expected = _run(plan, batches)
    assert _run(plan, batches) == expected


def test_unsorted_chunk_gives_what_the_events_one_by_one_give() -> None:
    """Events 1950, 1900, 2100 after a partial opened at 1000 (within 1 sec): as in Siddhi,
    the event at 1900 completes it, whether the three come in one chunk or one by one."""
    plan = PATTERNS["followed_by"]
    feed: list[Batch] = [([(1,)], [1000]), ([(0,), (5,), (0,)], [1950, 1900, 2100])]
    singly = [([r], [t]) for rows, ts in feed for r, t in zip(rows, ts, strict=True)]
    expected = [[(1900, 0, ("1", "5"))]]
    assert _run(plan, feed) == expected
    assert _run(plan, singly) == expected


# Siddhi expires a partial when an event arrives more than `within` after the partial's
# start (StreamPreStateProcessor.isExpired), whatever the other events of the chunk.
SIDDHI_WITHIN = {
    "followed_by": [[(1100, 0, ("1", "2"))]],  # then 5 at 2200 is 1100 ms after e1=2
    "machine": [],  # 5 at 2200 is 1200 ms after e1=1 and 1100 ms after e1=2
}


@pytest.mark.parametrize("pattern", list(SIDDHI_WITHIN))
def test_within_is_checked_for_every_event_of_a_chunk(pattern: str) -> None:
    plan = PATTERNS[pattern]
    feed: list[Batch] = [([(1,)], [1000]), ([(2,)], [1100]), ([(0,), (5,)], [1900, 2200])]
    singly = [([r], [t]) for rows, ts in feed for r, t in zip(rows, ts, strict=True)]
    assert _run(plan, singly) == SIDDHI_WITHIN[pattern]
    assert _run(plan, feed) == SIDDHI_WITHIN[pattern]
